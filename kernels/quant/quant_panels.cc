#include "kernels/quant/quant_panels.h"

#include <algorithm>
#include <cstddef>
#include <limits>

#include "kernels/quant/nbits_matmul.h"

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

bool PackNBitsPanels(const NBitsMatrix& w, QuantPanelsBuffer* out) {
  if ((w.bits != 4 && w.bits != 8) || w.g_idx != nullptr || w.k_blocks != (w.k + w.block_size - 1) / w.block_size)
    return false;
  QuantPanelsBuffer buf;
  if (!buf.Shape(w.bits, w.k, w.n, w.block_size)) return false;
  const QuantPanels& v = buf.view;
  const int64_t blob = w.blob_bytes(), bb = v.block_bytes();
  for (int64_t col = 0; col < w.n; ++col) {
    const int64_t panel = col / kQuantPanelCols, c = col % kQuantPanelCols;
    const uint8_t* src = w.data + col * w.k_blocks * blob;
    for (int64_t b = 0; b < w.k_blocks; ++b, src += blob) {
      const int64_t at = (panel * w.k_blocks + b) * kQuantPanelCols + c;
      uint8_t* dst = buf.codes.data() + (panel * w.k_blocks + b) * bb + c * 4;
      const int64_t len = std::min(w.block_size, w.k - b * w.block_size);
      int32_t sum = 0;
      for (int64_t e = 0; e < len; ++e) {
        int code;
        if (w.bits == 8) {
          code = src[e];
          dst[(e / 4) * kQuantPanelGroupBytes + e % 4] = uint8_t(code);
        } else {
          code = (src[e / 2] >> (4 * (e % 2))) & 15;
          const int64_t r = e % 8;
          dst[(e / 8) * kQuantPanelGroupBytes + r % 4] |= uint8_t(code << (r < 4 ? 0 : 4));
        }
        sum += code;
      }
      buf.scales[size_t(at)] = w.scales[col * w.k_blocks + b];
      buf.zeros[size_t(at)] = w.Zero(col, b);
      buf.code_sums[size_t(at)] = sum;
    }
  }
  *out = std::move(buf);
  // The moved vectors keep their storage; the view points at it again.
  out->view.codes = out->codes.data();
  out->view.scales = out->scales.data();
  out->view.zeros = out->zeros.data();
  out->view.code_sums = out->code_sums.data();
  return true;
}

bool QuantPanelsZeroUniform(const QuantPanels& w, float* zero) {
  const float first = w.zeros[0];
  for (int64_t p = 0; p < w.panels; ++p)
    for (int64_t b = 0; b < w.k_blocks; ++b)
      for (int64_t c = 0; c < kQuantPanelCols && p * kQuantPanelCols + c < w.n; ++c)
        if (w.zeros[(p * w.k_blocks + b) * kQuantPanelCols + c] != first) return false;
  *zero = first;
  return true;
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
