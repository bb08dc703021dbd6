#include "kernels/quant/int8_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "runtime/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace onnx_mini {
namespace {

constexpr int kRows = 4;  // rows of A per register tile

int64_t EvenK(int64_t k) { return k + (k & 1); }

// The tile's int32 sums for rows [0, rows) of A16 (kp int16 per row) and
// one panel (kp / 2 pairs of rows, kInt8Panel columns each), into acc.
using PanelFn = void (*)(const int16_t* a16, int64_t kp, int rows, const int8_t* panel, int32_t* acc);

void PanelBaseline(const int16_t* a16, int64_t kp, int rows, const int8_t* panel, int32_t* acc) {
  for (int r = 0; r < rows; ++r) {
    int32_t sum[kInt8Panel] = {};
    const int16_t* a = a16 + r * kp;
    for (int64_t q = 0; q < kp / 2; ++q) {
      const int8_t* p = panel + q * 2 * kInt8Panel;
      const int32_t a0 = a[2 * q], a1 = a[2 * q + 1];
      for (int c = 0; c < kInt8Panel; ++c) sum[c] += a0 * p[2 * c] + a1 * p[2 * c + 1];
    }
    std::memcpy(acc + r * kInt8Panel, sum, sizeof(sum));
  }
}

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void PanelAvx2(const int16_t* a16, int64_t kp, int rows, const int8_t* panel,
                                           int32_t* acc) {
  __m256i s[kRows][2];
  for (int r = 0; r < kRows; ++r) s[r][0] = s[r][1] = _mm256_setzero_si256();
  for (int64_t q = 0; q < kp / 2; ++q) {
    const int8_t* p = panel + q * 2 * kInt8Panel;
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      int32_t pair;
      std::memcpy(&pair, a16 + r * kp + 2 * q, 4);
      const __m256i av = _mm256_set1_epi32(pair);
      s[r][0] = _mm256_add_epi32(s[r][0], _mm256_madd_epi16(av, b0));
      s[r][1] = _mm256_add_epi32(s[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int r = 0; r < rows; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kInt8Panel), s[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * kInt8Panel + 8), s[r][1]);
  }
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void PanelAvx512(const int16_t* a16, int64_t kp,
                                                                                int rows, const int8_t* panel,
                                                                                int32_t* acc) {
  __m512i s[kRows];
  for (int r = 0; r < kRows; ++r) s[r] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kp / 2; ++q) {
    const __m512i b = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + q * 32)));
    for (int r = 0; r < kRows; ++r) {
      if (r >= rows) break;
      int32_t pair;
      std::memcpy(&pair, a16 + r * kp + 2 * q, 4);
      s[r] = _mm512_add_epi32(s[r], _mm512_madd_epi16(_mm512_set1_epi32(pair), b));
    }
  }
  for (int r = 0; r < rows; ++r) _mm512_storeu_si512(acc + r * kInt8Panel, s[r]);
}
#endif

const CpuDispatchTable<PanelFn>& PanelTable() {
  static const CpuDispatchTable<PanelFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, PanelAvx512},
      {CpuTarget::kAvx2, PanelAvx2},
#endif
      {CpuTarget::kBaseline, PanelBaseline},
  };
  return table;
}

inline int32_t LoadInt8(const void* p, bool is_unsigned, int64_t i) {
  return is_unsigned ? int32_t(static_cast<const uint8_t*>(p)[i]) : int32_t(static_cast<const int8_t*>(p)[i]);
}

// The result of one element from its exact sum.
inline float Finish(const Int8MatMulArgs& x, int64_t sum, int64_t n) {
  const float s = x.scale[x.scale_per_column ? n : 0];
  const float v = float(int32_t(uint32_t(uint64_t(sum)))) * s;  // int32, as onnxruntime accumulates
  return x.bias ? v + x.bias[n] : v;
}

}  // namespace

int64_t Int8PackedBSize(int64_t k, int64_t n) {
  if (k < 0 || n < 0 || k > (int64_t{1} << 40) || n > (int64_t{1} << 40)) return -1;
  const int64_t panels = (n + kInt8Panel - 1) / kInt8Panel;
  const int64_t kp = EvenK(k);
  if (panels != 0 && kp > INT64_MAX / kInt8Panel / panels) return -1;
  return panels * kp * kInt8Panel;
}

