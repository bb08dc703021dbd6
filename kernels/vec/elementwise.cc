#include "kernels/vec/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "kernels/vec/float_vector.h"

// Vectors pass by value only between always-inlined functions, so the
// ABI notes GCC gives for wide vectors in baseline code do not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

using float_vector::Load;
using float_vector::Store;
using float_vector::V;

// One element of each kind: the reference, and the tails of the vector loops.
// The comparisons are written as the ops' plain loops wrote them, so NaN
// takes the same branch (Relu and HardSigmoid of NaN give 0 and 1).
template <VecActivationKind K>
[[gnu::always_inline]] inline float ActivationOne(float x, const VecActivationParams& p) {
  if constexpr (K == VecActivationKind::kRelu) return x > 0 ? x : 0.0f;
  else if constexpr (K == VecActivationKind::kLeakyRelu) return x < 0 ? p.alpha * x : x;
  else if constexpr (K == VecActivationKind::kClip) {
    x = x < p.lo ? p.lo : x;
    return x > p.hi ? p.hi : x;
  } else if constexpr (K == VecActivationKind::kHardSigmoid) {
    return std::max(0.0f, std::min(1.0f, p.alpha * x + p.beta));
  } else {
    return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
  }
}

// std::min(1, t) is (t < 1 ? t : 1) and std::max(0, m) is (0 < m ? m : 0).
template <VecActivationKind K, class F>
[[gnu::always_inline]] inline F ActivationV(F x, const VecActivationParams& p) {
  const F zero = {};
  if constexpr (K == VecActivationKind::kRelu) return x > zero ? x : zero;
  else if constexpr (K == VecActivationKind::kLeakyRelu) return x < zero ? x * p.alpha : x;
  else if constexpr (K == VecActivationKind::kClip) {
    const F lo = zero + p.lo, hi = zero + p.hi;
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
  } else {
    const F one = zero + 1.0f;
    F t;
    if constexpr (K == VecActivationKind::kHardSigmoid) t = x * p.alpha + p.beta;
    else t = x / 6.0f + 0.5f;
    t = t < one ? t : one;
    t = zero < t ? t : zero;
    if constexpr (K == VecActivationKind::kHardSigmoid) return t;
    else return x * t;
  }
}

template <int kBytes, VecActivationKind K>
[[gnu::always_inline]] inline void ActivationBody(const VecActivationParams& p, const float* x, float* y, int64_t n) {
  using F = typename V<kBytes>::F;
  constexpr int64_t L = V<kBytes>::kLanes;
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const F a = ActivationV<K>(Load<F>(x + i), p), b = ActivationV<K>(Load<F>(x + i + L), p);
    Store(y + i, a);
    Store(y + i + L, b);
  }
  for (; i + L <= n; i += L) Store(y + i, ActivationV<K>(Load<F>(x + i), p));
  for (; i < n; ++i) y[i] = ActivationOne<K>(x[i], p);
}

template <VecBinaryKind K, class F>
[[gnu::always_inline]] inline F BinaryOp(F a, F b) {
  if constexpr (K == VecBinaryKind::kAdd) return a + b;
  else if constexpr (K == VecBinaryKind::kSub) return a - b;
  else if constexpr (K == VecBinaryKind::kMul) return a * b;
  else if constexpr (K == VecBinaryKind::kDiv) return a / b;
  else {
    // b wins where it is NaN, found on the bits: GCC lowers a float
    // self-comparison here (b != b) lane by lane, an integer one not.
    using I = decltype(b < a);
    const I nan = ((I)b & 0x7fffffff) > 0x7f800000;
    const F m = K == VecBinaryKind::kMax ? (b > a ? b : a) : (b < a ? b : a);
    return (F)((nan & (I)b) | (~nan & (I)m));
  }
}

template <VecBinaryKind K>
[[gnu::always_inline]] inline float BinaryOne(float a, float b) {
  if constexpr (K == VecBinaryKind::kAdd) return a + b;
  else if constexpr (K == VecBinaryKind::kSub) return a - b;
  else if constexpr (K == VecBinaryKind::kMul) return a * b;
  else if constexpr (K == VecBinaryKind::kDiv) return a / b;
  else if constexpr (K == VecBinaryKind::kMax) return (b > a || b != b) ? b : a;
  else return (b < a || b != b) ? b : a;
}

// An operand's vector at i: loaded (step 1) or the splat scalar (step 0).
template <int kStep, class F>
[[gnu::always_inline]] inline F LoadOr(const float* p, int64_t i, F splat) {
  if constexpr (kStep) return Load<F>(p + i);
  else return splat;
}

