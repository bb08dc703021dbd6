// Rows of a block-quantized table gathered and dequantized (com.microsoft
// GatherBlockQuantized): the table stays packed, only the gathered slices
// are dequantized, through the block-format table (block_format.h).
//
// The data (logical elements, packed as its format stores them) is viewed
// twice: as [outer, axis_dim, inner] around the gather axis, each index
// picking an `inner` slice; and as [.., qdim, qinner] around the quantize
// axis, whose blocks of `block` elements along qdim share a scale and a
// zero point: element e = (x, y, z) uses scale x * ceil(qdim / block) * qinner
// + (y / block) * qinner + z.
#pragma once

#include <cstdint>

#include "kernels/quant/block_format.h"

namespace onnx_mini {

struct GatherBlocksProblem {
  const BlockFormat* format = nullptr;
  const void* data = nullptr;
  int64_t outer = 0, axis_dim = 0, inner = 0;
  const int64_t* indices = nullptr;  // `count` values in [0, axis_dim)
  int64_t count = 0;
  int64_t qdim = 0, qinner = 0, block = 0;
  const void* scales = nullptr;      // float, or float16 when scale_f16
  bool scale_f16 = false;
  // Zero points in the format's storage (null: `default_zero`). Scale s's
  // is element (s / zero_row) * zero_row_stride + s % zero_row: rows of
  // zero_row blocks padded to zero_row_stride elements (a whole byte each).
  const void* zeros = nullptr;
  int64_t zero_row = 1, zero_row_stride = 1;
  float default_zero = 0;
  void* out = nullptr;  // outer x count x inner, float or float16 (out_f16)
  bool out_f16 = false;
};

// Runs of a block's elements through the format's row function.
void GatherBlocks(const GatherBlocksProblem& p, int threads);
// The plain reference: element by element.
void GatherBlocksReference(const GatherBlocksProblem& p);

}  // namespace onnx_mini