void Int8PackB(const void* b, bool b_unsigned, int64_t k, int64_t n, int8_t* packed) {
  const int64_t kp = EvenK(k), panels = (n + kInt8Panel - 1) / kInt8Panel;
  for (int64_t p = 0; p < panels; ++p) {
    int8_t* out = packed + p * kp * kInt8Panel;
    for (int64_t q = 0; q < kp / 2; ++q)
      for (int64_t c = 0; c < kInt8Panel; ++c)
        for (int64_t h = 0; h < 2; ++h) {
          const int64_t row = 2 * q + h, col = p * kInt8Panel + c;
          int32_t v = 0;
          if (row < k && col < n) v = LoadInt8(b, b_unsigned, row * n + col) - (b_unsigned ? 128 : 0);
          out[(q * kInt8Panel + c) * 2 + h] = int8_t(v);
        }
  }
}

int64_t Int8MatMulWorkspaceSize(int64_t m, int64_t k) { return m * EvenK(k); }

void Int8MatMulPacked(const Int8MatMulArgs& x, const int8_t* packed, int16_t* workspace, int threads) {
  const int64_t m = x.m, k = x.k, n = x.n, kp = EvenK(k);
  if (m <= 0 || n <= 0) return;
  // A - za in int16, and each row's sum (B's zero points' correction).
  std::vector<int64_t> rowsum(size_t(m), 0);
  for (int64_t r = 0; r < m; ++r) {
    int16_t* row = workspace + r * kp;
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      row[i] = int16_t(LoadInt8(x.a, x.a_unsigned, r * k + i) - x.a_zero);
      sum += row[i];
    }
    if (kp != k) row[k] = 0;
    rowsum[size_t(r)] = sum;
  }
  const PanelFn panel_fn = PanelTable().Active();
  const int32_t shift = x.b_unsigned ? 128 : 0;  // packed B = B - shift: its zero point moves with it
  const int64_t panels = (n + kInt8Panel - 1) / kInt8Panel;
  ParallelFor(threads, panels, WorkPerIndex{double(m) * double(kp) * double(kInt8Panel)},
              [&](int64_t p0, int64_t p1) {
    int32_t acc[kRows * kInt8Panel];
    for (int64_t p = p0; p < p1; ++p) {
      const int8_t* panel = packed + p * kp * kInt8Panel;
      const int64_t c0 = p * kInt8Panel, cols = std::min(kInt8Panel, n - c0);
      for (int64_t r0 = 0; r0 < m; r0 += kRows) {
        const int rows = int(std::min<int64_t>(kRows, m - r0));
        panel_fn(workspace + r0 * kp, kp, rows, panel, acc);
        for (int r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t col = c0 + c;
            const int64_t zb = int64_t(x.b_zero ? x.b_zero[x.b_zero_per_column ? col : 0] : 0) - shift;
            const int64_t sum = int64_t(acc[r * kInt8Panel + c]) - zb * rowsum[size_t(r0 + r)];
            x.c[(r0 + r) * n + col] = Finish(x, sum, col);
          }
      }
    }
  });
}

void Int8MatMulReference(const Int8MatMulArgs& x, const void* b) {
  for (int64_t r = 0; r < x.m; ++r)
    for (int64_t col = 0; col < x.n; ++col) {
      const int32_t zb = x.b_zero ? x.b_zero[x.b_zero_per_column ? col : 0] : 0;
      int64_t sum = 0;
      for (int64_t i = 0; i < x.k; ++i)
        sum += int64_t(LoadInt8(x.a, x.a_unsigned, r * x.k + i) - x.a_zero) *
               int64_t(LoadInt8(b, x.b_unsigned, i * x.n + col) - zb);
      x.c[r * x.n + col] = Finish(x, sum, col);
    }
}

