// Decode products over quantized panels (kernels/quant/quant_panels.h): a
// few rows of A (a decode step) times the packed weight, the panels read
// once per pass of up to kPanelGemvRows rows, in memory order, split over
// threads, with prefetch ahead.
//   float: codes dequantized in registers (AVX-512: each k's nibble of 16
//          columns picked by a shift and a 16-entry permute), FMA with
//          broadcast a[k] into per-block accumulators; per block the scale
//          and the zero point (sum a over the block) applied.
//   int8:  A quantized per (row, block) to int8 by NBitsRoundRowsToInt8's
//          rule, codes times a broadcast dword of A through VPDPBUSD (AVX2:
//          VPMADDUBSW or VPMADDWD, exact), per
//          block y += scale * sa * (dot - zero * sum q) in float.
//   integer A (q8: DynamicQuantizeMatMul, MatMulIntegerToFloat): uint8 or
//          int8 A with one zero point, the int8 loops' dots summed over the
//          blocks in int32 and corrected exactly (code sums, zero points),
//          then y = float(sum) * (a_scale * scale) + bias: the integer
//          reference's value (QuantPanelsMatMulIntAReference).
#pragma once

#include <cstdint>

#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/quant_panels.h"
#include "runtime/cpu.h"

namespace onnx_mini {

// Rows of A one pass over the panels takes.
constexpr int64_t kPanelGemvRows = 4;

// The rows up to which a product's decode passes beat panel_gemm.h's
// register tiles on the active build (more rows take the tiles): float A
// (PanelGemvFloat), int8 A (PanelGemvInt8), integer A (PanelGemvIntA).
enum class PanelGemvA { kFloat, kInt8, kInteger };
int64_t PanelGemvMaxRows(PanelGemvA a);

// Floats of workspace either product needs for `m` rows; -1 on overflow.
int64_t PanelGemvWorkspace(int64_t m, const QuantPanels& w);

// C (m x n) = A (m x k, row-major) x dequantized panels (+ bias, n floats or
// null), in passes of kPanelGemvRows rows. `uniform_zero`: every block's zero
// point (the zeros array is then not read), or null. AVX-512, AVX2 and
// baseline builds (kernels/cpu_dispatch.h).
void PanelGemvFloat(const float* a, int64_t m, const QuantPanels& w, const float* uniform_zero, const float* bias,
                    float* c, float* workspace, int threads);

// The target the int8 product runs on under the active features
// (kAvx512Vnni: zmm, kAvxVnni: ymm, kAvx2: ymm without VNNI, 4-bit codes by
// VPMADDUBSW summed in int16 per 32 k, 8-bit by VPMADDWD), kBaseline where
// there is none.
CpuTarget PanelGemvInt8Target();
// The int8 product (only where PanelGemvInt8Target() is not kBaseline):
// equal to rounding A (NBitsRoundRowsToInt8) then the float product, up to
// float rounding.
void PanelGemvInt8(const float* a, int64_t m, const QuantPanels& w, const float* uniform_zero, const float* bias,
                   float* c, float* workspace, int threads);
// The same with plain loops (integer dot products per block, double
// accumulation): the reference in tests.
void PanelGemvInt8Reference(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c);

// Integer A (QuantPanelsIntA, panel_gemm.h) against panels holding an
// integer B (integral zero points, one scale a column: PackInt8Panels), in
// passes of kPanelGemvRows rows. Builds: AVX-512 VNNI, AVX-VNNI, AVX2
// (VPMADDWD) and plain loops; PanelGemvIntATarget names the active one.
// `uniform_zero` as above. Workspace in bytes.
int64_t PanelGemvIntAWorkspace(int64_t m, const QuantPanels& w);
CpuTarget PanelGemvIntATarget();
void PanelGemvIntA(const QuantPanelsIntA& a, const QuantPanels& w, const float* uniform_zero, const float* bias,
                   float* c, void* workspace, int threads);

}  // namespace onnx_mini
