// An 8-bit integer B (k x n, int8 or uint8, the weight of MatMulInteger after
// DynamicQuantizeLinear, DynamicQuantizeMatMul, MatMulIntegerToFloat) packed
// into 8-bit QuantPanels (kernels/quant/quant_panels.h) for the integer-A
// product (kernels/quant/panel_gemm.h, QuantPanelsMatMulIntA): codes
// unsigned (int8 + 128, its zero points shifted too), one block of K rounded
// up to a multiple of 8 when K <= 65536 (int32 sums stay exact), else blocks
// of 4096; every block of a column holds the column's scale and zero point.
#pragma once

#include <cstdint>

#include "kernels/quant/quant_panels.h"

namespace onnx_mini {

struct Int8PanelsSource {
  const void* b = nullptr;  // k x n, row-major
  bool b_unsigned = false;
  int64_t k = 0, n = 0;
  const void* zero = nullptr;  // B's type, 1 or n values; null: 0
  bool zero_per_column = false;
  const float* scale = nullptr;  // 1 or n values
  bool scale_per_column = false;
};

// The block PackInt8Panels uses for k.
int64_t Int8PanelsBlock(int64_t k);
// Packs into `out`; false when the sizes break the layout's rules.
bool PackInt8Panels(const Int8PanelsSource& src, QuantPanelsBuffer* out);

}  // namespace onnx_mini
