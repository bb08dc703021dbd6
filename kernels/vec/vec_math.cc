#include "kernels/vec/vec_math.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <limits>

#include "kernels/vec/float_vector.h"
#include "runtime/cpu.h"

// Vectors pass by value only between always-inlined functions, so the
// ABI notes GCC gives for wide vectors in baseline code do not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

// Everything below is inlined into the per-target entry points at the end,
// which carry the target attributes (as kernels/attention/attention.cc does).
using float_vector::Load;
using float_vector::Store;
using float_vector::V;

// exp: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, a degree-7
// polynomial for e^r (Cephes' expf coefficients), and 2^n applied as two
// factors so that results down to the denormals round once.
template <class F, class I>
[[gnu::always_inline]] inline F ExpV(F x) {
  const F zero = {};
  F c = x < 88.76f ? x : zero + 88.76f;
  c = c > -104.0f ? c : zero - 104.0f;
  const F t = c * 1.44269504088896341f + 12582912.0f;  // + 1.5 * 2^23 rounds to an integer
  const F nf = t - 12582912.0f;
  const I n = (I)t - 0x4B400000;
  const F r = (c - nf * 0.693359375f) + nf * 2.12194440e-4f;
  F p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const I n1 = n >> 1, n2 = n - n1;
  const F s1 = (F)((n1 + 127) << 23), s2 = (F)((n2 + 127) << 23);
  const F y = p * s1 * s2;
  return x != x ? x : y;
}

template <class F, class I>
[[gnu::always_inline]] inline F SigmoidV(F x) {
  // e = exp(-|x|) <= 1: 1/(1+e) for x >= 0, e/(1+e) below, as the plain kernel.
  const F neg = x > 0.0f ? -x : x;
  const F e = ExpV<F, I>(neg);
  const F s = 1.0f / (1.0f + e);
  const F y = x >= 0.0f ? s : e * s;
  return x != x ? x : y;
}

// tanh on |x| with x's sign put back: an odd polynomial below 0.625
// (Cephes' tanhf coefficients), 1 - 2 / (exp(2|x|) + 1) above (exp overflow
// to inf gives exactly 1).
template <class F, class I>
[[gnu::always_inline]] inline F TanhV(F x) {
  const I sign = (I)x & (I{} + std::numeric_limits<int32_t>::min());
  const F a = (F)((I)x ^ sign);
  const F z = a * a;
  F p = z * -5.70498872745e-3f + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const F small = a + a * z * p;
  const F big = 1.0f - 2.0f / (ExpV<F, I>(a + a) + 1.0f);
  const F y = (F)((I)(a < 0.625f ? small : big) | sign);
  return x != x ? x : y;
}

// erf on |x| with x's sign put back. Below 0.921875: x + x P(x^2) (the
// leading x added last, exactly placed); above: 1 - exp(Q(|x|)), Q a
// polynomial for log(erfc) (smooth where erfc is not) in |x| - 1.5; past 4
// the float result is 1. Coefficients: Chebyshev fits of erf(x)/x - 1 and
// log(erfc(x)) in double, rounded to float.
template <class F, class I>
[[gnu::always_inline]] inline F ErfV(F x) {
  const I sign = (I)x & (I{} + std::numeric_limits<int32_t>::min());
  const F a = (F)((I)x ^ sign);
  const F z = a * a;
  F p = z * 8.505519508616999e-5f - 8.175406837835908e-4f;
  p = p * z + 5.20398048684001e-3f;
  p = p * z - 2.6860617101192474e-2f;
  p = p * z + 1.1283718049526215e-1f;
  p = p * z - 3.7612634897232056e-1f;
  p = p * z + 1.2837916612625122e-1f;
  const F small = a + a * p;
  const F t = (a < 4.0f ? a : F{} + 4.0f) - 1.5f;
  F q = t * 1.629367943678517e-6f - 2.6327514206059277e-5f;
  q = q * t + 2.160035801352933e-4f;
  q = q * t - 1.2545922072604299e-3f;
  q = q * t + 6.005549803376198e-3f;
  q = q * t - 2.5824587792158127e-2f;
  q = q * t - 8.926400542259216e-1f;
  q = q * t - 3.508800745010376f;
  q = q * t - 3.3844921588897705f;
  const F big = 1.0f - ExpV<F, I>(q);
  const F y = (F)((I)(a < 0.921875f ? small : big) | sign);
  return x != x ? x : y;
}

