#include "kernels/vec/vec_math.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <limits>

#include "kernels/cpu_dispatch.h"
#include "kernels/vec/float_vector.h"

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
using Wide = float_vector::HalfAndDouble<kBytes>;

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

// The moments in eight double partial sums, as the plain kernel (ops/nn/norm.cc) keeps them.
template <int kBytes>
[[gnu::always_inline]] inline void MomentsBody(const float* x, int64_t n, double* sum, double* squares) {
  float_vector::EightLaneMoments<kBytes> m;
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) m.Add8(x + e);
  m.Finish(x + e, n - e, sum, squares);
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

// One build of every entry point per target: the bodies at 16, 32 and 64
// bytes per vector, each entry carrying its target's attributes.
#define ONNX_MINI_NORMALIZE_ARGS \
  const float *x, float *y, int64_t n, double shift, double inv, const float *scale, const float *bias
#define ONNX_MINI_VEC_BUILD(Target, Bytes, Attr)                                                            \
  struct Target {                                                                                           \
    [[Attr]] static void Exp(const float* x, float* y, int64_t n) { ExpBody<Bytes>(x, y, n); }             \
    [[Attr]] static void Sigmoid(const float* x, float* y, int64_t n) { SigmoidBody<Bytes>(x, y, n); }     \
    [[Attr]] static void Silu(const float* x, float* y, int64_t n) { SiluBody<Bytes>(x, y, n); }           \
    [[Attr]] static void Softmax(const float* x, float* y, int64_t n) { SoftmaxBody<Bytes>(x, y, n); }     \
    [[Attr]] static void Tanh(const float* x, float* y, int64_t n) { TanhBody<Bytes>(x, y, n); }           \
    [[Attr]] static void GeluTanh(const float* x, float* y, int64_t n) { GeluTanhBody<Bytes>(x, y, n); }   \
    [[Attr]] static void Erf(const float* x, float* y, int64_t n) { ErfBody<Bytes>(x, y, n); }             \
    [[Attr]] static void GeluErf(const float* x, float* y, int64_t n) { GeluErfBody<Bytes>(x, y, n); }     \
    [[Attr]] static void Pow(const float* x, float* y, int64_t n, PowKind k) { PowBody<Bytes>(x, y, n, k); } \
    [[Attr]] static void Moments(const float* x, int64_t n, double* s, double* q) { MomentsBody<Bytes>(x, n, s, q); } \
    [[Attr]] static void Normalize(ONNX_MINI_NORMALIZE_ARGS) {                                              \
      NormalizeBody<Bytes>(x, y, n, shift, inv, scale, bias);                                               \
    }                                                                                                       \
    [[Attr]] static double Sum(const float* x, int64_t n) { return SumBody<Bytes, false>(x, n); }          \
    [[Attr]] static double SumSquares(const float* x, int64_t n) { return SumBody<Bytes, true>(x, n); }    \
    [[Attr]] static float Max(const float* x, int64_t n) { return ExtremeBody<Bytes, false>(x, n); }       \
    [[Attr]] static float Min(const float* x, int64_t n) { return ExtremeBody<Bytes, true>(x, n); }        \
  };

ONNX_MINI_VEC_BUILD(Baseline, 16, )
#if defined(__x86_64__)
ONNX_MINI_VEC_BUILD(Avx2, 32, gnu::target("avx2,fma"))
ONNX_MINI_VEC_BUILD(Avx512, 64, gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#endif
#undef ONNX_MINI_VEC_BUILD

// The family's entry points, one set per build.
struct VecEntries {
  void (*exp)(const float*, float*, int64_t);
  void (*sigmoid)(const float*, float*, int64_t);
  void (*silu)(const float*, float*, int64_t);
  void (*softmax)(const float*, float*, int64_t);
  void (*tanh)(const float*, float*, int64_t);
  void (*gelu_tanh)(const float*, float*, int64_t);
  void (*erf)(const float*, float*, int64_t);
  void (*gelu_erf)(const float*, float*, int64_t);
  void (*pow)(const float*, float*, int64_t, PowKind);
  void (*moments)(const float*, int64_t, double*, double*);
  void (*normalize)(ONNX_MINI_NORMALIZE_ARGS);
  double (*sum)(const float*, int64_t);
  double (*sum_squares)(const float*, int64_t);
  float (*max)(const float*, int64_t);
  float (*min)(const float*, int64_t);
};
#undef ONNX_MINI_NORMALIZE_ARGS

template <class B>
constexpr VecEntries EntriesOf() {
  return {B::Exp, B::Sigmoid,  B::Silu,      B::Softmax, B::Tanh,       B::GeluTanh, B::Erf, B::GeluErf,
          B::Pow, B::Moments, B::Normalize, B::Sum,     B::SumSquares, B::Max,      B::Min};
}

const CpuDispatchTable<VecEntries>& VecTable() {
  static const CpuDispatchTable<VecEntries> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, EntriesOf<Avx512>()},
      {CpuTarget::kAvx2, EntriesOf<Avx2>()},
#endif
      {CpuTarget::kBaseline, EntriesOf<Baseline>()},
  };
  return table;
}
const VecEntries& Vec() { return VecTable().Active(); }

}  // namespace

CpuTarget VecMathTarget() { return VecTable().ActiveBuild().target; }

void VecExp(const float* x, float* y, int64_t n) { Vec().exp(x, y, n); }
void VecSigmoid(const float* x, float* y, int64_t n) { Vec().sigmoid(x, y, n); }
void VecSilu(const float* x, float* y, int64_t n) { Vec().silu(x, y, n); }
void VecSoftmaxRow(const float* x, float* y, int64_t n) { Vec().softmax(x, y, n); }
void VecTanh(const float* x, float* y, int64_t n) { Vec().tanh(x, y, n); }
void VecGeluTanh(const float* x, float* y, int64_t n) { Vec().gelu_tanh(x, y, n); }
void VecErf(const float* x, float* y, int64_t n) { Vec().erf(x, y, n); }
void VecGeluErf(const float* x, float* y, int64_t n) { Vec().gelu_erf(x, y, n); }
bool VecPowConst(const float* x, float* y, int64_t n, double e) {
  PowKind k;
  if (e == 0.5) k = PowKind::kHalf;
  else if (e == 1) k = PowKind::kOne;
  else if (e == 2) k = PowKind::kTwo;
  else if (e == 3) k = PowKind::kThree;
  else if (e == -1) k = PowKind::kMinusOne;
  else if (e == -0.5) k = PowKind::kMinusHalf;
  else return false;
  Vec().pow(x, y, n, k);
  return true;
}
void VecRowMoments(const float* x, int64_t n, double* sum, double* squares) { Vec().moments(x, n, sum, squares); }
void VecNormalizeRow(const float* x, float* y, int64_t n, double shift, double inv, const float* scale,
                     const float* bias) {
  Vec().normalize(x, y, n, shift, inv, scale, bias);
}
double VecSumRow(const float* x, int64_t n) { return Vec().sum(x, n); }
double VecSumSquaresRow(const float* x, int64_t n) { return Vec().sum_squares(x, n); }
float VecMaxRow(const float* x, int64_t n) { return Vec().max(x, n); }
float VecMinRow(const float* x, int64_t n) { return Vec().min(x, n); }

}  // namespace onnx_mini
