// The models of the C API tests, written by make-testdata.
#pragma once

#include <filesystem>

namespace onnx_mini {

// Writes scatter.onnx, scatter_read.onnx, custom.onnx and custom_int.onnx into `dir`.
void WriteCapiModels(const std::filesystem::path& dir);

}  // namespace onnx_mini