enum class Fn { kExp, kSigmoid, kSilu, kTanh, kGeluTanh, kErf, kGeluErf };

// The function of one vector (`shift` subtracted first: the softmax max).
template <Fn kFn, class F, class I>
[[gnu::always_inline]] inline F Apply(F v, float shift) {
  if constexpr (kFn == Fn::kExp) return ExpV<F, I>(v - shift);
  else if constexpr (kFn == Fn::kSigmoid) return SigmoidV<F, I>(v);
  else if constexpr (kFn == Fn::kTanh) return TanhV<F, I>(v);
  else if constexpr (kFn == Fn::kGeluTanh)  // the plain kernel's float formula
    return 0.5f * v * (1.0f + TanhV<F, I>(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  else if constexpr (kFn == Fn::kErf) return ErfV<F, I>(v);
  else if constexpr (kFn == Fn::kGeluErf) return 0.5f * v * (1.0f + ErfV<F, I>(v * 0.7071067811865476f));
  else return v * SigmoidV<F, I>(v);
}

// Applies the function to n floats, whole vectors then a zero-padded last one.
template <int kBytes, Fn kFn>
[[gnu::always_inline]] inline void Map(const float* x, float* y, int64_t n, float shift = 0) {
  using F = typename V<kBytes>::F;
  using I = typename V<kBytes>::I;
  constexpr int64_t L = V<kBytes>::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) Store(y + i, Apply<kFn, F, I>(Load<F>(x + i), shift));
  if (i < n) {
    float buf[L] = {};
    std::memcpy(buf, x + i, size_t(n - i) * sizeof(float));
    Store(buf, Apply<kFn, F, I>(Load<F>(buf), shift));
    std::memcpy(y + i, buf, size_t(n - i) * sizeof(float));
  }
}

template <int kBytes>
[[gnu::always_inline]] inline void ExpBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kExp>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void SigmoidBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kSigmoid>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void SiluBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kSilu>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void TanhBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kTanh>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void GeluTanhBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kGeluTanh>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void ErfBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kErf>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void GeluErfBody(const float* x, float* y, int64_t n) {
  Map<kBytes, Fn::kGeluErf>(x, y, n);
}
template <int kBytes>
[[gnu::always_inline]] inline void SoftmaxBody(const float* x, float* y, int64_t n) {
  using F = typename V<kBytes>::F;
  constexpr int64_t L = V<kBytes>::kLanes;
  if (n <= 0) return;
  // The max as the plain kernel takes it: a NaN never replaces it.
  float max = -std::numeric_limits<float>::infinity();
  {
    F m = F{} + max;
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      const F v = Load<F>(x + i);
      m = m < v ? v : m;
    }
    for (int64_t l = 0; l < L; ++l) max = max < m[l] ? m[l] : max;
    for (; i < n; ++i) max = max < x[i] ? x[i] : max;
  }
  Map<kBytes, Fn::kExp>(x, y, n, max);
  F acc = {};
  int64_t i = 0;
  for (; i + L <= n; i += L) acc += Load<F>(y + i);
  float sum = 0;
  for (int64_t l = 0; l < L; ++l) sum += acc[l];
  for (; i < n; ++i) sum += y[i];
  i = 0;
  for (; i + L <= n; i += L) Store(y + i, Load<F>(y + i) / sum);
  for (; i < n; ++i) y[i] /= sum;
}

// Sum (kSquares: of squares) in double lanes: each float vector's halves
// widen to two double vectors; two accumulators of each keep the adds
// independent.
template <int kBytes>
struct Wide {
  typedef float H __attribute__((vector_size(kBytes / 2)));  // half a float vector
  typedef double D __attribute__((vector_size(kBytes)));     // its lanes widened
};

template <int kBytes, bool kSquares>
[[gnu::always_inline]] inline double SumBody(const float* x, int64_t n) {
  using H = typename Wide<kBytes>::H;
  using D = typename Wide<kBytes>::D;
  constexpr int64_t L = kBytes / 4;  // floats per step = doubles in two D
  D a0 = {}, a1 = {};
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    H h0, h1;
    std::memcpy(&h0, x + i, sizeof(H));
    std::memcpy(&h1, x + i + L / 2, sizeof(H));
    const D d0 = __builtin_convertvector(h0, D), d1 = __builtin_convertvector(h1, D);
    if constexpr (kSquares) {
      a0 += d0 * d0;
      a1 += d1 * d1;
    } else {
      a0 += d0;
      a1 += d1;
    }
  }
  a0 += a1;
  double sum = 0;
  for (int64_t l = 0; l < L / 2; ++l) sum += a0[l];
  for (; i < n; ++i) sum += kSquares ? double(x[i]) * double(x[i]) : double(x[i]);
  return sum;
}

