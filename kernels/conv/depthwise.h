// A depthwise convolution (group == input channels == output channels, one
// filter per channel), 1-D or 2-D, float32, NCHW or channels last on either
// side. oneDNN runs these shapes on its gemm or ref implementations when it
// picks NCW (silero VAD's 258-channel, 5-tap conv: 0.06 ms on gemm:jit, 0.36
// on ref:any, for ~10k multiply-adds); this loop vectorizes over the output
// row (NCHW) or over the channels (channels last).
#pragma once

#include <array>
#include <cstdint>

namespace onnx_mini {

struct DepthwiseProblem {
  int64_t n = 0, c = 0;  // images, channels
  // Spatial dims as (rows, columns); a 1-D conv has one row, kernel 1.
  std::array<int64_t, 2> in{1, 1}, out{1, 1}, k{1, 1}, s{1, 1}, d{1, 1}, pb{0, 0};
  bool src_channels_last = false, dst_channels_last = false;
};

// The scratch DepthwiseConv needs, in floats: mixed layouts compute channels
// last, through a channels-last copy of X or of Y.
int64_t DepthwiseScratch(const DepthwiseProblem& p);

// y = b[c] + sum over the taps of x * w[c, tap], taps in order (rows, then
// columns), taps outside the input skipped. w is ONNX's (c, 1, k0, k1); b
// may be null; scratch holds DepthwiseScratch(p) floats. The caller checks
// the sizes (each spatial dim at least 1).
void DepthwiseConv(const DepthwiseProblem& p, const float* x, const float* w, const float* b, float* y,
                   float* scratch, int threads);

// The same, one output at a time over any layout: the tests' reference.
void DepthwiseConvReference(const DepthwiseProblem& p, const float* x, const float* w, const float* b, float* y);

}  // namespace onnx_mini
