// Float A for integer products over quantized panels at float32-level
// accuracy: per (row, block), Q = round(a / s) with s = max |a| / (127 *
// 2^16), a 24-bit integer written as kPanelDigits balanced base-256 digits,
// Q = (d0 * 256 + d1) * 256 + d2 (d0 within [-127, 127]), each digit's
// products with the codes exact in int32 (VPDPBUSD), combined per block in
// float: A within 2^-24 of its block's max |a| (float32's own rounding of a).
// The decode kernels (panel_gemv) and the prefill tiles (panel_gemm) share it.
#pragma once

#include <cstdint>

namespace onnx_mini {

constexpr int kPanelDigits = 3;

struct PanelDigitsRow {
  int64_t k, block, kb, kp;  // kb = ceil(k / block), kp = kb * block
  double zero;               // zq's factor (a uniform zero point, else 1)
};

// One row of A (k floats): dst gets kPanelDigits arrays of kp int8 (digit 0
// first, zero-padded), scale[b] = s and zq[b] = s * sum Q * zero per block.
// Builds per target (the loops vectorize); the same values on every one.
using PanelDigitsFn = void (*)(const PanelDigitsRow& g, const float* row, int8_t* dst, float* scale, float* zq);
void PanelDigitsBaseline(const PanelDigitsRow& g, const float* row, int8_t* dst, float* scale, float* zq);
#if defined(__x86_64__)
void PanelDigitsAvx2(const PanelDigitsRow& g, const float* row, int8_t* dst, float* scale, float* zq);
void PanelDigitsAvx512(const PanelDigitsRow& g, const float* row, int8_t* dst, float* scale, float* zq);
#endif

}  // namespace onnx_mini
