#include "kernels/norm/skip_norm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "kernels/vec/float_vector.h"
#include "kernels/vec/arith.h"
#include "kernels/vec/vec_math.h"

// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

// Mean and inverse standard deviation of a row from its sum and sum of squares.
inline void Stats(const SkipNormProblem& p, double sum, double squares, double* mean, double* inv) {
  const double n = double(p.n);
  *mean = p.simplified ? 0.0 : sum / n;
  const double var = p.simplified ? squares / n : std::max(0.0, squares / n - *mean * *mean);
  *inv = 1.0 / std::sqrt(var + double(p.epsilon));
}

// s = x + skip (+ bias) stored to `dst`, and its sum and sum of squares in
// eight double partial sums (lane l takes e = l mod 8), as the reference.
typedef float F8 __attribute__((vector_size(32)));
template <int kBytes>
[[gnu::always_inline]] inline void AddMomentsBody(const float* x, const float* s, const float* b, float* dst,
                                                  int64_t n, double* sum, double* squares) {
  float_vector::EightLaneMoments<kBytes> m;
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    F8 fx, fs;
    std::memcpy(&fx, x + e, sizeof(F8));
    std::memcpy(&fs, s + e, sizeof(F8));
    F8 v = fx + fs;
    if (b) {
      F8 fb;
      std::memcpy(&fb, b + e, sizeof(F8));
      v += fb;
    }
    std::memcpy(dst + e, &v, sizeof(F8));
    m.Add8(dst + e);
  }
  for (int64_t i = e; i < n; ++i) {
    float v = x[i] + s[i];
    if (b) v += b[i];
    dst[i] = v;
  }
  m.Finish(dst + e, n - e, sum, squares);
}

#define ONNX_MINI_SKIP_BUILD(Target, Bytes, Attr)                                                        \
  struct Target {                                                                                        \
    [[Attr]] static void AddMoments(const float* x, const float* s, const float* b, float* dst, int64_t n, \
                                    double* sum, double* squares) {                                      \
      AddMomentsBody<Bytes>(x, s, b, dst, n, sum, squares);                                              \
    }                                                                                                    \
  };
ONNX_MINI_SKIP_BUILD(Baseline, 16, )
#if defined(__x86_64__)
ONNX_MINI_SKIP_BUILD(Avx2, 32, gnu::target("avx2,fma"))
ONNX_MINI_SKIP_BUILD(Avx512, 64, gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#endif
#undef ONNX_MINI_SKIP_BUILD

struct SkipEntries {
  void (*add_moments)(const float*, const float*, const float*, float*, int64_t, double*, double*);
};

const SkipEntries& Skip() {
  static const CpuDispatchTable<SkipEntries> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, {Avx512::AddMoments}},
      {CpuTarget::kAvx2, {Avx2::AddMoments}},
#endif
      {CpuTarget::kBaseline, {Baseline::AddMoments}},
  };
  return table.Active();
}

}  // namespace

template <class T>
void SkipNormReference(const SkipNormProblem& p, const SkipNormArgs<T>& a, int64_t r0, int64_t r1) {
  const int64_t n = p.n;
  for (int64_t r = r0; r < r1; ++r) {
    const T* x = a.input + r * n;
    const T* s = a.skip + (r % p.skip_rows) * n;
    // The sum in float (T's own precision for float and double), computed
    // again in the second pass rather than kept: no scratch row.
    const auto at = [&](int64_t e) {
      auto v = Widen(x[e]) + Widen(s[e]);
      if (a.bias) v += Widen(a.bias[e]);
      return v;
    };
    double ps[8] = {}, pq[8] = {};
    for (int64_t e = 0; e < n; ++e) {
      const auto v = at(e);
      if (a.sum) a.sum[r * n + e] = Narrow<T>(v);
      ps[e % 8] += double(v);
      pq[e % 8] += double(v) * double(v);
    }
    double mean, inv;
    Stats(p, ((ps[0] + ps[1]) + (ps[2] + ps[3])) + ((ps[4] + ps[5]) + (ps[6] + ps[7])),
          ((pq[0] + pq[1]) + (pq[2] + pq[3])) + ((pq[4] + pq[5]) + (pq[6] + pq[7])), &mean, &inv);
    T* y = a.output + r * n;
    for (int64_t e = 0; e < n; ++e) {
      double v = (double(at(e)) - mean) * inv * double(Widen(a.gamma[e]));
      if (a.beta && !p.simplified) v += double(Widen(a.beta[e]));
      y[e] = Narrow<T>(typename Arith<T>::type(v));
    }
    if (a.mean) a.mean[r] = float(mean);
    if (a.inv_std) a.inv_std[r] = float(inv);
  }
}

