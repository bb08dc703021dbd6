#include "kernels/conv/pool.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu_dispatch.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

constexpr float kLowest = std::numeric_limits<float>::lowest();

// The taps of output o along dim j: [lo, hi) inside the input, and `padded`
// inside the input with its pads (before in + pe; none lies before -pb).
struct TapRange {
  int64_t lo = 0, hi = 0, padded = 0;
};
inline TapRange Taps(const PoolProblem& p, int j, int64_t o) {
  const size_t i = size_t(j);
  const int64_t start = o * p.s[i] - p.pb[i];
  TapRange r;
  r.lo = start >= 0 ? 0 : (-start + p.d[i] - 1) / p.d[i];
  r.hi = start > p.in[i] - 1 ? 0 : std::min(p.k[i], (p.in[i] - 1 - start) / p.d[i] + 1);
  r.hi = std::max(r.hi, r.lo);
  const int64_t end = p.in[i] + p.pe[i] - start;
  r.padded = end <= 0 ? 0 : std::min(p.k[i], (end + p.d[i] - 1) / p.d[i]);
  return r;
}

// A window's running value after one more tap v: the max (a NaN first tap
// stays: only a greater one replaces it) or the sum.
template <bool kAvg>
[[gnu::always_inline]] inline float Fold(float acc, float v) {
  if constexpr (kAvg) return acc + v;
  else return v > acc ? v : acc;
}

// One row's update by one tap over outputs [lo, hi): xs[o * s] folded in,
// or copied for a window's first tap. Strides 1 and 2 spelled out so that
// the loop vectorizes.
template <bool kAvg, bool kFirst>
[[gnu::always_inline]] inline void TapRow(float* __restrict yr, const float* __restrict xs, int64_t s, int64_t lo,
                                          int64_t hi) {
  auto step = [&](int64_t o, float v) { yr[o] = kFirst ? v : Fold<kAvg>(yr[o], v); };
  if (s == 1)
    for (int64_t o = lo; o < hi; ++o) step(o, xs[o]);
  else if (s == 2)
    for (int64_t o = lo; o < hi; ++o) step(o, xs[2 * o]);
  else
    for (int64_t o = lo; o < hi; ++o) step(o, xs[o * s]);
}

// Kernel 2, stride 2, dilation 1 (2x2 and 1x2 pools): both taps of a row in
// one pass, folded one after the other.
template <bool kAvg, bool kFirst>
[[gnu::always_inline]] inline void PairRow(float* __restrict yr, const float* __restrict xs, int64_t lo, int64_t hi) {
  for (int64_t o = lo; o < hi; ++o) {
    const float a = xs[2 * o], b = xs[2 * o + 1];
    yr[o] = Fold<kAvg>(kFirst ? a : Fold<kAvg>(yr[o], a), b);
  }
}

// Two rows of pairs (a 2x2 window): the four taps in order.
template <bool kAvg>
[[gnu::always_inline]] inline void QuadRow(float* __restrict yr, const float* __restrict ra,
                                           const float* __restrict rb, int64_t lo, int64_t hi) {
  for (int64_t o = lo; o < hi; ++o)
    yr[o] = Fold<kAvg>(Fold<kAvg>(Fold<kAvg>(ra[2 * o], ra[2 * o + 1]), rb[2 * o]), rb[2 * o + 1]);
}

