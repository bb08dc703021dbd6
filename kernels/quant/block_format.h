// Block-quantized weight formats as one table (as ggml's type traits): per
// format its storage, bits, signedness, the zero-point forms it admits and
// the block sizes it allows, and the row functions the ops dequantize and
// multiply through. Blocked DequantizeLinear (opset 21+) runs on it today;
// MatMulNBits and GatherBlockQuantized (com.microsoft) are to share it.
//
// A block is `n` consecutive elements of one row with one scale and one
// zero point, given to the row functions as floats (the caller converts a
// float16, bfloat16 or float8e8m0 scale, and loads the zero point with the
// format's `load`, or takes a float one as it is). Elements are numbered
// within the packed data: element e of a 4-bit format is the low nibble of
// byte e / 2 when e is even, the high one when odd (ONNX's order); 2-bit
// formats put element e at bits 2 (e % 4).
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace onnx_mini {

// How a format's zero point may be given (a bit set).
enum ZeroPointForm : uint8_t {
  kZeroAbsent = 1,    // none: the op's implicit zero (ONNX: 0; MatMulNBits: `nbits_zero`)
  kZeroPacked = 2,    // a tensor of the same packed storage as the data
  kZeroFloat = 4,     // unpacked, in the scale's type (MatMulNBits)
};

struct BlockFormat {
  const char* name;  // "int4", "uint8", ...
  DType storage;     // the data's element type (Int4x2, UInt4x2, int8, uint8, Int2x4, UInt2x4)
  int bits;
  bool is_signed;
  uint8_t zero_point_forms;  // ZeroPointForm bits
  float nbits_zero;          // MatMulNBits' zero point when absent: 2^(bits-1) unsigned, 0 signed
  // Block sizes: ONNX's block_size is any length >= 1 (the last block may be
  // short); MatMulNBits asks for a power of two >= min_block_pow2.
  int64_t min_block_pow2;

  // Element e of packed data, as an integer.
  int32_t (*load)(const void* data, int64_t e);
  // out[i] = (q[first + i] - zero) * scale for i < n, in float.
  void (*dequantize_row)(const void* q, int64_t first, int64_t n, float scale, float zero, float* out);
  // sum_i (q[first + i] - zero) * scale * x[i], in float.
  float (*dot_row)(const void* q, int64_t first, int64_t n, float scale, float zero, const float* x);
};

// The table, one row per format.
const BlockFormat* BlockFormats(int& count);
// The format stored as `storage`, or null when there is none.
const BlockFormat* FindBlockFormat(DType storage);
// Whether `block` is a block size MatMulNBits' rule allows for `f`.
inline bool IsPow2BlockSize(const BlockFormat& f, int64_t block) {
  return block >= f.min_block_pow2 && (block & (block - 1)) == 0;
}

}  // namespace onnx_mini
