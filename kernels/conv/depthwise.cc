#include "kernels/conv/depthwise.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu_dispatch.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

// Element strides of an (n, c, row, column) index in either layout.
struct Strides {
  int64_t n, c, row, col;
};
Strides StridesOf(const DepthwiseProblem& p, const std::array<int64_t, 2>& dims, bool channels_last) {
  const int64_t plane = dims[0] * dims[1];
  if (channels_last) return {plane * p.c, 1, dims[1] * p.c, p.c};
  return {p.c * plane, plane, dims[1], 1};
}

// The output columns [lo, hi) whose tap k1 falls inside the input.
void ValidColumns(const DepthwiseProblem& p, int64_t k1, int64_t& lo, int64_t& hi) {
  const int64_t off = k1 * p.d[1] - p.pb[1];  // input column = o * s + off
  lo = off >= 0 ? 0 : (-off + p.s[1] - 1) / p.s[1];
  const int64_t last = p.in[1] - 1 - off;  // o * s <= last
  hi = last < 0 ? 0 : std::min(p.out[1], last / p.s[1] + 1);
  lo = std::min(lo, hi);
}

// NCHW: planes (image, channel) in [begin, end). Each output row starts at
// the bias and takes the taps one by one over the whole row (contiguous for
// stride 1: a vector loop).
inline void PlanesBody(const DepthwiseProblem& p, const float* x, const float* w, const float* b, float* y,
                       int64_t begin, int64_t end) {
  const int64_t in_sz = p.in[0] * p.in[1], out_sz = p.out[0] * p.out[1], kk = p.k[0] * p.k[1];
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t ch = plane % p.c;
    const float* xp = x + plane * in_sz;
    const float* wc = w + ch * kk;
    float* yp = y + plane * out_sz;
    const float bias = b ? b[ch] : 0.f;
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0) {
      float* yr = yp + o0 * p.out[1];
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1) yr[o1] = bias;
      for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
        const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0];
        if (i0 < 0 || i0 >= p.in[0]) continue;
        const float* xr = xp + i0 * p.in[1];
        for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
          const float wv = wc[k0 * p.k[1] + k1];
          int64_t lo, hi;
          ValidColumns(p, k1, lo, hi);
          const float* xs = xr + (k1 * p.d[1] - p.pb[1]);
          if (p.s[1] == 1)
            for (int64_t o1 = lo; o1 < hi; ++o1) yr[o1] += wv * xs[o1];
          else
            for (int64_t o1 = lo; o1 < hi; ++o1) yr[o1] += wv * xs[o1 * p.s[1]];
        }
      }
    }
  }
}

// Channels last: output pixels [begin, end) over all images; the channels
// are the vector. wt holds the weights transposed, (tap, c).
inline void PixelsBody(const DepthwiseProblem& p, const float* x, const float* wt, const float* b, float* y,
                       int64_t begin, int64_t end) {
  const int64_t out_sz = p.out[0] * p.out[1], c = p.c;
  for (int64_t pix = begin; pix < end; ++pix) {
    const int64_t image = pix / out_sz, o0 = pix % out_sz / p.out[1], o1 = pix % p.out[1];
    float* yo = y + pix * c;
    if (b)
      for (int64_t ch = 0; ch < c; ++ch) yo[ch] = b[ch];
    else
      for (int64_t ch = 0; ch < c; ++ch) yo[ch] = 0.f;
    const float* xi = x + image * p.in[0] * p.in[1] * c;
    for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
      const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0];
      if (i0 < 0 || i0 >= p.in[0]) continue;
      for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
        const int64_t i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
        if (i1 < 0 || i1 >= p.in[1]) continue;
        const float* xv = xi + (i0 * p.in[1] + i1) * c;
        const float* wv = wt + (k0 * p.k[1] + k1) * c;
        for (int64_t ch = 0; ch < c; ++ch) yo[ch] += wv[ch] * xv[ch];
      }
    }
  }
}

#define ONNX_MINI_DEPTHWISE_BUILD(Target, Attr)                                                                \
  struct Target {                                                                                              \
    [[Attr]] static void Planes(const DepthwiseProblem& p, const float* x, const float* w, const float* b,     \
                                float* y, int64_t begin, int64_t end) {                                        \
      PlanesBody(p, x, w, b, y, begin, end);                                                                   \
    }                                                                                                          \
    [[Attr]] static void Pixels(const DepthwiseProblem& p, const float* x, const float* wt, const float* b,    \
                                float* y, int64_t begin, int64_t end) {                                        \
      PixelsBody(p, x, wt, b, y, begin, end);                                                                  \
    }                                                                                                          \
  };