template <bool kAvg>
[[gnu::always_inline]] inline void PlanesBody(const PoolProblem& p, bool include_pad, const float* x, float* y,
                                              int64_t begin, int64_t end) {
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
    std::vector<TapRange> r;
    for (int64_t o = from; o < to; ++o) r.push_back(Taps(p, j, o));
    return r;
  };
  const std::vector<TapRange> taps0 = ranges(0, 0, p.out[0]), taps1 = ranges(1, 0, p.out[1]);
  const std::vector<TapRange> head = ranges(2, 0, c_lo), tail = ranges(2, c_hi, p.out[2]);
  auto count = [&](const TapRange& r) { return include_pad ? r.padded : r.hi - r.lo; };
  // The average's divisors along dim 2 (the interior's: all k taps inside).
  std::vector<float> count2;
  if constexpr (kAvg) {
    count2.assign(size_t(p.out[2]), float(p.k[2]));
    for (int64_t o2 = 0; o2 < c_lo; ++o2) count2[size_t(o2)] = float(count(head[size_t(o2)]));
    for (int64_t o2 = c_hi; o2 < p.out[2]; ++o2) count2[size_t(o2)] = float(count(tail[size_t(o2 - c_hi)]));
  }
  for (int64_t plane = begin; plane < end; ++plane) {
    const float* xp = x + plane * in_sz;
    float* yp = y + plane * out_sz;
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
      const TapRange& t0 = taps0[size_t(o0)];
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
        const TapRange& t1 = taps1[size_t(o1)];
        float* yr = yp + (o0 * p.out[1] + o1) * p.out[2];
        // The taps at dim 2's edges of one input row (`first`: the window's first row).
        auto edges = [&](const float* xr, bool first) {
          auto edge = [&](int64_t o2, const TapRange& t2) {
            if (first && t2.lo == t2.hi) yr[o2] = kAvg ? 0.f : kLowest;
            for (int64_t k2 = t2.lo; k2 < t2.hi; ++k2) {
              const float v = xr[o2 * s2 - pb2 + k2 * d2];
              yr[o2] = first && k2 == t2.lo ? v : Fold<kAvg>(yr[o2], v);
            }
          };
          for (int64_t o2 = 0; o2 < c_lo; ++o2) edge(o2, head[size_t(o2)]);
          for (int64_t o2 = c_hi; o2 < p.out[2]; ++o2) edge(o2, tail[size_t(o2 - c_hi)]);
        };
        auto row = [&](int64_t k0, int64_t k1) {
          const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0], i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
          return xp + (i0 * p.in[1] + i1) * p.in[2];
        };
        if (pair && (t0.hi - t0.lo) * (t1.hi - t1.lo) == 2) {
          // A 2x2 window: both rows in one pass (a short row's loop costs
          // more to enter than to run).
          const float* ra = row(t0.lo, t1.lo);
          const float* rb = t1.hi - t1.lo == 2 ? row(t0.lo, t1.lo + 1) : row(t0.lo + 1, t1.lo);
          QuadRow<kAvg>(yr, ra - pb2, rb - pb2, c_lo, c_hi);
          edges(ra, true);
          edges(rb, false);
        } else {
          bool first = true;
          for (int64_t k0 = t0.lo; k0 < t0.hi; ++k0)
            for (int64_t k1 = t1.lo; k1 < t1.hi; ++k1) {
              const float* xr = row(k0, k1);
              if (pair) {
                if (first) PairRow<kAvg, true>(yr, xr - pb2, c_lo, c_hi);
                else PairRow<kAvg, false>(yr, xr - pb2, c_lo, c_hi);
              }
              // (No interior: no loop over the taps, which may be many over pads.)
              for (int64_t k2 = 0; k2 < (pair || c_lo == c_hi ? 0 : p.k[2]); ++k2) {
                const float* xs = xr + k2 * d2 - pb2;
                if (first && k2 == 0) TapRow<kAvg, true>(yr, xs, s2, c_lo, c_hi);
                else TapRow<kAvg, false>(yr, xs, s2, c_lo, c_hi);
              }
              edges(xr, first);
              first = false;
            }
          // A window on the pads alone.
          if (first) std::fill(yr, yr + p.out[2], kAvg ? 0.f : kLowest);
        }
        if constexpr (kAvg) {
          const float c01 = float(count(t0) * count(t1));
          for (int64_t o2 = 0; o2 < p.out[2]; ++o2) yr[o2] /= c01 * count2[size_t(o2)];
        }
      }
    }
  }
}

#define ONNX_MINI_POOL_BUILD(Target, Attr)                                                                    \
  struct Target {                                                                                             \
    [[Attr]] static void Max(const PoolProblem& p, bool include_pad, const float* x, float* y, int64_t begin, \
                             int64_t end) {                                                                   \
      PlanesBody<false>(p, include_pad, x, y, begin, end);                                                   \
    }                                                                                                         \
    [[Attr]] static void Average(const PoolProblem& p, bool include_pad, const float* x, float* y,            \
                                 int64_t begin, int64_t end) {                                                \
      PlanesBody<true>(p, include_pad, x, y, begin, end);                                                    \
    }                                                                                                         \
  };
