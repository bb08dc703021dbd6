// Smoke cases of ops/contrib/ (com.microsoft) and of the default-domain rows
// onnxruntime registers beside them (SimplifiedLayerNormalization).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> ContribSmoke() {
  return {
      {kOnnxDomain, "LayerNormalization", Versions{1, 16}, Case({{{{2, 3}}, {{3}}, {{3}}}, 3})},
      {kOnnxDomain, "SimplifiedLayerNormalization", Versions{1}, Case({{{{2, 3}}, {{3}}}, 2})},
      {kMsDomain, "SkipLayerNormalization", Versions{1}, Case({{{{2, 3}}, {{2, 3}}, {{3}}, {{3}}, {{3}}}, 4})},
      {kMsDomain, "SkipSimplifiedLayerNormalization", Versions{1}, Case({{{{1, 2, 3}}, {{2, 3}}, {{3}}, {{3}}}, 4})},
      {kMsDomain, "Gelu", Versions{1}, Case({{{{2, 3}}}})},
      {kMsDomain, "BiasGelu", Versions{1}, Case({{{{2, 3}}, {{3}}}})},
      {kMsDomain, "FastGelu", Versions{1}, Case({{{{2, 3}}, {{3}}}})},
      {kMsDomain, "QuickGelu", Versions{1}, Case({{{{2, 3}}}})},
  };
}

}  // namespace onnx_mini
