// Elementwise float32 kernels of the activations and the broadcast arithmetic
// ops, vectorized: one source compiled per CPU target (baseline SSE2, AVX2,
// AVX-512) and the active features' build chosen at each call
// (kernels/cpu_dispatch.h). The *Reference functions are the plain loops the
// ops used before, the definition the tests compare against: every kind here
// equals its reference bit for bit (the file is compiled without fused
// multiply-adds, CMakeLists.txt).
#pragma once

#include <cstdint>

#include "runtime/cpu.h"

namespace onnx_mini {

enum class VecActivationKind { kRelu, kLeakyRelu, kClip, kHardSigmoid, kHardSwish };

// The attributes of the activations: LeakyRelu alpha; HardSigmoid alpha and
// beta; Clip lo and hi (max first, then min: lo > hi gives hi everywhere).
// NaN gives NaN except in Relu (0) and HardSigmoid (1), as the ops' plain
// loops compared.
struct VecActivationParams {
  float alpha = 0, beta = 0;
  float lo = 0, hi = 0;
};

// y[i] = f(x[i]); x and y may be the same array.
void VecActivation(VecActivationKind kind, const VecActivationParams& p, const float* x, float* y, int64_t n);
void VecActivationReference(VecActivationKind kind, const VecActivationParams& p, const float* x, float* y,
                            int64_t n);

// Max and Min propagate NaN (a NaN in either operand gives NaN), and keep a
// when a and b compare equal (max(-0, +0) is -0), as the variadic ops' plain
// loop did.
enum class VecBinaryKind { kAdd, kSub, kMul, kDiv, kMax, kMin };

// out[i] = a[i * a_step] op b[i * b_step] for i < n, each step 0 (a scalar
// operand) or 1. out may be a or b (same positions).
void VecBinary(VecBinaryKind kind, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
               int64_t n);
void VecBinaryReference(VecBinaryKind kind, const float* a, int64_t a_step, const float* b, int64_t b_step,
                        float* out, int64_t n);

// Whether any of x[0, n) is NaN or infinite (an all-ones exponent, found
// with integer compares). The convolutions check their inputs so at every
// run before oneDNN's clip post-ops, which take a NaN to the lower bound.
bool VecAnyNonFinite(const float* x, int64_t n);
bool VecAnyNonFiniteReference(const float* x, int64_t n);

// The build the active CPU features select (for tests).
CpuTarget VecElementwiseTarget();

}  // namespace onnx_mini