// Max (kMin: min) with NaN propagating: lanes flag any NaN seen, and a row
// with one returns its first NaN, as the plain loop does.
template <int kBytes, bool kMin>
[[gnu::always_inline]] inline float ExtremeBody(const float* x, int64_t n) {
  using F = typename V<kBytes>::F;
  using I = typename V<kBytes>::I;
  constexpr int64_t L = V<kBytes>::kLanes;
  const float start = kMin ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  F m = F{} + start;
  I nan = {};
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const F v = Load<F>(x + i);
    if constexpr (kMin) m = v < m ? v : m;
    else m = v > m ? v : m;
    nan |= v != v;
  }
  float r = start;
  bool any_nan = false;
  for (int64_t l = 0; l < L; ++l) {
    any_nan |= nan[l] != 0;
    if (kMin ? m[l] < r : m[l] > r) r = m[l];
  }
  for (; i < n; ++i) {
    any_nan |= x[i] != x[i];
    if (kMin ? x[i] < r : x[i] > r) r = x[i];
  }
  if (any_nan)
    for (i = 0; i < n; ++i)
      if (x[i] != x[i]) return x[i];
  return r;
}

// Square roots of double lanes, per target (GCC's vector extensions have
// none). The helpers take pointers: a vector passed by value between
// functions of different targets changes the ABI, which clang refuses.
#if defined(__x86_64__)
// GCC 12's _mm512_sqrt_pd starts from an undefined vector, which
// -Wuninitialized reports inside its own header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
[[gnu::target("avx512f")]] inline void SqrtPd8(const double* in, double* out) {
  _mm512_storeu_pd(out, _mm512_sqrt_pd(_mm512_loadu_pd(in)));
}
#pragma GCC diagnostic pop
[[gnu::target("avx")]] inline void SqrtPd4(const double* in, double* out) {
  _mm256_storeu_pd(out, _mm256_sqrt_pd(_mm256_loadu_pd(in)));
}
inline void SqrtPd2(const double* in, double* out) { _mm_storeu_pd(out, _mm_sqrt_pd(_mm_loadu_pd(in))); }
template <class D>
[[gnu::always_inline]] inline D SqrtD(D v) {
  static_assert(sizeof(D) == 64 || sizeof(D) == 32 || sizeof(D) == 16, "2, 4 or 8 double lanes");
  double in[sizeof(D) / sizeof(double)], out[sizeof(D) / sizeof(double)];
  std::memcpy(in, &v, sizeof(D));
  if constexpr (sizeof(D) == 64) SqrtPd8(in, out);
  else if constexpr (sizeof(D) == 32) SqrtPd4(in, out);
  else SqrtPd2(in, out);
  D r;
  std::memcpy(&r, out, sizeof(D));
  return r;
}
#else
template <class D>
[[gnu::always_inline]] inline D SqrtD(D v) {
  for (int l = 0; l < int(sizeof(D) / sizeof(double)); ++l) v[l] = std::sqrt(v[l]);
  return v;
}
#endif

enum class PowKind { kHalf, kOne, kTwo, kThree, kMinusOne, kMinusHalf };

template <PowKind kKind, class D>
[[gnu::always_inline]] inline D PowD(D d) {
  const double inf = std::numeric_limits<double>::infinity();
  const D zero = {};
  if constexpr (kKind == PowKind::kHalf) {
    const D r = SqrtD(d) + 0.0;  // + 0: sqrt(-0) is -0, pow(-0, 0.5) is +0
    return d == -inf ? zero + inf : r;
  } else if constexpr (kKind == PowKind::kOne) {
    return d;
  } else if constexpr (kKind == PowKind::kTwo) {
    return d * d;  // exact in double
  } else if constexpr (kKind == PowKind::kThree) {
    return d * d * d;  // d * d exact: one rounding, as a correctly rounded pow
  } else if constexpr (kKind == PowKind::kMinusOne) {
    return 1.0 / d;
  } else {
    const D r = 1.0 / (SqrtD(d) + 0.0);  // pow(-0, -0.5) is +inf
    return d == -inf ? zero : r;
  }
}

