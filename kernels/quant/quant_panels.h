// Quantized weights packed once at session creation for the products that
// read them (MatMulNBits, blocked DequantizeLinear + MatMul, MatMulInteger
// after DynamicQuantizeLinear): one layout for the decode kernels (1-4 rows,
// a pass over the weights in memory order) and the prefill GEMM (many rows).
//
// B is k x n (an output feature per column). Columns go in panels of
// kQuantPanelCols (the int32 lanes of a 512-bit register; the last panel
// padded with columns whose codes, scales and zeros are 0). K goes in blocks
// of `block` values sharing one scale and zero point per column (the last
// block padded with code 0; a reader pads A's row with zeros to match).
// Panels follow one another, each holding all its blocks in order, so a
// decode step reads the codes front to back and threads split the panels.
//
// Within a (panel, block) the codes form groups of 64 bytes: byte c * 4 + j
// of a group belongs to column c of the panel, so one VPDPBUSD multiplies 4
// consecutive k of 16 columns by one broadcast dword of A:
//   bits 8: group g holds k = 4g + j (j = 0..3) of the block, one code a byte;
//   bits 4: group g holds k = 8g + j in the low nibble and k = 8g + 4 + j in
//           the high nibble (an AND and a shift give two 16 x 4 groups).
// Codes are unsigned (a signed format is shifted by 2^(bits-1), codes and
// zero points alike). Beside the codes, per (panel, block), 16 values each:
// the float scale, the float zero point (in code units), and the int32 sum of
// the block's codes (for an A with a zero point of its own).
//
//   y[m, col] = sum_blocks scale[col, b] * sum_{k in b} a[m, k] * (code[col, k] - zero[col, b])
//
// Integer products (VNNI) take A as int8 per (row, block): a = sa * (qa - za).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/panel_memory.h"

namespace onnx_mini {

struct NBitsMatrix;  // kernels/quant/nbits_matmul.h

constexpr int64_t kQuantPanelCols = 16;
constexpr int64_t kQuantPanelGroupBytes = 64;

struct QuantPanels {
  int bits = 4;           // 4 or 8
  int64_t k = 0, n = 0;
  int64_t block = 32;     // a multiple of 8, at most 65536 (int32 sums stay exact)
  int64_t k_blocks = 0;   // ceil(k / block)
  int64_t panels = 0;     // ceil(n / kQuantPanelCols)
  const uint8_t* codes = nullptr;      // panels x k_blocks x block_bytes()
  const float* scales = nullptr;       // panels x k_blocks x kQuantPanelCols
  const float* zeros = nullptr;        // panels x k_blocks x kQuantPanelCols
  const int32_t* code_sums = nullptr;  // panels x k_blocks x kQuantPanelCols

  // Code bytes of one (panel, block): block * 16 columns * bits / 8.
  int64_t block_bytes() const { return block * kQuantPanelCols * bits / 8; }
  int64_t padded_k() const { return k_blocks * block; }
  // Code of column col (< n) at k (< padded_k()), unpacked.
  int Code(int64_t col, int64_t kk) const;
};

// Owns a QuantPanels' arrays. Shape() sizes them (zero-filled, so padding is
// 0) and returns false when a size overflows or the arguments break the rules
// above; packers then fill codes, scales, zeros and code_sums.
struct QuantPanelsBuffer {
  // On huge pages where large (kernels/panel_memory.h).
  std::vector<uint8_t, PanelAllocator<uint8_t>> codes;
  std::vector<float, PanelAllocator<float>> scales, zeros;
  std::vector<int32_t, PanelAllocator<int32_t>> code_sums;
  QuantPanels view;

  bool Shape(int bits, int64_t k, int64_t n, int64_t block);
  // Sets one code (col < n, kk < padded_k()); code_sums are the packer's to fill.
  void SetCode(int64_t col, int64_t kk, int code);
  int64_t bytes() const;
};

// MatMulNBits' packed form (bits 4 or 8, no g_idx; zero points packed, float
// or absent) repacked into panels: codes moved, scales copied, each block's
// zero point as a float (zero_default where absent), code sums filled. False
// (out untouched) when the weight is not such a form or a size overflows.
bool PackNBitsPanels(const NBitsMatrix& w, QuantPanelsBuffer* out);

// Whether every real column's every block has the same zero point (then
// kernels may skip reading the zeros): true with it in *zero.
bool QuantPanelsZeroUniform(const QuantPanels& w, float* zero);

// The product in double with plain loops (the reference in tests): C (m x n)
// = A (m x k, row-major, float) x dequantized B (+ bias, n floats or null).
void QuantPanelsMatMulReference(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c);

}  // namespace onnx_mini