ONNX_MINI_DEPTHWISE_BUILD(Baseline, )
#if defined(__x86_64__)
ONNX_MINI_DEPTHWISE_BUILD(Avx2, gnu::target("avx2,fma"))
ONNX_MINI_DEPTHWISE_BUILD(Avx512, gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#endif
#undef ONNX_MINI_DEPTHWISE_BUILD

struct DepthwiseEntries {
  void (*planes)(const DepthwiseProblem&, const float*, const float*, const float*, float*, int64_t, int64_t);
  void (*pixels)(const DepthwiseProblem&, const float*, const float*, const float*, float*, int64_t, int64_t);
};

const DepthwiseEntries& Entries() {
  static const CpuDispatchTable<DepthwiseEntries> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, {Avx512::Planes, Avx512::Pixels}},
      {CpuTarget::kAvx2, {Avx2::Planes, Avx2::Pixels}},
#endif
      {CpuTarget::kBaseline, {Baseline::Planes, Baseline::Pixels}},
  };
  return table.Active();
}

}  // namespace

int64_t DepthwiseScratch(const DepthwiseProblem& p) {
  if (p.src_channels_last == p.dst_channels_last) return 0;
  return p.n * p.c * (p.src_channels_last ? p.out[0] * p.out[1] : p.in[0] * p.in[1]);
}

void DepthwiseConv(const DepthwiseProblem& p, const float* x, const float* w, const float* b, float* y,
                   float* scratch, int threads) {
  const int64_t kk = p.k[0] * p.k[1], out_sz = p.out[0] * p.out[1];
  const DepthwiseEntries& e = Entries();
  if (p.src_channels_last != p.dst_channels_last) {
    // Mixed layouts (a conv chain's ends): channels last, through a copy.
    DepthwiseProblem last = p;
    last.src_channels_last = last.dst_channels_last = true;
    const int64_t in_sz = p.in[0] * p.in[1];
    if (!p.src_channels_last) {
      for (int64_t i = 0; i < p.n; ++i)
        for (int64_t ch = 0; ch < p.c; ++ch)
          for (int64_t t = 0; t < in_sz; ++t) scratch[(i * in_sz + t) * p.c + ch] = x[(i * p.c + ch) * in_sz + t];
      DepthwiseConv(last, scratch, w, b, y, nullptr, threads);
    } else {
      DepthwiseConv(last, x, w, b, scratch, nullptr, threads);
      for (int64_t i = 0; i < p.n; ++i)
        for (int64_t ch = 0; ch < p.c; ++ch)
          for (int64_t t = 0; t < out_sz; ++t) y[(i * p.c + ch) * out_sz + t] = scratch[(i * out_sz + t) * p.c + ch];
    }
    return;
  }
  if (!p.src_channels_last) {
    ParallelFor(threads, p.n * p.c, WorkPerIndex{double(out_sz * kk)},
                [&](int64_t begin, int64_t end) { e.planes(p, x, w, b, y, begin, end); });
    return;
  }
  std::vector<float> wt(size_t(kk * p.c));
  for (int64_t ch = 0; ch < p.c; ++ch)
    for (int64_t t = 0; t < kk; ++t) wt[size_t(t * p.c + ch)] = w[ch * kk + t];
  ParallelFor(threads, p.n * out_sz, WorkPerIndex{double(p.c * kk)},
              [&](int64_t begin, int64_t end) { e.pixels(p, x, wt.data(), b, y, begin, end); });
}

void DepthwiseConvReference(const DepthwiseProblem& p, const float* x, const float* w, const float* b, float* y) {
  const Strides xs = StridesOf(p, p.in, p.src_channels_last), ys = StridesOf(p, p.out, p.dst_channels_last);
  const int64_t kk = p.k[0] * p.k[1];
  for (int64_t image = 0; image < p.n; ++image)
    for (int64_t ch = 0; ch < p.c; ++ch)
      for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < p.out[1]; ++o1) {
          float acc = b ? b[ch] : 0.f;
          for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
            const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0];
            if (i0 < 0 || i0 >= p.in[0]) continue;
            for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
              const int64_t i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
              if (i1 < 0 || i1 >= p.in[1]) continue;
              acc += x[image * xs.n + ch * xs.c + i0 * xs.row + i1 * xs.col] * w[ch * kk + k0 * p.k[1] + k1];
            }
          }
          y[image * ys.n + ch * ys.c + o0 * ys.row + o1 * ys.col] = acc;
        }
}

}  // namespace onnx_mini
