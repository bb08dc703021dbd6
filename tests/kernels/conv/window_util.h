// Shared by the conv and pool kernel tests.
#pragma once

#include <cstdint>

namespace onnx_mini {

// Output length of a window of k taps (dilation d, stride s) over `in`
// values padded by pb before and pe after (floor, as Conv and MaxPool; the
// tests' windows fit their inputs, where C++'s division is that floor).
inline int64_t WindowOutDim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - (k - 1) * d - 1) / s + 1;
}

}  // namespace onnx_mini
