#include "kernels/quant/quant_panels.h"

#include <cstddef>
#include <limits>

namespace onnx_mini {

namespace {

// Byte offset and nibble shift of (col, kk) in the codes.
int64_t CodeOffset(const QuantPanels& w, int64_t col, int64_t kk, int* shift) {
  const int64_t panel = col / kQuantPanelCols, c = col % kQuantPanelCols;
  const int64_t b = kk / w.block, in_block = kk % w.block;
  const int64_t base = (panel * w.k_blocks + b) * w.block_bytes();
  if (w.bits == 8) {
    *shift = 0;
    return base + (in_block / 4) * kQuantPanelGroupBytes + c * 4 + in_block % 4;
  }
  const int64_t g = in_block / 8, r = in_block % 8;
  *shift = r < 4 ? 0 : 4;
  return base + g * kQuantPanelGroupBytes + c * 4 + r % 4;
}

}  // namespace

int QuantPanels::Code(int64_t col, int64_t kk) const {
  int shift;
  const uint8_t byte = codes[CodeOffset(*this, col, kk, &shift)];
  return bits == 8 ? byte : (byte >> shift) & 15;
}

bool QuantPanelsBuffer::Shape(int bits, int64_t k, int64_t n, int64_t block) {
  if ((bits != 4 && bits != 8) || k <= 0 || n <= 0 || block < 8 || block > 65536 || block % 8 != 0) return false;
  const int64_t k_blocks = (k + block - 1) / block, panels = (n + kQuantPanelCols - 1) / kQuantPanelCols;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 4;
  if (k_blocks > kMax / block || panels > kMax / (k_blocks * block) / kQuantPanelCols) return false;
  view = QuantPanels{};
  view.bits = bits;
  view.k = k;
  view.n = n;
  view.block = block;
  view.k_blocks = k_blocks;
  view.panels = panels;
  const int64_t per_block = panels * k_blocks;
  codes.assign(size_t(per_block * view.block_bytes()), 0);
  scales.assign(size_t(per_block * kQuantPanelCols), 0.f);
  zeros.assign(size_t(per_block * kQuantPanelCols), 0.f);
  code_sums.assign(size_t(per_block * kQuantPanelCols), 0);
  view.codes = codes.data();
  view.scales = scales.data();
  view.zeros = zeros.data();
  view.code_sums = code_sums.data();
  return true;
}

void QuantPanelsBuffer::SetCode(int64_t col, int64_t kk, int code) {
  int shift;
  uint8_t& byte = codes[size_t(CodeOffset(view, col, kk, &shift))];
  if (view.bits == 8) {
    byte = uint8_t(code);
  } else {
    byte = uint8_t((byte & ~(15 << shift)) | ((code & 15) << shift));
  }
}

int64_t QuantPanelsBuffer::bytes() const {
  return int64_t(codes.size() + 4 * (scales.size() + zeros.size() + code_sums.size()));
}

void QuantPanelsMatMulReference(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t col = 0; col < w.n; ++col) {
      const int64_t at = (col / kQuantPanelCols) * w.k_blocks * kQuantPanelCols + col % kQuantPanelCols;
      double sum = bias ? bias[col] : 0.0;
      for (int64_t b = 0; b < w.k_blocks; ++b) {
        const double scale = w.scales[at + b * kQuantPanelCols], zero = w.zeros[at + b * kQuantPanelCols];
        for (int64_t kk = b * w.block; kk < (b + 1) * w.block && kk < w.k; ++kk) {
          sum += double(a[i * w.k + kk]) * (w.Code(col, kk) - zero) * scale;
        }
      }
      c[i * w.n + col] = float(sum);
    }
  }
}

}  // namespace onnx_mini
