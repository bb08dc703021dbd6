// The bundled Llama-style decoder of testdata/decoder/: random but fixed
// weights in one external-data file shared by four graphs (dynamic past/present
// cache, static cache, sliding-window prefill and decode), and config.txt.
#pragma once

#include <filesystem>

#include "absl/status/status.h"

namespace onnx_mini {

// Writes weights.bin, dynamic.onnx, static.onnx, sliding_prefill.onnx,
// sliding_decode.onnx and config.txt into `dir` (created if needed).
absl::Status WriteDecoderModels(const std::filesystem::path& dir);

}  // namespace onnx_mini
