// Smoke cases of ops/llm/ (attention, linear_attention, swiglu, tensor_scatter;
// FlexAttention makes its outputs: flex_attention_test.cc runs its types).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> LlmSmoke() {
  return {
      {kOnnxDomain, "Attention", Versions{23}, Case({{{{1, 2, 3, 4}}, {{1, 2, 3, 4}}, {{1, 2, 3, 4}}, {{3, 3}, {0}}}})},
      // The fused node of the rewrites: Q, K, V as [batch, heads, seq, head_size] and a mask.
      {kInternalDomain, "Attention", Versions{1}, Case({{{{1, 2, 3, 4}}, {{1, 2, 3, 4}}, {{1, 2, 3, 4}}, {{3, 3}, {0}}}})},
      {kOnnxDomain, "LinearAttention", Versions{27},
       Case({{{{1, 1, 4}}, {{1, 1, 4}}, {{1, 1, 4}}, {{1, 2, 2, 2}}}, 2, [](onnx::NodeProto& n) {
               SetAttr(n, "q_num_heads", int64_t(2));
               SetAttr(n, "kv_num_heads", int64_t(2));
               SetAttr(n, "update_rule", std::string("linear"));
             }})},
      {kOnnxDomain, "CausalConvWithState", Versions{27}, Case({{{{1, 2, 3}}, {{2, 1, 2}}, {{2}}, {{1, 2, 1}}}, 2})},
      {kOnnxDomain, "SwiGLU", Versions{28}, Case({{{{2, 3}}, {{2, 3}}}})},
      {kOnnxDomain, "TensorScatter", Versions{24}, Case({{{{1, 2, 4, 3}}, {{1, 2, 1, 3}}, {{1}, {0}}}})},
  };
}

}  // namespace onnx_mini
