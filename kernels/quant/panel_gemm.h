// Products of many rows of A with weights packed as QuantPanels
// (kernels/quant/quant_panels.h): the prefill of MatMulNBits and the q8
// products (DynamicQuantizeMatMul, MatMulIntegerToFloat) at any row count.
//
// The integer kernel: a register tile of R rows x P panels (16 columns each)
// of int32 accumulators, one VPDPBUSD per (row, panel, 4 k): a panel's 64-byte
// group of codes (unsigned) against a broadcast dword of A's int8 values. Two
// ways to finish:
//   float A (MatMulNBits accuracy_level 4): A quantized per (row, block) to
//     int8 (scale sa = max |a| / 127, nearest-even, NBitsRoundRowsToInt8's
//     rule); per block y += scale * sa * (dot - zero * sum qa), in float.
//   8-bit integer A with one zero point za (q8): A shifted into int8 (uint8 - 128),
//     the exact sum sum_k (a - za) (code - zero) from the dot, the rows' sums and
//     the blocks' code_sums in int32 (wrapping as onnxruntime's int32 does), then
//     y = float(sum) * (a_scale * scale[col]) + bias: the integer reference's
//     value exactly (the column's scale must be the same in every block).
// Builds: AVX-512 VNNI (zmm), AVX-VNNI (ymm, VEX), AVX2 without VNNI (4-bit
// codes by VPMADDUBSW summed in int16 per 32 k; 8-bit codes and A widened to
// int16, VPMADDWD: both exact) and plain loops (kernels/cpu_dispatch.h).
//
// The float path (accuracy_level 0-3): its own FMA tile (AVX-512, AVX2) over
// panels dequantized a chunk of K at a time, else 256 columns of panels dequantized
// at a time for the GEMM (oneDNN), as NBitsMatMul's many-rows path does
// (QuantPanelsFloatPath below).
#pragma once

#include <cstdint>

#include "kernels/quant/quant_panels.h"
#include "runtime/cpu.h"

namespace onnx_mini {

// The float path's forms: kGemm dequantizes 256 columns for the GEMM; kTile
// (QuantPanelsFloatTileTarget() not kBaseline) dequantizes a chunk of K into
// an L1 buffer for its own register tile (FMA): on AVX-512 128 k of 64
// columns, tiles of 6 rows x 64 columns; on AVX2 256 k of 16 columns, tiles
// of 6 rows x 16 columns, as the packed float GEMM's AVX2 tile
// (kernels/gemm/gemm.cc); kDigits (AVX-512 VNNI: QuantPanelsDigitsTarget())
// takes A as 24-bit integers in base-256 digits (kernels/quant/panel_digits.h:
// float32-level) through integer tiles, three VPDPBUSD a code group. kAuto:
// kTile where the host has it, else kGemm (bench-qgemm: kTile ~1.25x kGemm
// at 1 thread on AVX-512; on an AVX2-only Zen 3 86-88 GOP/s against 70-72,
// ~85% of the FMA peak, on a quiet core; kDigits level with kTile at best,
// bounded by a third of the VNNI peak, and its A rounding puts the accuracy
// family's acc-0 decoder case past its tolerance, so kAuto never takes it).
// A form the host lacks runs as kGemm.
enum class QuantPanelsFloatPath { kAuto, kGemm, kTile, kDigits };
// Bytes of workspace QuantPanelsMatMulMany needs for m rows and that path
// under the active CPU features (-1 when the count overflows).
int64_t QuantPanelsMatMulManyWorkspace(int64_t m, const QuantPanels& w, bool int8,
                                       QuantPanelsFloatPath path = QuantPanelsFloatPath::kAuto);

// C (m x n, row-major) = A (m x k, row-major float) x dequantized panels
// (+ bias, n floats or null). int8: A rounded to int8 per (row, block of
// w.block) and the integers multiplied (VNNI where the CPU has it); else the
// float path. Rows split over threads (panels too when the rows are few).
void QuantPanelsMatMulMany(const float* a, int64_t m, const QuantPanels& w, bool int8, const float* bias, float* c,
                           void* workspace, int threads, QuantPanelsFloatPath path = QuantPanelsFloatPath::kAuto);
// The targets the digits tiles and the float tile (kAvx512 or kAvx2) run on
// under the active features (kBaseline: none).
CpuTarget QuantPanelsDigitsTarget();
CpuTarget QuantPanelsFloatTileTarget();

// 8-bit A with one zero point against panels holding an integer B (codes and
// integral zero points, one scale a column; PackInt8Panels makes 8-bit ones,
// the SIMD tiles' case: 4-bit panels take the plain loops).
struct QuantPanelsIntA {
  const void* a = nullptr;  // m x k, row-major
  bool a_unsigned = true;
  int32_t a_zero = 0;
  float a_scale = 1;        // y = float(sum) * (a_scale * scale[col]) + bias
  int64_t m = 0;
};
// Up to PanelGemvMaxRows(kInteger) rows take the decode passes
// (PanelGemvIntA, panel_gemv.h: the panels streamed once a pass of 4 rows,
// prefetched, split over the threads); more take the register tiles.
// `uniform_zero`: every block's zero point when they are all the same (the
// zeros then unread), or null.
int64_t QuantPanelsMatMulIntAWorkspace(int64_t m, const QuantPanels& w);
void QuantPanelsMatMulIntA(const QuantPanelsIntA& a, const QuantPanels& w, const float* bias, float* c,
                           void* workspace, int threads, const float* uniform_zero = nullptr);

// The build the integer kernel runs under the active CPU features (kAvx512Vnni,
// kAvxVnni, kAvx2 or kBaseline).
CpuTarget QuantPanelsInt8Target();

// References (plain loops): the float-A integer product (A rounded per block,
// integer dots per block, double accumulation), and the integer-A product
// (int64 sums truncated to int32, then the same float steps as onnxruntime).
void QuantPanelsMatMulInt8Reference(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c);
void QuantPanelsMatMulIntAReference(const QuantPanelsIntA& a, const QuantPanels& w, const float* bias, float* c);

}  // namespace onnx_mini