template void SkipNormReference(const SkipNormProblem&, const SkipNormArgs<float>&, int64_t, int64_t);
template void SkipNormReference(const SkipNormProblem&, const SkipNormArgs<double>&, int64_t, int64_t);
template void SkipNormReference(const SkipNormProblem&, const SkipNormArgs<Float16>&, int64_t, int64_t);
template void SkipNormReference(const SkipNormProblem&, const SkipNormArgs<BFloat16>&, int64_t, int64_t);

void SkipNormF32(const SkipNormProblem& p, const SkipNormArgs<float>& a, int64_t r0, int64_t r1) {
  const int64_t n = p.n;
  const SkipEntries& k = Skip();
  const float* beta = p.simplified ? nullptr : a.beta;
  for (int64_t r = r0; r < r1; ++r) {
    // The sum goes where it is asked for, else into the output row, which the
    // second pass then normalizes in place.
    float* s = a.sum ? a.sum + r * n : a.output + r * n;
    double sum, squares, mean, inv;
    k.add_moments(a.input + r * n, a.skip + (r % p.skip_rows) * n, a.bias, s, n, &sum, &squares);
    Stats(p, sum, squares, &mean, &inv);
    VecNormalizeRow(s, a.output + r * n, n, mean, inv, a.gamma, beta);
    if (a.mean) a.mean[r] = float(mean);
    if (a.inv_std) a.inv_std[r] = float(inv);
  }
}

void SkipNormF16(const SkipNormProblem& p, const SkipNormArgs<Float16>& a, int64_t r0, int64_t r1) {
  constexpr int64_t kChunk = 512;
  float v[kChunk], sk[kChunk], b[kChunk], g[kChunk], be[kChunk];
  const int64_t n = p.n;
  const SkipEntries& k = Skip();
  const bool with_beta = a.beta && !p.simplified;
  // v = input + skip (+ bias) of one chunk, in float; its moments added to *sum and *squares.
  const auto chunk_sum = [&](const Float16* x, const Float16* s, int64_t c, int64_t len, double* sum, double* squares) {
    Float16ToFloat(x + c, v, len);
    Float16ToFloat(s + c, sk, len);
    if (a.bias) Float16ToFloat(a.bias + c, b, len);
    double cs, cq;
    k.add_moments(v, sk, a.bias ? b : nullptr, v, len, &cs, &cq);
    *sum += cs;
    *squares += cq;
  };
  for (int64_t r = r0; r < r1; ++r) {
    const Float16* x = a.input + r * n;
    const Float16* s = a.skip + (r % p.skip_rows) * n;
    double sum = 0, squares = 0, mean, inv, unused = 0;
    for (int64_t c = 0; c < n; c += kChunk) {
      const int64_t len = std::min(kChunk, n - c);
      chunk_sum(x, s, c, len, &sum, &squares);
      if (a.sum) FloatToFloat16(v, a.sum + r * n + c, len);
    }
    Stats(p, sum, squares, &mean, &inv);
    // The sum again (the same float additions), normalized chunk by chunk.
    for (int64_t c = 0; c < n; c += kChunk) {
      const int64_t len = std::min(kChunk, n - c);
      chunk_sum(x, s, c, len, &unused, &unused);
      Float16ToFloat(a.gamma + c, g, len);
      if (with_beta) Float16ToFloat(a.beta + c, be, len);
      VecNormalizeRow(v, v, len, mean, inv, g, with_beta ? be : nullptr);
      FloatToFloat16(v, a.output + r * n + c, len);
    }
    if (a.mean) a.mean[r] = float(mean);
    if (a.inv_std) a.inv_std[r] = float(inv);
  }
}

}  // namespace onnx_mini
