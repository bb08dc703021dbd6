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
  };
}

}  // namespace onnx_mini
