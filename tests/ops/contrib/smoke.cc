// Smoke cases of ops/contrib/ (com.microsoft) and of the default-domain rows
// onnxruntime registers beside them (SimplifiedLayerNormalization).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> ContribSmoke() {
  return {
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
