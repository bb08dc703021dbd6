// Float math over arrays, vectorized: one source compiled for each CPU target
// (runtime/cpu.h: baseline SSE2, AVX2, AVX-512) and the active features'
// build chosen at each call (kernels/cpu_dispatch.h). The plain kernels (libm per element) stay the reference; these
// agree with them within a few ulp (tests/kernels/vec/vec_math_test.cc states the
// bounds): exp within 2 ulp for normal results, exactly 0/inf beyond the
// float range, NaN for NaN; sigmoid within 3 ulp; tanh and erf within 2 ulp.
#pragma once

#include <cstdint>

#include "runtime/cpu.h"

namespace onnx_mini {

// The build the active CPU features select (for tests and reports).
CpuTarget VecMathTarget();
// Whether that build is wider than the baseline's: the ops keep their plain
// loops (libm's, the reference) on the baseline.
inline bool VecMathVectorized() { return VecMathTarget() != CpuTarget::kBaseline; }

// y[i] = exp(x[i]). x and y may be the same array.
void VecExp(const float* x, float* y, int64_t n);
// y[i] = 1 / (1 + exp(-x[i])), computed without overflow for either sign.
void VecSigmoid(const float* x, float* y, int64_t n);
// y[i] = x[i] * sigmoid(x[i]) (SiLU / Swish with alpha 1).
void VecSilu(const float* x, float* y, int64_t n);
// y[i] = tanh(x[i]) within 2 ulp of libm's tanhf over the whole range
// (x itself for denormals, +-0 keeping the sign, +-1 for +-inf, NaN for NaN).
void VecTanh(const float* x, float* y, int64_t n);
// Gelu with approximate = "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void VecGeluTanh(const float* x, float* y, int64_t n);
// y[i] = erf(x[i]) within 2 ulp of libm's erff (+-1 for +-inf, the sign of
// +-0 kept, NaN for NaN).
void VecErf(const float* x, float* y, int64_t n);
// Gelu with approximate = "none": 0.5 x (1 + erf(x / sqrt(2))).
void VecGeluErf(const float* x, float* y, int64_t n);
// One contiguous row: y = exp(x - max(x)) / sum(exp(x - max(x))), NaN
// propagating as the plain kernel's (a NaN anywhere makes the row NaN).
void VecSoftmaxRow(const float* x, float* y, int64_t n);

// y[i] = float(pow(double(x[i]), e)) for the exponents e in {0.5, 1, 2, 3,
// -1, -0.5}, as the plain Pow kernel computes it (in double, then rounded
// to float), with pow's special cases (pow(-0, 0.5) = +0, pow(-inf, 0.5) =
// +inf, pow(-0, -0.5) = +inf, pow(-inf, -0.5) = +0). Results equal the plain
// kernel's wherever libm's pow is correctly rounded (exactly for 1, 2, 0.5
// and -1, whose double results are exact or correctly rounded and round to
// float once more without double-rounding error). Returns false, writing
// nothing, for any other e.
bool VecPowConst(const float* x, float* y, int64_t n, double e);

// The normalization ops' row moments: *sum = sum of x, *squares = sum of
// x^2, in double, with the plain kernel's eight partial sums in the same
// order (only FMA contraction on the AVX targets can change the last bit).
void VecRowMoments(const float* x, int64_t n, double* sum, double* squares);
// y[e] = float((x[e] - shift) * inv * scale[e] (+ bias[e])), in double as
// the plain kernel; bias may be null.
void VecNormalizeRow(const float* x, float* y, int64_t n, double shift, double inv, const float* scale,
                     const float* bias);

// Reductions of one contiguous row, as the plain ReduceSum/ReduceSumSquare/
// ReduceMax/ReduceMin kernels take them. Sums accumulate in double lanes (the
// plain kernel's precision; only the order of the additions differs), so they
// agree with the sequential double sum within n * 2^-53 relative to the sum of
// magnitudes. Max and min are exact: a NaN anywhere makes the result NaN; an
// empty row gives -inf (max) or +inf (min).
double VecSumRow(const float* x, int64_t n);
double VecSumSquaresRow(const float* x, int64_t n);
float VecMaxRow(const float* x, int64_t n);
float VecMinRow(const float* x, int64_t n);

}  // namespace onnx_mini
