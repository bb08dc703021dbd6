// Smoke cases of ops/contrib/ (com.microsoft) and of the default-domain rows
// onnxruntime registers beside them (SimplifiedLayerNormalization).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> ContribSmoke() {
  return {
      // RotaryEmbedding: x (B, S, hidden), a [1] start, cos/sin (max_position, head / 2).
      {kMsDomain, "RotaryEmbedding", Versions{1}, Case({{{{1, 2, 4}}, {{1}, {0}}, {{4, 2}}, {{4, 2}}}})},
  };
}

}  // namespace onnx_mini