namespace {

// DynamicQuantizeLinear's range and rounding over generic vectors of W
// floats (a register of the target: 16, 8 or 4), compiled per target: a
// decode step quantizes A once per q8 product, and the scalar loops (a libm
// call a value for the rounding) cost a few percent of the step, 10% of a
// prefill's.
template <int W>
struct Vec {
  typedef float F __attribute__((vector_size(W * 4)));
  typedef int32_t I __attribute__((vector_size(W * 4)));
  typedef uint8_t U __attribute__((vector_size(W)));
};

// lo = min(0, x...), hi = max(0, x...) with std::min / std::max's NaN rule (a
// NaN x leaves them as they are).
template <int W>
[[gnu::always_inline]] inline void RangeBody(const float* x, int64_t n, float& lo, float& hi) {
  using F = typename Vec<W>::F;
  F vlo = {}, vhi = {};
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    F v;
    std::memcpy(&v, x + i, sizeof(v));
    vlo = v < vlo ? v : vlo;
    vhi = vhi < v ? v : vhi;
  }
  float l = 0, h = 0;
  for (int j = 0; j < W; ++j) {
    l = std::min(l, vlo[j]);
    h = std::max(h, vhi[j]);
  }
  for (; i < n; ++i) {
    l = std::min(l, x[i]);
    h = std::max(h, x[i]);
  }
  lo = l;
  hi = h;
}

// Nearest-even by the 1.5 * 2^23 addend (|x / scale| <= 256 here, NaN stays
// NaN and saturates to 0 as below).
template <int W>
[[gnu::always_inline]] inline void QuantizeBody(const float* x, int64_t n, float scale, uint8_t zero, uint8_t* y) {
  using F = typename Vec<W>::F;
  const float z = float(zero);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    F v;
    std::memcpy(&v, x + i, sizeof(v));
    v = ((v / scale + 0x1.8p23f) - 0x1.8p23f) + z;
    v = v >= 0 ? v : 0;
    v = v < 255.0f ? v : 255.0f;
    // Through int32 (float to uint8 directly goes a lane at a time).
    const typename Vec<W>::U q = __builtin_convertvector(__builtin_convertvector(v, typename Vec<W>::I),
                                                         typename Vec<W>::U);
    std::memcpy(y + i, &q, sizeof(q));
  }
  for (; i < n; ++i) {
    float v = ((x[i] / scale + 0x1.8p23f) - 0x1.8p23f) + z;
    if (!(v >= 0)) v = 0;  // NaN too
    y[i] = uint8_t(std::min(255.0f, v));
  }
}

struct DynamicQuantizeFns {
  void (*range)(const float*, int64_t, float&, float&);
  void (*quantize)(const float*, int64_t, float, uint8_t, uint8_t*);
};

void RangeBaseline(const float* x, int64_t n, float& lo, float& hi) { RangeBody<4>(x, n, lo, hi); }
void QuantizeBaseline(const float* x, int64_t n, float scale, uint8_t zero, uint8_t* y) {
  QuantizeBody<4>(x, n, scale, zero, y);
}
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void RangeAvx2(const float* x, int64_t n, float& lo, float& hi) {
  RangeBody<8>(x, n, lo, hi);
}
[[gnu::target("avx2,fma")]] void QuantizeAvx2(const float* x, int64_t n, float scale, uint8_t zero, uint8_t* y) {
  QuantizeBody<8>(x, n, scale, zero, y);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void RangeAvx512(const float* x, int64_t n, float& lo,
                                                                              float& hi) {
  RangeBody<16>(x, n, lo, hi);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void QuantizeAvx512(const float* x, int64_t n,
                                                                                 float scale, uint8_t zero,
                                                                                 uint8_t* y) {
  QuantizeBody<16>(x, n, scale, zero, y);
}
#endif

const DynamicQuantizeFns& ActiveDynamicQuantize() {
  static const CpuDispatchTable<DynamicQuantizeFns> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, {RangeAvx512, QuantizeAvx512}},
      {CpuTarget::kAvx2, {RangeAvx2, QuantizeAvx2}},
#endif
      {CpuTarget::kBaseline, {RangeBaseline, QuantizeBaseline}},
  };
  return table.Active();
}

}  // namespace

void DynamicQuantizeParams(const float* x, int64_t n, float& scale, uint8_t& zero) {
  float lo = 0, hi = 0;
  ActiveDynamicQuantize().range(x, n, lo, hi);
  scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float z = std::min(255.0f, std::max(0.0f, 0.0f - lo / scale));
  zero = uint8_t(std::nearbyint(z));  // the default rounding mode: half to even
}

void QuantizeU8(const float* x, int64_t n, float scale, uint8_t zero, uint8_t* y) {
  ActiveDynamicQuantize().quantize(x, n, scale, zero, y);
}

}  // namespace onnx_mini