// kAStep / kBStep: 1 for an array, 0 for a scalar operand.
template <int kBytes, VecBinaryKind K, int kAStep, int kBStep>
[[gnu::always_inline]] inline void BinaryBody(const float* a, const float* b, float* out, int64_t n) {
  using F = typename V<kBytes>::F;
  constexpr int64_t L = V<kBytes>::kLanes;
  const F zero = {};
  const F sa = zero + a[0], sb = zero + b[0];  // n > 0: the caller returns on empty
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const F r0 = BinaryOp<K>(LoadOr<kAStep>(a, i, sa), LoadOr<kBStep>(b, i, sb));
    const F r1 = BinaryOp<K>(LoadOr<kAStep>(a, i + L, sa), LoadOr<kBStep>(b, i + L, sb));
    Store(out + i, r0);
    Store(out + i + L, r1);
  }
  for (; i + L <= n; i += L) Store(out + i, BinaryOp<K>(LoadOr<kAStep>(a, i, sa), LoadOr<kBStep>(b, i, sb)));
  for (; i < n; ++i) out[i] = BinaryOne<K>(a[i * kAStep], b[i * kBStep]);
}

template <int kBytes>
[[gnu::always_inline]] inline void ActivationSwitch(VecActivationKind kind, const VecActivationParams& p,
                                                    const float* x, float* y, int64_t n) {
  switch (kind) {
    case VecActivationKind::kRelu: return ActivationBody<kBytes, VecActivationKind::kRelu>(p, x, y, n);
    case VecActivationKind::kLeakyRelu: return ActivationBody<kBytes, VecActivationKind::kLeakyRelu>(p, x, y, n);
    case VecActivationKind::kClip: return ActivationBody<kBytes, VecActivationKind::kClip>(p, x, y, n);
    case VecActivationKind::kHardSigmoid: return ActivationBody<kBytes, VecActivationKind::kHardSigmoid>(p, x, y, n);
    case VecActivationKind::kHardSwish: return ActivationBody<kBytes, VecActivationKind::kHardSwish>(p, x, y, n);
  }
}

template <int kBytes, VecBinaryKind K>
[[gnu::always_inline]] inline void BinarySteps(const float* a, int64_t as, const float* b, int64_t bs, float* out,
                                               int64_t n) {
  if (as && bs) BinaryBody<kBytes, K, 1, 1>(a, b, out, n);
  else if (as) BinaryBody<kBytes, K, 1, 0>(a, b, out, n);
  else if (bs) BinaryBody<kBytes, K, 0, 1>(a, b, out, n);
  else for (int64_t i = 0; i < n; ++i) out[i] = BinaryOne<K>(a[0], b[0]);
}

template <int kBytes>
[[gnu::always_inline]] inline void BinarySwitch(VecBinaryKind kind, const float* a, int64_t as, const float* b,
                                                int64_t bs, float* out, int64_t n) {
  switch (kind) {
    case VecBinaryKind::kAdd: return BinarySteps<kBytes, VecBinaryKind::kAdd>(a, as, b, bs, out, n);
    case VecBinaryKind::kSub: return BinarySteps<kBytes, VecBinaryKind::kSub>(a, as, b, bs, out, n);
    case VecBinaryKind::kMul: return BinarySteps<kBytes, VecBinaryKind::kMul>(a, as, b, bs, out, n);
    case VecBinaryKind::kDiv: return BinarySteps<kBytes, VecBinaryKind::kDiv>(a, as, b, bs, out, n);
    case VecBinaryKind::kMax: return BinarySteps<kBytes, VecBinaryKind::kMax>(a, as, b, bs, out, n);
    case VecBinaryKind::kMin: return BinarySteps<kBytes, VecBinaryKind::kMin>(a, as, b, bs, out, n);
  }
}

