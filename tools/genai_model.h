// A decoder folder in the form onnxruntime-genai's model builder writes for
// CPU int4 (Llama-style): model.onnx + model.onnx.data + genai_config.json.
// The graph: input_ids, attention_mask and past_key_values.N.key/value in;
// logits and present.N.key/value out; seqlens_k and total_sequence_length
// from the mask (ReduceSum, Sub, Cast; Shape, Gather, Cast); Gather
// embedding; SimplifiedLayerNormalization, then SkipSimplifiedLayerNormalization
// between blocks; packed QKV MatMulNBits into GroupQueryAttention with
// do_rotary and cos/sin caches; SiLU MLP; MatMulNBits LM head.
// Weights are random (fixed seed), quantized by our own 4-bit quantizer.
#pragma once

#include <cstdint>
#include <filesystem>

#include "absl/status/status.h"

namespace onnx_mini {

struct GenaiModelOptions {
  int64_t vocab = 512;
  int64_t hidden = 256;
  int64_t layers = 2;
  int64_t q_heads = 4;
  int64_t kv_heads = 2;
  int64_t intermediate = 512;
  int64_t context_length = 512;  // rows of the rotary caches; search.max_length
  int64_t block_size = 32;
  int64_t accuracy_level = 4;  // what the builder writes for CPU int4
  // false: the fp32 form, MatMul over the 4-bit weights dequantized (the same
  // function, so both forms should pick the same tokens).
  bool int4 = true;
  bool packed_qkv = true;  // false: separate q/k/v projections into GQA's query, key, value
  bool share_buffer = true;  // search.past_present_share_buffer
  // eos: a token the bundled prompts generate mid-way (a row stops there).
  int64_t bos = 1, eos = 232, pad = 0;
  uint32_t seed = 20251126;
};

// Writes model.onnx, model.onnx.data and genai_config.json into `dir`.
absl::Status WriteGenaiModel(const std::filesystem::path& dir, const GenaiModelOptions& options = {});

}  // namespace onnx_mini
