// Smoke cases of ops/signal/.
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> SignalSmoke() {
  std::vector<Smoke> cases = {
      {kOnnxDomain, "DFT", Versions{17}, Case({{{{1, 3, 1}}}})},
      {kOnnxDomain, "STFT", Versions{17}, Case({{{{1, 4, 1}}, {{}, {2}}, {{2}}, {{}, {2}}}})},
      {kOnnxDomain, "MelWeightMatrix", Versions{17},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{}, {2}}, {{}, {8}}, {{}, {16}}, {{}, {0}}, {{}, {8}}}, 1,
                          [out = a.out](onnx::NodeProto& n) { SetAttr(n, "output_datatype", int64_t(out)); }};
       }},
  };
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    cases.push_back({kOnnxDomain, op, Versions{17}, [](const SmokeArgs& a) {
                       return SmokeCase{{{{}, {4}}}, 1, [out = a.out](onnx::NodeProto& n) {
                                          SetAttr(n, "output_datatype", int64_t(out));
                                        }};
                     }});
  return cases;
}

}  // namespace onnx_mini
