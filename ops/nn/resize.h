// Resize and Upsample (ops/nn/resize.cc).
#pragma once

namespace onnx_mini {

// Tests only: true makes every Resize/Upsample node run the plain reference
// kernel (each output element from the full N-D product of its taps, in
// double) instead of the fast path (nearest: one gather; linear and cubic:
// one separable pass per resized axis). Process-wide; default false.
void SetResizeReferenceKernel(bool on);

}  // namespace onnx_mini