ONNX_MINI_POOL_BUILD(Baseline, )
#if defined(__x86_64__)
ONNX_MINI_POOL_BUILD(Avx2, gnu::target("avx2,fma"))
ONNX_MINI_POOL_BUILD(Avx512, gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#endif
#undef ONNX_MINI_POOL_BUILD

using PlanesFn = void (*)(const PoolProblem&, bool, const float*, float*, int64_t, int64_t);
struct PoolEntries {
  PlanesFn max, average;
};

const PoolEntries& Entries() {
  static const CpuDispatchTable<PoolEntries> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, {Avx512::Max, Avx512::Average}},
      {CpuTarget::kAvx2, {Avx2::Max, Avx2::Average}},
#endif
      {CpuTarget::kBaseline, {Baseline::Max, Baseline::Average}},
  };
  return table.Active();
}

void Run(PlanesFn planes, const PoolProblem& problem, bool include_pad, const float* x, float* y, int threads) {
  PoolProblem p = problem;
  // A pool that leaves dim 1 as it is (kernel 1, stride 1) and whose windows
  // tile dim 2 exactly (no pads, in = out * stride, each window within its
  // stride) is one row of dims 1 and 2 together: fewer, longer rows.
  if (p.k[1] == 1 && p.s[1] == 1 && p.pb[1] == 0 && p.pe[1] == 0 && p.out[1] == p.in[1] && p.pb[2] == 0 &&
      p.pe[2] == 0 && p.in[2] == p.out[2] * p.s[2] && (p.k[2] - 1) * p.d[2] < p.s[2]) {
    p.in[2] *= p.in[1];
    p.out[2] *= p.out[1];
    p.in[1] = p.out[1] = 1;
  }
  const int64_t out_sz = p.out[0] * p.out[1] * p.out[2], taps = p.k[0] * p.k[1] * p.k[2];
  ParallelFor(threads, p.planes, WorkPerIndex{double(out_sz * taps)},
              [&](int64_t begin, int64_t end) { planes(p, include_pad, x, y, begin, end); });
}

// One output at a time: the taps inside the input in order, folded.
template <bool kAvg>
void Reference(const PoolProblem& p, bool include_pad, const float* x, float* y) {
  const int64_t in_sz = p.in[0] * p.in[1] * p.in[2];
  int64_t at = 0;
  for (int64_t plane = 0; plane < p.planes; ++plane)
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < p.out[2]; ++o2, ++at) {
          float acc = kAvg ? 0.f : kLowest;
          int64_t inside = 0;
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
                acc = inside++ == 0 ? v : Fold<kAvg>(acc, v);
              }
            }
          }
          if constexpr (kAvg) {
            int64_t padded = 1;
            for (int j = 0; j < 3; ++j) {
              const int64_t start = (j == 0 ? o0 : j == 1 ? o1 : o2) * p.s[size_t(j)] - p.pb[size_t(j)];
              int64_t n = 0;
              for (int64_t k = 0; k < p.k[size_t(j)]; ++k) n += start + k * p.d[size_t(j)] < p.in[size_t(j)] + p.pe[size_t(j)];
              padded *= n;
            }
            acc /= float(include_pad ? padded : inside);
          }
          y[at] = acc;
        }
}

}  // namespace

void MaxPoolFloat(const PoolProblem& p, const float* x, float* y, int threads) {
  Run(Entries().max, p, false, x, y, threads);
}
void AveragePoolFloat(const PoolProblem& p, bool include_pad, const float* x, float* y, int threads) {
  Run(Entries().average, p, include_pad, x, y, threads);
}
void MaxPoolFloatReference(const PoolProblem& p, const float* x, float* y) { Reference<false>(p, false, x, y); }
void AveragePoolFloatReference(const PoolProblem& p, bool include_pad, const float* x, float* y) {
  Reference<true>(p, include_pad, x, y);
}

}  // namespace onnx_mini
