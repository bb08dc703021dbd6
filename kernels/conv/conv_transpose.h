// ConvTranspose whose windows do not overlap (stride equal to the kernel, no
// dilation, pads or groups: the upsampling layers of detectors such as
// PaddleOCR's): each input pixel spreads into its own k0 x k1 x k2 block of
// the output, so the whole op is one product W^T (M*K x C) x X (C x HW) per
// image and a scatter of its rows into the blocks. oneDNN's deconvolution
// computes it tap by tap in 16-channel blocks (24 -> 1 channels at 240x320
// took ~9 ms).
#pragma once

#include <array>
#include <cstdint>

namespace onnx_mini {

struct PixelDeconvProblem {
  int64_t n = 0, c = 0, m = 0;            // images, input and output channels
  std::array<int64_t, 3> in{1, 1, 1};     // input spatial dims (leading 1s for 1-D and 2-D)
  std::array<int64_t, 3> k{1, 1, 1};      // kernel = stride
};

// y (n, m, in * k) = scatter(W^T x X) + b; w is ONNX's (c, m, k...); b may be
// null; `scratch` holds m * K * in elements (K = k0 k1 k2). Returns false
// (nothing written) when the product cannot run.
bool PixelDeconv(const PixelDeconvProblem& p, const float* x, const float* w, const float* b, float* y,
                 float* scratch, int threads);

// The same by direct summation, the reference of the tests.
void PixelDeconvReference(const PixelDeconvProblem& p, const float* x, const float* w, const float* b, float* y);

}  // namespace onnx_mini
