// float32 max and average pools over NCHW planes, 1-D to 3-D. oneDNN runs
// plain NCHW pooling on simple_nchw (one output at a time): on an AVX2-only
// Zen 3 the wake-word embedding's 2x2 max pools took 1.2 ms of its ~4 ms
// (~15 ns an output), the OCR recognizer's 3x2 average pool 0.65 ms (~33 ns).
// These take each kernel tap over a whole output row (a vector loop for
// strides 1 and 2).
#pragma once

#include <array>
#include <cstdint>

namespace onnx_mini {

struct PoolProblem {
  int64_t planes = 0;  // images x channels
  // Spatial dims, three; a 1-D or 2-D pool has leading dims of size 1
  // (kernel 1, stride 1, no pads). Each out >= 1. pe: the end pads (the
  // average's count of padded taps).
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pb{0, 0, 0}, pe{0, 0, 0};
};

// y = the max over each window's taps inside the input, as ONNX's MaxPool:
// the taps in order (dim 0 first), the first taken and each later one where
// it is greater (a NaN first tap stays); a window wholly over the pads gives
// the lowest float.
void MaxPoolFloat(const PoolProblem& p, const float* x, float* y, int threads);
void MaxPoolFloatReference(const PoolProblem& p, const float* x, float* y);

// y = the float sum of each window's taps inside the input, in tap order,
// over their count (`include_pad`: the taps inside the input and its pads).
void AveragePoolFloat(const PoolProblem& p, bool include_pad, const float* x, float* y, int threads);
void AveragePoolFloatReference(const PoolProblem& p, bool include_pad, const float* x, float* y);

}  // namespace onnx_mini