// y = float(pow(double(x), e)) a float vector at a time, in two double halves.
template <int kBytes, PowKind kKind>
[[gnu::always_inline]] inline void PowMap(const float* x, float* y, int64_t n) {
  using H = typename Wide<kBytes>::H;
  using D = typename Wide<kBytes>::D;
  constexpr int64_t L = kBytes / 8;  // lanes of H and D
  const auto step = [](const float* in, float* out) {
    H h;
    std::memcpy(&h, in, sizeof(H));
    h = __builtin_convertvector(PowD<kKind>(__builtin_convertvector(h, D)), H);
    std::memcpy(out, &h, sizeof(H));
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) step(x + i, y + i);
  if (i < n) {
    float buf[L] = {};
    std::memcpy(buf, x + i, size_t(n - i) * sizeof(float));
    step(buf, buf);
    std::memcpy(y + i, buf, size_t(n - i) * sizeof(float));
  }
}

template <int kBytes>
[[gnu::always_inline]] inline void PowBody(const float* x, float* y, int64_t n, PowKind kind) {
  switch (kind) {
    case PowKind::kHalf: return PowMap<kBytes, PowKind::kHalf>(x, y, n);
    case PowKind::kOne: return PowMap<kBytes, PowKind::kOne>(x, y, n);
    case PowKind::kTwo: return PowMap<kBytes, PowKind::kTwo>(x, y, n);
    case PowKind::kThree: return PowMap<kBytes, PowKind::kThree>(x, y, n);
    case PowKind::kMinusOne: return PowMap<kBytes, PowKind::kMinusOne>(x, y, n);
    case PowKind::kMinusHalf: return PowMap<kBytes, PowKind::kMinusHalf>(x, y, n);
  }
}

// Eight double partial sums, lane l taking elements e = l (mod 8), as the
// plain kernel (ops/nn/norm.cc) keeps them; GCC splits the 8-lane vectors to
// the target's width.
typedef float F8 __attribute__((vector_size(32)));
typedef double D8 __attribute__((vector_size(64)));
[[gnu::always_inline]] inline void MomentsBody(const float* x, int64_t n, double* sum, double* squares) {
  D8 s = {}, q = {};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    F8 f;
    std::memcpy(&f, x + e, sizeof(f));
    const D8 v = __builtin_convertvector(f, D8);
    s += v;
    q += v * v;
  }
  for (int l = 0; e < n; ++e, ++l) {
    const double v = double(x[e]);
    s[l] += v;
    q[l] += v * v;
  }
  *sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  *squares = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
}

template <int kBytes>
[[gnu::always_inline]] inline void NormalizeBody(const float* x, float* y, int64_t n, double shift, double inv,
                                                 const float* scale, const float* bias) {
  using H = typename Wide<kBytes>::H;
  using D = typename Wide<kBytes>::D;
  constexpr int64_t L = kBytes / 8;
  const auto widen = [](const float* p) {
    H h;
    std::memcpy(&h, p, sizeof(H));
    return __builtin_convertvector(h, D);
  };
  int64_t e = 0;
  for (; e + L <= n; e += L) {
    D v = (widen(x + e) - shift) * inv * widen(scale + e);
    if (bias) v += widen(bias + e);
    const H h = __builtin_convertvector(v, H);
    std::memcpy(y + e, &h, sizeof(H));
  }
  for (; e < n; ++e) {
    double v = (double(x[e]) - shift) * inv * double(scale[e]);
    if (bias) v += double(bias[e]);
    y[e] = float(v);
  }
}

