#include "kernels/quant/quant_panels_int8.h"

#include <algorithm>

namespace onnx_mini {

int64_t Int8PanelsBlock(int64_t k) { return k <= 65536 ? std::max<int64_t>(8, (k + 7) / 8 * 8) : 4096; }

bool PackInt8Panels(const Int8PanelsSource& s, QuantPanelsBuffer* out) {
  if (s.k <= 0 || s.n <= 0 || s.b == nullptr || s.scale == nullptr) return false;
  if (!out->Shape(8, s.k, s.n, Int8PanelsBlock(s.k))) return false;
  const QuantPanels& w = out->view;
  const int shift = s.b_unsigned ? 0 : 128;
  const auto value = [&](const void* p, int64_t i) {
    return s.b_unsigned ? int32_t(static_cast<const uint8_t*>(p)[i]) : int32_t(static_cast<const int8_t*>(p)[i]);
  };
  const int64_t kb = w.k_blocks, bb = w.block_bytes();
  for (int64_t p = 0; p < w.panels; ++p) {
    const int64_t col0 = p * kQuantPanelCols, cols = std::min(kQuantPanelCols, s.n - col0);
    for (int64_t b = 0; b < kb; ++b) {
      uint8_t* codes = out->codes.data() + (p * kb + b) * bb;
      const int64_t at = (p * kb + b) * kQuantPanelCols;
      int32_t sums[kQuantPanelCols] = {};
      // Group g of the block: byte c * 4 + j is column c at k = 4g + j.
      for (int64_t kk = b * w.block; kk < std::min(s.k, (b + 1) * w.block); ++kk) {
        uint8_t* group = codes + ((kk - b * w.block) / 4) * kQuantPanelGroupBytes + kk % 4;
        for (int64_t c = 0; c < cols; ++c) {
          const int32_t code = value(s.b, kk * s.n + col0 + c) + shift;
          group[c * 4] = uint8_t(code);
          sums[c] += code;
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t col = col0 + c;
        out->code_sums[size_t(at + c)] = sums[c];
        out->scales[size_t(at + c)] = s.scale[s.scale_per_column ? col : 0];
        out->zeros[size_t(at + c)] = float((s.zero ? value(s.zero, s.zero_per_column ? col : 0) : 0) + shift);
      }
    }
  }
  return true;
}

}  // namespace onnx_mini
