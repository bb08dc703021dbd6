#include "kernels/conv/max_pool.h"

#include <algorithm>
#include <limits>

#include "kernels/cpu_dispatch.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

// The taps [lo, hi) of output o along dim j that fall inside the input.
inline void Taps(const MaxPoolProblem& p, int j, int64_t o, int64_t& lo, int64_t& hi) {
  const size_t i = size_t(j);
  const int64_t start = o * p.s[i] - p.pb[i];
  lo = start >= 0 ? 0 : (-start + p.d[i] - 1) / p.d[i];
  hi = start > p.in[i] - 1 ? 0 : std::min(p.k[i], (p.in[i] - 1 - start) / p.d[i] + 1);
  hi = std::max(hi, lo);
}

// One row's update by one tap: yr[o] = max(yr[o], xs[o * s]) over [lo, hi),
// or the plain copy for a window's first tap. Strides 1 and 2 spelled out
// so that the loop vectorizes.
template <bool kFirst>
inline void TapRow(float* yr, const float* xs, int64_t s, int64_t lo, int64_t hi) {
  auto step = [&](int64_t o, float v) {
    if constexpr (kFirst) yr[o] = v;
    else yr[o] = v > yr[o] ? v : yr[o];
  };
  if (s == 1)
    for (int64_t o = lo; o < hi; ++o) step(o, xs[o]);
  else if (s == 2)
    for (int64_t o = lo; o < hi; ++o) step(o, xs[2 * o]);
  else
    for (int64_t o = lo; o < hi; ++o) step(o, xs[o * s]);
}

inline void PlanesBody(const MaxPoolProblem& p, const float* x, float* y, int64_t begin, int64_t end) {
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2], out_sz = p.out[0] * p.out[1] * p.out[2];
  const int64_t s2 = p.s[2], d2 = p.d[2], pb2 = p.pb[2];
  // The outputs [c_lo, c_hi) of the last dim whose taps all lie inside the
  // input; the others (at the pads) take their taps one by one.
  const int64_t c_lo = std::min(p.out[2], (pb2 + s2 - 1) / s2);
  const int64_t last = p.in[2] - 1 - (p.k[2] - 1) * d2 + pb2;
  const int64_t c_hi = std::max(c_lo, last < 0 ? 0 : std::min(p.out[2], last / s2 + 1));
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* xp = x + plane * in_sz;
    float* yp = y + plane * out_sz;
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
      int64_t lo0, hi0;
      Taps(p, 0, o0, lo0, hi0);
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
        int64_t lo1, hi1;
        Taps(p, 1, o1, lo1, hi1);
        float* yr = yp + (o0 * p.out[1] + o1) * p.out[2];
        bool first = true;
        for (int64_t k0 = lo0; k0 < hi0; ++k0)
          for (int64_t k1 = lo1; k1 < hi1; ++k1) {
            const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0], i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
            const float* xr = xp + (i0 * p.in[1] + i1) * p.in[2];
            for (int64_t k2 = 0; k2 < p.k[2]; ++k2) {
              const float* xs = xr + k2 * d2 - pb2;
              if (first && k2 == 0) TapRow<true>(yr, xs, s2, c_lo, c_hi);
              else TapRow<false>(yr, xs, s2, c_lo, c_hi);
            }
            auto edge = [&](int64_t o2) {
              int64_t lo2, hi2;
              Taps(p, 2, o2, lo2, hi2);
              if (first && lo2 == hi2) yr[o2] = kLowest;
              for (int64_t k2 = lo2; k2 < hi2; ++k2) {
                const float v = xr[o2 * s2 - pb2 + k2 * d2];
                yr[o2] = (first && k2 == lo2) || v > yr[o2] ? v : yr[o2];
              }
            };
            for (int64_t o2 = 0; o2 < c_lo; ++o2) edge(o2);
            for (int64_t o2 = c_hi; o2 < p.out[2]; ++o2) edge(o2);
            first = false;
          }
        if (first) std::fill(yr, yr + p.out[2], kLowest);  // the window lies on the pads alone
      }
    }
  }
}

#define ONNX_MINI_MAX_POOL_BUILD(Target, Attr)                                                          \
  struct Target {                                                                                       \
    [[Attr]] static void Planes(const MaxPoolProblem& p, const float* x, float* y, int64_t begin,      \
                                int64_t end) {                                                          \
      PlanesBody(p, x, y, begin, end);                                                                  \
    }                                                                                                   \
  };
ONNX_MINI_MAX_POOL_BUILD(Baseline, )
#if defined(__x86_64__)
ONNX_MINI_MAX_POOL_BUILD(Avx2, gnu::target("avx2,fma"))
ONNX_MINI_MAX_POOL_BUILD(Avx512, gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#endif
#undef ONNX_MINI_MAX_POOL_BUILD

using PlanesFn = void (*)(const MaxPoolProblem&, const float*, float*, int64_t, int64_t);

PlanesFn Entry() {
  static const CpuDispatchTable<PlanesFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, Avx512::Planes},
      {CpuTarget::kAvx2, Avx2::Planes},
#endif
      {CpuTarget::kBaseline, Baseline::Planes},
  };
  return table.Active();
}

}  // namespace

void MaxPoolFloat(const MaxPoolProblem& p, const float* x, float* y, int threads) {
  const PlanesFn planes = Entry();
  const int64_t out_sz = p.out[0] * p.out[1] * p.out[2], taps = p.k[0] * p.k[1] * p.k[2];
  ParallelFor(threads, p.planes, WorkPerIndex{double(out_sz * taps)},
              [&](int64_t begin, int64_t end) { planes(p, x, y, begin, end); });
}

void MaxPoolFloatReference(const MaxPoolProblem& p, const float* x, float* y) {
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2];
  int64_t at = 0;
  for (int64_t plane = 0; plane < p.planes; ++plane)
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < p.out[2]; ++o2, ++at) {
          float best = kLowest;
          bool any = false;
          for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
            const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0];
            if (i0 < 0 || i0 >= p.in[0]) continue;
            for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
              const int64_t i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
              if (i1 < 0 || i1 >= p.in[1]) continue;
              for (int64_t k2 = 0; k2 < p.k[2]; ++k2) {
                const int64_t i2 = o2 * p.s[2] - p.pb[2] + k2 * p.d[2];
                if (i2 < 0 || i2 >= p.in[2]) continue;
                const float v = x[plane * in_sz + (i0 * p.in[1] + i1) * p.in[2] + i2];
                if (!any || v > best) best = v;
                any = true;
              }
            }
          }
          y[at] = best;
        }
}

}  // namespace onnx_mini
