// Smoke cases of ops/quant/.
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> QuantSmoke() {
  return {
      {kOnnxDomain, "QuantizeLinear", Versions{10}, Case({{{{2, 3}}, {{}}, {{}}}})},
      {kOnnxDomain, "DequantizeLinear", Versions{10},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2, 3}}, {{}}, {{}}}, 1,
                          [out = a.out](onnx::NodeProto& n) { SetAttr(n, "output_dtype", int64_t(out)); }};
       }},
      {kOnnxDomain, "DynamicQuantizeLinear", Versions{11}, Case({{{{2, 3}}}, 3})},
      {kOnnxDomain, "MatMulInteger", Versions{10}, Case({{{{2, 3}}, {{3, 2}}}})},
      {kOnnxDomain, "QLinearMatMul", Versions{10}, Case({{{{2, 3}}, {{}}, {{}}, {{3, 2}}, {{}}, {{}}, {{}}, {{}}}})},
  };
}

}  // namespace onnx_mini
