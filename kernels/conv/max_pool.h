// A float32 max pool over NCHW planes, 1-D to 3-D. oneDNN runs plain NCHW
// pooling on simple_nchw (one output at a time): on an AVX2-only Zen 3 the
// wake-word embedding's 2x2 pools took 1.2 ms of its ~4 ms, ~15 ns an output.
// This takes each kernel tap over a whole output row (a vector loop for
// strides 1 and 2).
#pragma once

#include <array>
#include <cstdint>

namespace onnx_mini {

struct MaxPoolProblem {
  int64_t planes = 0;  // images x channels
  // Spatial dims, three; a 1-D or 2-D pool has leading dims of size 1
  // (kernel 1, stride 1, no pads). Each out >= 1.
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pb{0, 0, 0};
};

// y = the max over each window's taps inside the input, as ONNX's MaxPool:
// the taps in order (dim 0 first), the first taken and each later one where
// it is greater (a NaN first tap stays); a window wholly over the pads gives
// the lowest float.
void MaxPoolFloat(const MaxPoolProblem& p, const float* x, float* y, int threads);

// The same, one output at a time: the tests' reference.
void MaxPoolFloatReference(const MaxPoolProblem& p, const float* x, float* y);

}  // namespace onnx_mini