#if defined(__x86_64__)
void MomentsBaseline(const float* x, int64_t n, double* s, double* q) { MomentsBody(x, n, s, q); }
[[gnu::target("avx2,fma")]] void MomentsAvx2(const float* x, int64_t n, double* s, double* q) {
  MomentsBody(x, n, s, q);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void MomentsAvx512(const float* x, int64_t n, double* s,
                                                                                  double* q) {
  MomentsBody(x, n, s, q);
}
void MomentsActive(const float* x, int64_t n, double* s, double* q) {
  switch (ActiveCpuTarget()) {
    case CpuTarget::kAvx512Bf16:
    case CpuTarget::kAvx512: return MomentsAvx512(x, n, s, q);
    case CpuTarget::kAvx2: return MomentsAvx2(x, n, s, q);
    default: return MomentsBaseline(x, n, s, q);
  }
}
#define ONNX_MINI_NORMALIZE_ARGS \
  const float *x, float *y, int64_t n, double shift, double inv, const float *scale, const float *bias
void NormalizeBaseline(ONNX_MINI_NORMALIZE_ARGS) { NormalizeBody<16>(x, y, n, shift, inv, scale, bias); }
[[gnu::target("avx2,fma")]] void NormalizeAvx2(ONNX_MINI_NORMALIZE_ARGS) {
  NormalizeBody<32>(x, y, n, shift, inv, scale, bias);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void NormalizeAvx512(ONNX_MINI_NORMALIZE_ARGS) {
  NormalizeBody<64>(x, y, n, shift, inv, scale, bias);
}
void NormalizeActive(ONNX_MINI_NORMALIZE_ARGS) {
  switch (ActiveCpuTarget()) {
    case CpuTarget::kAvx512Bf16:
    case CpuTarget::kAvx512: return NormalizeAvx512(x, y, n, shift, inv, scale, bias);
    case CpuTarget::kAvx2: return NormalizeAvx2(x, y, n, shift, inv, scale, bias);
    default: return NormalizeBaseline(x, y, n, shift, inv, scale, bias);
  }
}
#undef ONNX_MINI_NORMALIZE_ARGS
#else
void MomentsActive(const float* x, int64_t n, double* s, double* q) { MomentsBody(x, n, s, q); }
void NormalizeActive(const float* x, float* y, int64_t n, double shift, double inv, const float* scale,
                     const float* bias) {
  NormalizeBody<16>(x, y, n, shift, inv, scale, bias);
}
#endif

#define ONNX_MINI_VEC_REDUCE_TARGETS(Name, R, Body, Arg)                                               \
  R Name##Baseline(const float* x, int64_t n) { return Body<16, Arg>(x, n); }                          \
  [[gnu::target("avx2,fma")]] R Name##Avx2(const float* x, int64_t n) { return Body<32, Arg>(x, n); }  \
  [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] R Name##Avx512(const float* x, int64_t n) { \
    return Body<64, Arg>(x, n);                                                                        \
  }                                                                                                    \
  R Name##Active(const float* x, int64_t n) {                                                          \
    switch (ActiveCpuTarget()) {                                                                       \
      case CpuTarget::kAvx512Bf16:                                                                     \
      case CpuTarget::kAvx512: return Name##Avx512(x, n);                                              \
      case CpuTarget::kAvx2: return Name##Avx2(x, n);                                                  \
      default: return Name##Baseline(x, n);                                                            \
    }                                                                                                  \
  }

#define ONNX_MINI_VEC_TARGETS(Name, Body)                                                              \
  void Name##Baseline(const float* x, float* y, int64_t n) { Body<16>(x, y, n); }                      \
  [[gnu::target("avx2,fma")]] void Name##Avx2(const float* x, float* y, int64_t n) { Body<32>(x, y, n); } \
  [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void Name##Avx512(const float* x, float* y, \
                                                                                   int64_t n) {         \
    Body<64>(x, y, n);                                                                                  \
  }                                                                                                     \
  void Name##Active(const float* x, float* y, int64_t n) {                                             \
    switch (ActiveCpuTarget()) {                                                                        \
      case CpuTarget::kAvx512Bf16:                                                                     \
      case CpuTarget::kAvx512: return Name##Avx512(x, y, n);                                           \
      case CpuTarget::kAvx2: return Name##Avx2(x, y, n);                                               \
      default: return Name##Baseline(x, y, n);                                                          \
    }                                                                                                   \
  }