// Blocks of 64 OR their hits without a branch (a vector loop); the next
// block only while none is found.
[[gnu::always_inline]] inline bool AnyNonFiniteBody(const float* x, int64_t n) {
  int64_t i = 0;
  for (; i < n; i += 64) {
    const int64_t end = std::min(n, i + 64);
    uint32_t hits = 0;
    for (int64_t j = i; j < end; ++j) {
      uint32_t bits;
      std::memcpy(&bits, x + j, sizeof(bits));
      hits |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (hits) return true;
  }
  return false;
}

#define ONNX_MINI_ELEMENTWISE_BUILD(Target, Bytes, Attr)                                                       \
  struct Target {                                                                                              \
    [[Attr]] static void Activation(VecActivationKind k, const VecActivationParams& p, const float* x, float* y, \
                                    int64_t n) {                                                               \
      ActivationSwitch<Bytes>(k, p, x, y, n);                                                                  \
    }                                                                                                          \
    [[Attr]] static void Binary(VecBinaryKind k, const float* a, int64_t as, const float* b, int64_t bs,       \
                                float* out, int64_t n) {                                                       \
      BinarySwitch<Bytes>(k, a, as, b, bs, out, n);                                                            \
    }                                                                                                          \
    [[Attr]] static bool AnyNonFinite(const float* x, int64_t n) { return AnyNonFiniteBody(x, n); }            \
  };

ONNX_MINI_ELEMENTWISE_BUILD(Baseline, 16, )
#if defined(__x86_64__)
ONNX_MINI_ELEMENTWISE_BUILD(Avx2, 32, gnu::target("avx2,fma"))
ONNX_MINI_ELEMENTWISE_BUILD(Avx512, 64, gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))
#endif
#undef ONNX_MINI_ELEMENTWISE_BUILD

struct ElementwiseEntries {
  void (*activation)(VecActivationKind, const VecActivationParams&, const float*, float*, int64_t);
  void (*binary)(VecBinaryKind, const float*, int64_t, const float*, int64_t, float*, int64_t);
  bool (*any_non_finite)(const float*, int64_t);
};

const CpuDispatchTable<ElementwiseEntries>& Table() {
  static const CpuDispatchTable<ElementwiseEntries> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, {Avx512::Activation, Avx512::Binary, Avx512::AnyNonFinite}},
      {CpuTarget::kAvx2, {Avx2::Activation, Avx2::Binary, Avx2::AnyNonFinite}},
#endif
      {CpuTarget::kBaseline, {Baseline::Activation, Baseline::Binary, Baseline::AnyNonFinite}},
  };
  return table;
}

template <VecActivationKind K>
void ActivationLoop(const VecActivationParams& p, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ActivationOne<K>(x[i], p);
}
template <VecBinaryKind K>
void BinaryLoop(const float* a, int64_t as, const float* b, int64_t bs, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = BinaryOne<K>(a[i * as], b[i * bs]);
}

}  // namespace

CpuTarget VecElementwiseTarget() { return Table().ActiveBuild().target; }

void VecActivation(VecActivationKind kind, const VecActivationParams& p, const float* x, float* y, int64_t n) {
  if (n > 0) Table().Active().activation(kind, p, x, y, n);
}

void VecBinary(VecBinaryKind kind, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
               int64_t n) {
  if (n > 0) Table().Active().binary(kind, a, a_step, b, b_step, out, n);
}

bool VecAnyNonFinite(const float* x, int64_t n) { return n > 0 && Table().Active().any_non_finite(x, n); }

// The plain loops (no vector types, no target attributes).
bool VecAnyNonFiniteReference(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return true;
  return false;
}

void VecActivationReference(VecActivationKind kind, const VecActivationParams& p, const float* x, float* y,
                            int64_t n) {
  switch (kind) {
    case VecActivationKind::kRelu: return ActivationLoop<VecActivationKind::kRelu>(p, x, y, n);
    case VecActivationKind::kLeakyRelu: return ActivationLoop<VecActivationKind::kLeakyRelu>(p, x, y, n);
    case VecActivationKind::kClip: return ActivationLoop<VecActivationKind::kClip>(p, x, y, n);
    case VecActivationKind::kHardSigmoid: return ActivationLoop<VecActivationKind::kHardSigmoid>(p, x, y, n);
    case VecActivationKind::kHardSwish: return ActivationLoop<VecActivationKind::kHardSwish>(p, x, y, n);
  }
}

void VecBinaryReference(VecBinaryKind kind, const float* a, int64_t a_step, const float* b, int64_t b_step,
                        float* out, int64_t n) {
  switch (kind) {
    case VecBinaryKind::kAdd: return BinaryLoop<VecBinaryKind::kAdd>(a, a_step, b, b_step, out, n);
    case VecBinaryKind::kSub: return BinaryLoop<VecBinaryKind::kSub>(a, a_step, b, b_step, out, n);
    case VecBinaryKind::kMul: return BinaryLoop<VecBinaryKind::kMul>(a, a_step, b, b_step, out, n);
    case VecBinaryKind::kDiv: return BinaryLoop<VecBinaryKind::kDiv>(a, a_step, b, b_step, out, n);
    case VecBinaryKind::kMax: return BinaryLoop<VecBinaryKind::kMax>(a, a_step, b, b_step, out, n);
    case VecBinaryKind::kMin: return BinaryLoop<VecBinaryKind::kMin>(a, a_step, b, b_step, out, n);
  }
}

}  // namespace onnx_mini
