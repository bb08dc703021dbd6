// The 8-bit integer product with a float result, as onnxruntime's
// MatMulIntegerToFloat and DynamicQuantizeMatMul (com.microsoft) compute it:
//   C[m, n] = float(sum_k (A[m, k] - za) (B[k, n] - zb[n])) * scale[n] + bias[n]
// A and B int8 or uint8 (each on its own), zb and scale one value or one per
// column, bias optional. The sum is exact (int32 for any K below 2^16).
//
// The fast path works on B packed once (Int8PackB): panels of kInt8Panel
// columns, each K rounded up to even rows stored as pairs of rows per column
// (the order the int16 multiply-add reads), uint8 B shifted into int8 by -128
// (its zero point shifted with it). A's rows are widened to int16 with their
// zero point subtracted (|a - za| <= 255), so each multiply-add of two pairs
// is exact in int32 and one correction per row, zb[n] * sum_k (A - za),
// applies B's zero points. Builds: AVX-512, AVX2, baseline (kernels/cpu_dispatch.h).
#pragma once

#include <cstdint>

namespace onnx_mini {

constexpr int64_t kInt8Panel = 16;

// Bytes of B (k x n) packed, or -1 when the size overflows.
int64_t Int8PackedBSize(int64_t k, int64_t n);
// Packs B (k x n, row-major; int8, or uint8 when b_unsigned) into `packed`
// (Int8PackedBSize(k, n) bytes).
void Int8PackB(const void* b, bool b_unsigned, int64_t k, int64_t n, int8_t* packed);

struct Int8MatMulArgs {
  const void* a = nullptr;  // m x k, row-major
  bool a_unsigned = true;
  int32_t a_zero = 0;
  bool b_unsigned = false;           // B's stored type (the packed form keeps its shift)
  const int32_t* b_zero = nullptr;   // n values (per column) or 1; null: 0
  bool b_zero_per_column = false;
  const float* scale = nullptr;      // n values (per column) or 1
  bool scale_per_column = false;
  const float* bias = nullptr;       // n values, or null
  int64_t m = 0, k = 0, n = 0;
  float* c = nullptr;                // m x n, row-major
};

// int16 elements of the fast path's workspace for m rows of k.
int64_t Int8MatMulWorkspaceSize(int64_t m, int64_t k);
// C from B packed by Int8PackB, on the active CPU target's build.
void Int8MatMulPacked(const Int8MatMulArgs& args, const int8_t* packed, int16_t* workspace, int threads);
// The plain reference on B as stored (k x n, row-major).
void Int8MatMulReference(const Int8MatMulArgs& args, const void* b);

// DynamicQuantizeLinear's parameters for x (onnxruntime's and ONNX's rule):
// the range [min(0, min x), max(0, max x)] over 0..255, scale 1 when it is
// empty, zero point round(clamp(-min / scale, 0, 255)) half to even.
void DynamicQuantizeParams(const float* x, int64_t n, float& scale, uint8_t& zero);
// y = saturate(round(x / scale) + zero) to uint8, half to even.
void QuantizeU8(const float* x, int64_t n, float scale, uint8_t zero, uint8_t* y);

}  // namespace onnx_mini