#if defined(__x86_64__)
ONNX_MINI_VEC_TARGETS(Exp, ExpBody)
ONNX_MINI_VEC_TARGETS(Sigmoid, SigmoidBody)
ONNX_MINI_VEC_TARGETS(Silu, SiluBody)
ONNX_MINI_VEC_TARGETS(Softmax, SoftmaxBody)
ONNX_MINI_VEC_TARGETS(Tanh, TanhBody)
ONNX_MINI_VEC_TARGETS(GeluTanh, GeluTanhBody)
ONNX_MINI_VEC_TARGETS(Erf, ErfBody)
ONNX_MINI_VEC_TARGETS(GeluErf, GeluErfBody)
void PowBaseline(const float* x, float* y, int64_t n, PowKind k) { PowBody<16>(x, y, n, k); }
[[gnu::target("avx2,fma")]] void PowAvx2(const float* x, float* y, int64_t n, PowKind k) { PowBody<32>(x, y, n, k); }
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void PowAvx512(const float* x, float* y, int64_t n,
                                                                              PowKind k) {
  PowBody<64>(x, y, n, k);
}
void PowActive(const float* x, float* y, int64_t n, PowKind k) {
  switch (ActiveCpuTarget()) {
    case CpuTarget::kAvx512Bf16:
    case CpuTarget::kAvx512: return PowAvx512(x, y, n, k);
    case CpuTarget::kAvx2: return PowAvx2(x, y, n, k);
    default: return PowBaseline(x, y, n, k);
  }
}
ONNX_MINI_VEC_REDUCE_TARGETS(Sum, double, SumBody, false)
ONNX_MINI_VEC_REDUCE_TARGETS(SumSquares, double, SumBody, true)
ONNX_MINI_VEC_REDUCE_TARGETS(Max, float, ExtremeBody, false)
ONNX_MINI_VEC_REDUCE_TARGETS(Min, float, ExtremeBody, true)
#else
void ExpActive(const float* x, float* y, int64_t n) { ExpBody<16>(x, y, n); }
void SigmoidActive(const float* x, float* y, int64_t n) { SigmoidBody<16>(x, y, n); }
void SiluActive(const float* x, float* y, int64_t n) { SiluBody<16>(x, y, n); }
void SoftmaxActive(const float* x, float* y, int64_t n) { SoftmaxBody<16>(x, y, n); }
void TanhActive(const float* x, float* y, int64_t n) { TanhBody<16>(x, y, n); }
void GeluTanhActive(const float* x, float* y, int64_t n) { GeluTanhBody<16>(x, y, n); }
void ErfActive(const float* x, float* y, int64_t n) { ErfBody<16>(x, y, n); }
void GeluErfActive(const float* x, float* y, int64_t n) { GeluErfBody<16>(x, y, n); }
void PowActive(const float* x, float* y, int64_t n, PowKind k) { PowBody<16>(x, y, n, k); }
double SumActive(const float* x, int64_t n) { return SumBody<16, false>(x, n); }
double SumSquaresActive(const float* x, int64_t n) { return SumBody<16, true>(x, n); }
float MaxActive(const float* x, int64_t n) { return ExtremeBody<16, false>(x, n); }
float MinActive(const float* x, int64_t n) { return ExtremeBody<16, true>(x, n); }
#endif

}  // namespace

void VecExp(const float* x, float* y, int64_t n) { ExpActive(x, y, n); }
void VecSigmoid(const float* x, float* y, int64_t n) { SigmoidActive(x, y, n); }
void VecSilu(const float* x, float* y, int64_t n) { SiluActive(x, y, n); }
void VecSoftmaxRow(const float* x, float* y, int64_t n) { SoftmaxActive(x, y, n); }
void VecTanh(const float* x, float* y, int64_t n) { TanhActive(x, y, n); }
void VecGeluTanh(const float* x, float* y, int64_t n) { GeluTanhActive(x, y, n); }
void VecErf(const float* x, float* y, int64_t n) { ErfActive(x, y, n); }
void VecGeluErf(const float* x, float* y, int64_t n) { GeluErfActive(x, y, n); }
bool VecPowConst(const float* x, float* y, int64_t n, double e) {
  PowKind k;
  if (e == 0.5) k = PowKind::kHalf;
  else if (e == 1) k = PowKind::kOne;
  else if (e == 2) k = PowKind::kTwo;
  else if (e == 3) k = PowKind::kThree;
  else if (e == -1) k = PowKind::kMinusOne;
  else if (e == -0.5) k = PowKind::kMinusHalf;
  else return false;
  PowActive(x, y, n, k);
  return true;
}
void VecRowMoments(const float* x, int64_t n, double* sum, double* squares) { MomentsActive(x, n, sum, squares); }
void VecNormalizeRow(const float* x, float* y, int64_t n, double shift, double inv, const float* scale,
                     const float* bias) {
  NormalizeActive(x, y, n, shift, inv, scale, bias);
}
double VecSumRow(const float* x, int64_t n) { return SumActive(x, n); }
double VecSumSquaresRow(const float* x, int64_t n) { return SumSquaresActive(x, n); }
float VecMaxRow(const float* x, int64_t n) { return MaxActive(x, n); }
float VecMinRow(const float* x, int64_t n) { return MinActive(x, n); }

}  // namespace onnx_mini
