#include "kernels/quant/panel_digits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/quant/nbits_matmul.h"

namespace onnx_mini {
namespace {

[[gnu::always_inline]] inline void PrepareDigitsRow(const PanelDigitsRow& g, const float* row, int8_t* dst,
                                                    float* scale, float* zq) {
  constexpr double kTop = 127.0 * 65536;
  std::memset(dst, 0, size_t(kPanelDigits * g.kp));
  for (int64_t b = 0; b < g.kb; ++b) {
    const int64_t first = b * g.block, len = std::min(g.block, g.k - first);
    const float* x = row + first;
    const float amax = NBitsMaxAbs(x, len);
    const double inv = amax > 0 ? kTop / double(amax) : 0.0;
    int64_t sum = 0;
    int32_t bad = 0;
    int8_t* d0 = dst + first;
    int8_t* d1 = d0 + g.kp;
    int8_t* d2 = d1 + g.kp;
    for (int64_t e = 0; e < len; ++e) {
      // A NaN (or an infinity, times inv = 0) is kept out of the conversion
      // (undefined: x86 gives INT_MIN, finite digits) and makes the block's
      // scale NaN, so the row's products are NaN as the float product's are.
      const double t = double(x[e]) * inv;
      const bool ok = std::fabs(t) < kTop + 1;
      bad |= int32_t(!ok);
      // Nearest-even by the 1.5 * 2^52 addend (std::nearbyint is a libm call
      // on the baseline target and keeps the loop scalar).
      const int32_t v = int32_t(((ok ? t : 0.0) + 0x1.8p52) - 0x1.8p52);
      sum += v;
      const int32_t low = ((v + 128) & 255) - 128, rest = (v - low) >> 8;  // exact: v - low is a multiple of 256
      const int32_t mid = ((rest + 128) & 255) - 128;
      d2[e] = int8_t(low);
      d1[e] = int8_t(mid);
      d0[e] = int8_t((rest - mid) >> 8);
    }
    scale[b] = bad ? std::numeric_limits<float>::quiet_NaN() : float(double(amax) / kTop);
    zq[b] = float(double(scale[b]) * double(sum) * g.zero);
  }
}

}  // namespace

void PanelDigitsBaseline(const PanelDigitsRow& g, const float* row, int8_t* dst, float* scale, float* zq) {
  PrepareDigitsRow(g, row, dst, scale, zq);
}
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void PanelDigitsAvx2(const PanelDigitsRow& g, const float* row, int8_t* dst, float* scale,
                                                 float* zq) {
  PrepareDigitsRow(g, row, dst, scale, zq);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void PanelDigitsAvx512(const PanelDigitsRow& g,
                                                                                    const float* row, int8_t* dst,
                                                                                    float* scale, float* zq) {
  PrepareDigitsRow(g, row, dst, scale, zq);
}
#endif

}  // namespace onnx_mini
