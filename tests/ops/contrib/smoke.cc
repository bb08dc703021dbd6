// Smoke cases of ops/contrib/ (com.microsoft) and of the default-domain rows
// onnxruntime registers beside them (SimplifiedLayerNormalization).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> ContribSmoke() {
  return {
      {kMsDomain, "GatherBlockQuantized", Versions{1},
       Case({{{{2, 8}}, {{1}}, {{2, 1}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "block_size", int64_t{16}); }})},
      {kMsDomain, "MatMulIntegerToFloat", Versions{1}, Case({{{{2, 3}}, {{3, 2}}, {{}}, {{}}}})},
      {kMsDomain, "DynamicQuantizeMatMul", Versions{1}, Case({{{{2, 3}}, {{3, 2}}, {{}}}})},
      {kMsDomain, "FusedMatMul", Versions{1}, Case({{{{2, 3}}, {{3, 2}}}})},
      // Separate Q, K, V, an empty past, one token: seqlens_k 0, total_sequence_length 1.
      {kMsDomain, "GroupQueryAttention", Versions{1},
       Case({{{{1, 1, 8}}, {{1, 1, 4}}, {{1, 1, 4}}, {{1, 1, 0, 4}}, {{1, 1, 0, 4}}, {{1}, {0}}, {{}, {1}}},
             3, [](onnx::NodeProto& n) {
               SetAttr(n, "num_heads", int64_t(2));
               SetAttr(n, "kv_num_heads", int64_t(1));
             }})},
      {kOnnxDomain, "LayerNormalization", Versions{1, 16}, Case({{{{2, 3}}, {{3}}, {{3}}}, 3})},
      {kOnnxDomain, "SimplifiedLayerNormalization", Versions{1}, Case({{{{2, 3}}, {{3}}}, 2})},
      {kMsDomain, "SkipLayerNormalization", Versions{1}, Case({{{{2, 3}}, {{2, 3}}, {{3}}, {{3}}, {{3}}}, 4})},
      {kMsDomain, "SkipSimplifiedLayerNormalization", Versions{1}, Case({{{{1, 2, 3}}, {{2, 3}}, {{3}}, {{3}}}, 4})},
      {kMsDomain, "Gelu", Versions{1}, Case({{{{2, 3}}}})},
      {kMsDomain, "BiasGelu", Versions{1}, Case({{{{2, 3}}, {{3}}}})},
      {kMsDomain, "FastGelu", Versions{1}, Case({{{{2, 3}}, {{3}}}})},
      {kMsDomain, "QuickGelu", Versions{1}, Case({{{{2, 3}}}})},
      // K = 16, N = 2, 4 bits, one block of 16: B [2, 1, 8], scales [2].
      {kMsDomain, "MatMulNBits", Versions{1},
       Case({{{{1, 16}}, {{2, 1, 8}}, {{2}}},
             1,
             [](onnx::NodeProto& n) {
               SetAttr(n, "K", int64_t{16});
               SetAttr(n, "N", int64_t{2});
               SetAttr(n, "bits", int64_t{4});
               SetAttr(n, "block_size", int64_t{16});
             }})},
      // x [16, 2] in one block of 16 along K: scale [1, 2].
      {kInternalDomain, "DequantizeMatMul", Versions{1},
       Case({{{{1, 16}}, {{16, 2}}, {{1, 2}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "block_size", int64_t{16}); }})},
      // RotaryEmbedding: x (B, S, hidden), a [1] start, cos/sin (max_position, head / 2).
      {kMsDomain, "RotaryEmbedding", Versions{1}, Case({{{{1, 2, 4}}, {{1}, {0}}, {{4, 2}}, {{4, 2}}}})},
      // MultiHeadAttention: query, key, value (B, S|L, D) with 2 heads.
      {kMsDomain, "MultiHeadAttention", Versions{1}, Case({{{{1, 2, 4}}, {{1, 3, 4}}, {{1, 3, 4}}}, 1, [](onnx::NodeProto& n) {
               SetAttr(n, "num_heads", int64_t(2));
             }})},
      // EmbedLayerNormalization: ids and segment ids (1, 2) into tables of 3, 3 and 2 rows, hidden 4.
      {kMsDomain, "EmbedLayerNormalization", Versions{1},
       Case({{{{1, 2}, {0}}, {{1, 2}, {1}}, {{3, 4}}, {{3, 4}}, {{2, 4}}, {{4}}, {{4}}}, 2})},
      // Attention (BERT): input (B, S, 3), weights (3, 3 x 4), bias, 2 heads.
      {kMsDomain, "Attention", Versions{1}, Case({{{{1, 2, 3}}, {{3, 12}}, {{12}}}, 1, [](onnx::NodeProto& n) {
               SetAttr(n, "num_heads", int64_t(2));
             }})},
  };
}

}  // namespace onnx_mini
