#include "kernels/conv/max_pool.h"

#include <algorithm>
#include <limits>
#include <vector>

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
[[gnu::always_inline]] inline void TapRow(float* __restrict yr, const float* __restrict xs, int64_t s, int64_t lo, int64_t hi) {
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

// Kernel 2, stride 2, dilation 1 (2x2 and 1x2 pools): both taps of a row in
// one pass. A later row's pair folds into the max as its two taps one after
// the other would: a NaN first of the pair is passed over.
template <bool kFirst>
[[gnu::always_inline]] inline void PairRow(float* __restrict yr, const float* __restrict xs, int64_t lo, int64_t hi) {
  for (int64_t o = lo; o < hi; ++o) {
    const float a = xs[2 * o], b = xs[2 * o + 1];
    if constexpr (kFirst) {
      yr[o] = b > a ? b : a;
    } else {
      const float v = b > a || a != a ? b : a;
      yr[o] = v > yr[o] ? v : yr[o];
    }
  }
}

// Two rows of pairs (a 2x2 window): the four taps in order.
[[gnu::always_inline]] inline void QuadRow(float* __restrict yr, const float* __restrict ra,
                                           const float* __restrict rb, int64_t lo, int64_t hi) {
  for (int64_t o = lo; o < hi; ++o) {
    float best = ra[2 * o];
    const float b = ra[2 * o + 1], c = rb[2 * o], d = rb[2 * o + 1];
    best = b > best ? b : best;
    best = c > best ? c : best;
    best = d > best ? d : best;
    yr[o] = best;
  }
}

[[gnu::always_inline]] inline void PlanesBody(const MaxPoolProblem& p, const float* x, float* y, int64_t begin, int64_t end) {
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2], out_sz = p.out[0] * p.out[1] * p.out[2];
  const int64_t s2 = p.s[2], d2 = p.d[2], pb2 = p.pb[2];
  // The outputs [c_lo, c_hi) of the last dim whose taps all lie inside the
  // input; the others (at the pads) take their taps one by one.
  const int64_t c_lo = std::min(p.out[2], (pb2 + s2 - 1) / s2);
  const int64_t last = p.in[2] - 1 - (p.k[2] - 1) * d2 + pb2;
  const int64_t c_hi = std::max(c_lo, last < 0 ? 0 : std::min(p.out[2], last / s2 + 1));
  const bool pair = p.k[2] == 2 && s2 == 2 && d2 == 1;
  // Each output's taps along dims 0 and 1 and at dim 2's edges, found once
  // (two divisions each: they cost more than a short row's maxima).
  auto ranges = [&](int j, int64_t from, int64_t to) {
    std::vector<std::array<int64_t, 2>> r(size_t(std::max<int64_t>(0, to - from)));
    for (int64_t o = from; o < to; ++o) Taps(p, j, o, r[size_t(o - from)][0], r[size_t(o - from)][1]);
    return r;
  };
  const auto taps0 = ranges(0, 0, p.out[0]), taps1 = ranges(1, 0, p.out[1]);
  const auto head = ranges(2, 0, c_lo), tail = ranges(2, c_hi, p.out[2]);
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* xp = x + plane * in_sz;
    float* yp = y + plane * out_sz;
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
      const auto [lo0, hi0] = taps0[size_t(o0)];
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
        const auto [lo1, hi1] = taps1[size_t(o1)];
        float* yr = yp + (o0 * p.out[1] + o1) * p.out[2];
        // The taps at dim 2's edges of one input row (`first`: the window's first row).
        auto edges = [&](const float* xr, bool first) {
          auto edge = [&](int64_t o2, const std::array<int64_t, 2>& taps2) {
            const auto [lo2, hi2] = taps2;
            if (first && lo2 == hi2) yr[o2] = kLowest;
            for (int64_t k2 = lo2; k2 < hi2; ++k2) {
              const float v = xr[o2 * s2 - pb2 + k2 * d2];
              yr[o2] = (first && k2 == lo2) || v > yr[o2] ? v : yr[o2];
            }
          };
          for (int64_t o2 = 0; o2 < c_lo; ++o2) edge(o2, head[size_t(o2)]);
          for (int64_t o2 = c_hi; o2 < p.out[2]; ++o2) edge(o2, tail[size_t(o2 - c_hi)]);
        };
        auto row = [&](int64_t k0, int64_t k1) {
          const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0], i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
          return xp + (i0 * p.in[1] + i1) * p.in[2];
        };
        if (pair && (hi0 - lo0) * (hi1 - lo1) == 2) {
          // A 2x2 window: both rows in one pass (a short row's loop costs
          // more to enter than to run).
          const float* ra = row(lo0, lo1);
          const float* rb = hi1 - lo1 == 2 ? row(lo0, lo1 + 1) : row(lo0 + 1, lo1);
          QuadRow(yr, ra - pb2, rb - pb2, c_lo, c_hi);
          edges(ra, true);
          edges(rb, false);
          continue;
        }
        bool first = true;
        for (int64_t k0 = lo0; k0 < hi0; ++k0)
          for (int64_t k1 = lo1; k1 < hi1; ++k1) {
            const float* xr = row(k0, k1);
            if (pair) {
              if (first) PairRow<true>(yr, xr - pb2, c_lo, c_hi);
              else PairRow<false>(yr, xr - pb2, c_lo, c_hi);
            }
            for (int64_t k2 = 0; k2 < (pair ? 0 : p.k[2]); ++k2) {
              const float* xs = xr + k2 * d2 - pb2;
              if (first && k2 == 0) TapRow<true>(yr, xs, s2, c_lo, c_hi);
              else TapRow<false>(yr, xs, s2, c_lo, c_hi);
            }
            edges(xr, first);
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

void MaxPoolFloat(const MaxPoolProblem& problem, const float* x, float* y, int threads) {
  MaxPoolProblem p = problem;
  // A pool that leaves dim 1 as it is (kernel 1, stride 1) and whose windows
  // tile dim 2 exactly (no pads, in = out * stride, each window within its
  // stride) is one row of dims 1 and 2 together: fewer, longer rows.
  if (p.k[1] == 1 && p.s[1] == 1 && p.pb[1] == 0 && p.out[1] == p.in[1] && p.pb[2] == 0 &&
      p.in[2] == p.out[2] * p.s[2] && (p.k[2] - 1) * p.d[2] < p.s[2]) {
    p.in[2] *= p.in[1];
    p.out[2] *= p.out[1];
    p.in[1] = p.out[1] = 1;
  }
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
