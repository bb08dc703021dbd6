// Products with a block-quantized weight kept packed (MatMulNBits, and the
// blocked DequantizeLinear + MatMul spelling rewritten to it): the weight is
// never dequantized whole.
//
// The packed form is MatMulNBits' own: per column n of B (an output feature),
// its K codes in k_blocks blocks of block_size, each block `blob` bytes of
// unsigned codes packed as the block-format table says (kernels/quant/
// block_format.h: 4-bit element e is the low nibble of byte e / 2 when even),
// the last block padded. One float scale per (n, block) and a zero point
// given packed (codes of `bits` bits, each column's row padded to a byte),
// as floats, or not at all (a uniform `zero_default`). A signed format is
// made unsigned by adding 2^(bits-1) to codes and zero points alike.
//
//   y[m, n] = bias[n] + sum_k a[m, k] * (code[n, k] - zero[n, blk(k)]) * scale[n, blk(k)]
//
// with blk(k) = k / block_size, or g_idx[k] when given.
#pragma once

#include <cstdint>

#include "runtime/cpu.h"

namespace onnx_mini {

struct NBitsMatrix {
  int bits = 4;                // 2, 4 or 8
  int64_t k = 0, n = 0;
  int64_t block_size = 32;     // a power of two >= 16
  int64_t k_blocks = 0;        // ceil(k / block_size)
  const uint8_t* data = nullptr;         // [n, k_blocks, blob_bytes()]
  const float* scales = nullptr;         // [n, k_blocks]
  const uint8_t* zero_packed = nullptr;  // [n, zero_row_bytes()], or
  const float* zero_float = nullptr;     // [n, k_blocks], or neither:
  float zero_default = 8;                // the zero point of every block
  const int32_t* g_idx = nullptr;        // [k], each in [0, k_blocks); null: k / block_size

  int64_t blob_bytes() const { return block_size * bits / 8; }
  int64_t zero_row_bytes() const { return (k_blocks * bits + 7) / 8; }
  float Zero(int64_t col, int64_t block) const;
};

// Rows of A the product takes per pass over B, dequantizing in registers (a
// decode step), and the rows up to which it makes such passes; more rows
// dequantize panels of B to float for the GEMM (a prefill).
constexpr int64_t kNBitsDecodeRows = 4;
constexpr int64_t kNBitsDecodePassRows = 16;  // four passes: level with the panels' dequantization + GEMM there

// Floats of workspace NBitsMatMul needs for `m` rows (a caller charges its
// budget for them first); -1 when the count overflows.
int64_t NBitsMatMulWorkspace(int64_t m, const NBitsMatrix& w);

// C (m x n, row-major) = A (m x k, row-major) x dequantized B (+ bias, n
// floats or null). `workspace` holds NBitsMatMulWorkspace(m, w) floats.
// Few rows of 2-bit codes: each column's blocks decoded in registers and
// multiplied with all rows, columns split over the kernels' pool (AVX-512,
// AVX2 and baseline builds, kernels/cpu_dispatch.h). Otherwise (more rows, a
// g_idx that is not k / block_size, or 4 and 8 bits, which callers pack into
// quantized panels for panel_gemv.h and panel_gemm.h): columns dequantized
// to float and multiplied by the GEMM.
void NBitsMatMul(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c, float* workspace,
                 int threads);

// The same with plain loops, each weight dequantized alone and double
// accumulation: the reference in tests.
void NBitsMatMulReference(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c);

// Columns [j0, j1) of B dequantized: out[(j - j0) * k + kk], floats.
void NBitsDequantizeColumns(const NBitsMatrix& w, int64_t j0, int64_t j1, float* out);

// A's m rows of k rounded as onnxruntime's accuracy level 4 quantizes them to
// int8 (its CPU kernel then multiplies the integers): per block of `block`
// values of a row, scale = max |a| / 127 and a -> nearest-even(a / scale) *
// scale. The product then runs in float on the rounded values where no
// integer kernel runs (the native form: 2 bits, g_idx).
void NBitsRoundRowsToInt8(const float* a, int64_t m, int64_t k, int64_t block, float* out);

// max |x[i]| over len values (0 when len is 0).
float NBitsMaxAbs(const float* x, int64_t len);

// One block of A (len values) quantized by that rule: q[i] = nearest-even(x[i]
// / scale); returns the scale, *sum gets the sum of q.
float NBitsQuantizeBlockInt8(const float* x, int64_t len, int8_t* q, int32_t* sum);

// Accuracy level 4's value with the integers multiplied: each row's blocks
// of A quantized by that rule (scale sa, values q), then
//   y[m, n] = bias[n] + sum_b sa[b] * scale[n, b] * (sum q * code - zero[n, b] * sum q)
// (the value of NBitsRoundRowsToInt8 + NBitsMatMul up to float rounding).
// The fast product runs over quantized panels (PanelGemvInt8, panel_gemv.h).
// Plain loops (integer dot products per block, double accumulation), for any
// 4-bit weight without g_idx: the reference in tests.
void NBitsMatMulInt8Reference(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c);

// Whether g_idx is k / block_size everywhere (then it changes nothing).
bool NBitsGIdxIsTrivial(const int32_t* g_idx, int64_t k, int64_t block_size);

}  // namespace onnx_mini
