// Elementwise ops of one input: Neg, Abs, Sqrt, Exp, Log, Tanh, Erf, Sigmoid,
// Reciprocal, Gelu, Relu, Ceil, Floor, Not, BitwiseNot; the activations with attributes
// (Elu, Selu, Celu, LeakyRelu, HardSigmoid, HardSwish, Softplus, Softsign,
// Mish, Swish, ThresholdedRelu, Shrink), Sign, Round, the trigonometric and
// hyperbolic functions, IsNaN, IsInf; Clip and Dropout. 16-bit floats compute
// in float.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ops/common.h"
#include "ops/ops.h"
#include "kernels/vec/elementwise.h"
#include "kernels/vec/vec_math.h"
#include "kernels/vec/sigmoid.h"
#include "runtime/cpu.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum class UnaryOp { kNeg, kAbs, kRelu, kCeil, kFloor, kSqrt, kExp, kLog, kTanh, kErf, kSigmoid, kReciprocal, kGelu, kNot, kBitwiseNot,
  kElu, kSelu, kCelu, kLeakyRelu, kHardSigmoid, kHardSwish, kSoftplus, kSoftsign, kMish, kSwish, kThresholdedRelu,
  kShrink, kSign, kRound, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh,
  kIsNaN, kIsInf };

// The attributes of the ops that have any, parsed once with each op's defaults.
struct UnaryParams {
  double alpha = 0, gamma = 0, beta = 0;  // Elu, Selu, Celu, LeakyRelu, HardSigmoid, Swish, ThresholdedRelu
  double lambd = 0, bias = 0;             // Shrink
  bool tanh_gelu = false;                 // Gelu
  bool detect_positive = true, detect_negative = true;  // IsInf

  template <UnaryOp Kind>
  static UnaryParams Parse(const Node& node) {
    UnaryParams p;
    const auto f = [&](const char* name, double fallback) { return double(node.attr_float(name, float(fallback))); };
    switch (Kind) {
      case UnaryOp::kGelu: p.tanh_gelu = node.attr_string("approximate", "none") == "tanh"; break;
      case UnaryOp::kElu: case UnaryOp::kCelu: case UnaryOp::kThresholdedRelu: case UnaryOp::kSwish:
        p.alpha = f("alpha", 1.0); break;
      case UnaryOp::kSelu:  // Selu-1's defaults are the constants to four places
        p.alpha = f("alpha", node.opset < 6 ? 1.6732 : 1.67326319217681884765625);
        p.gamma = f("gamma", node.opset < 6 ? 1.0507 : 1.05070102214813232421875);
        break;
      case UnaryOp::kLeakyRelu: p.alpha = f("alpha", 0.01); break;
      case UnaryOp::kHardSigmoid: p.alpha = f("alpha", 0.2); p.beta = f("beta", 0.5); break;
      case UnaryOp::kShrink: p.lambd = f("lambd", 0.5); p.bias = f("bias", 0.0); break;
      case UnaryOp::kIsInf:
        p.detect_positive = node.attr_int("detect_positive", 1) != 0;
        p.detect_negative = node.attr_int("detect_negative", 1) != 0;
        break;
      default: break;
    }
    return p;
  }
};

// log(1 + exp(x)) without overflow for large x.
template <class A>
A Softplus(A x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <UnaryOp Kind, class A>
A Apply(A x, const UnaryParams& p) {
  if constexpr (std::is_integral_v<A> && (Kind == UnaryOp::kNeg || Kind == UnaryOp::kAbs)) {
    // Integer negation wraps (-MIN is MIN), as ONNX integer arithmetic does.
    using U = std::make_unsigned_t<A>;
    const A negated = A(U(0) - U(x));
    if constexpr (Kind == UnaryOp::kNeg) return negated;
    else return x < 0 ? negated : x;
  } else if constexpr (Kind == UnaryOp::kNeg) return A(-x);
  else if constexpr (Kind == UnaryOp::kAbs) return x < 0 ? A(-x) : x;
  else if constexpr (Kind == UnaryOp::kRelu) return x > 0 ? x : A(0);
  else if constexpr (Kind == UnaryOp::kCeil) return std::ceil(x);
  else if constexpr (Kind == UnaryOp::kFloor) return std::floor(x);
  else if constexpr (Kind == UnaryOp::kSqrt) return std::sqrt(x);
  else if constexpr (Kind == UnaryOp::kExp) return std::exp(x);
  else if constexpr (Kind == UnaryOp::kLog) return std::log(x);
  else if constexpr (Kind == UnaryOp::kTanh) return std::tanh(x);
  else if constexpr (Kind == UnaryOp::kErf) return std::erf(x);
  else if constexpr (Kind == UnaryOp::kSigmoid) return Sigmoid(x);
  else if constexpr (Kind == UnaryOp::kReciprocal) return A(1) / x;
  else if constexpr (Kind == UnaryOp::kElu) return x < 0 ? A(p.alpha) * (std::exp(x) - A(1)) : x;
  else if constexpr (Kind == UnaryOp::kSelu)
    return A(p.gamma) * (x > 0 ? x : A(p.alpha) * std::exp(x) - A(p.alpha));
  else if constexpr (Kind == UnaryOp::kCelu)
    return std::max(A(0), x) + std::min(A(0), A(p.alpha) * (std::exp(x / A(p.alpha)) - A(1)));
  else if constexpr (Kind == UnaryOp::kLeakyRelu) return x < 0 ? A(p.alpha) * x : x;
  else if constexpr (Kind == UnaryOp::kHardSigmoid) return std::max(A(0), std::min(A(1), A(p.alpha) * x + A(p.beta)));
  else if constexpr (Kind == UnaryOp::kHardSwish) return x * std::max(A(0), std::min(A(1), x / A(6) + A(0.5)));
  else if constexpr (Kind == UnaryOp::kSoftplus) return Softplus(x);
  else if constexpr (Kind == UnaryOp::kSoftsign) return x / (A(1) + std::fabs(x));
  else if constexpr (Kind == UnaryOp::kMish) return x * std::tanh(Softplus(x));
  else if constexpr (Kind == UnaryOp::kSwish) return x * Sigmoid(A(p.alpha) * x);
  else if constexpr (Kind == UnaryOp::kThresholdedRelu) return x > A(p.alpha) ? x : A(0);
  else if constexpr (Kind == UnaryOp::kShrink) {
    if constexpr (std::is_integral_v<A>) {
      // Integers: the float arithmetic of the definition, converted back
      // without undefined behaviour.
      const double v = double(x);
      return A(v < -p.lambd ? FloatToInt64(v + p.bias) : v > p.lambd ? FloatToInt64(v - p.bias) : 0);
    } else {
      return x < A(-p.lambd) ? x + A(p.bias) : x > A(p.lambd) ? x - A(p.bias) : A(0);
    }
  } else if constexpr (Kind == UnaryOp::kSign) {
    if constexpr (std::is_unsigned_v<A>) return x > 0 ? A(1) : A(0);
    else if (x != x) return x;  // NaN
    else return x > 0 ? A(1) : x < 0 ? A(-1) : A(0);
  }
  else if constexpr (Kind == UnaryOp::kRound) return std::nearbyint(x);  // the default mode: half to even
  else if constexpr (Kind == UnaryOp::kSin) return std::sin(x);
  else if constexpr (Kind == UnaryOp::kCos) return std::cos(x);
  else if constexpr (Kind == UnaryOp::kTan) return std::tan(x);
  else if constexpr (Kind == UnaryOp::kAsin) return std::asin(x);
  else if constexpr (Kind == UnaryOp::kAcos) return std::acos(x);
  else if constexpr (Kind == UnaryOp::kAtan) return std::atan(x);
  else if constexpr (Kind == UnaryOp::kSinh) return std::sinh(x);
  else if constexpr (Kind == UnaryOp::kCosh) return std::cosh(x);
  else if constexpr (Kind == UnaryOp::kAsinh) return std::asinh(x);
  else if constexpr (Kind == UnaryOp::kAcosh) return std::acosh(x);
  else if constexpr (Kind == UnaryOp::kAtanh) return std::atanh(x);
  else {  // Gelu: exact with erf, or the tanh approximation
    if (p.tanh_gelu) return A(0.5) * x * (A(1) + std::tanh(A(0.7978845608028654) * (x + A(0.044715) * x * x * x)));
    return A(0.5) * x * (A(1) + std::erf(x * A(0.7071067811865476)));
  }
}

// The element types each op computes on (its row's type set).
template <UnaryOp Kind> struct UnaryTypes { using type = FloatTypes; };
template <> struct UnaryTypes<UnaryOp::kNeg> { using type = SignedTypes; };
template <> struct UnaryTypes<UnaryOp::kRelu> { using type = SignedTypes; };
template <> struct UnaryTypes<UnaryOp::kAbs> { using type = NumericTypes; };
template <> struct UnaryTypes<UnaryOp::kNot> { using type = TypeList<bool>; };
template <> struct UnaryTypes<UnaryOp::kBitwiseNot> { using type = IntTypes; };
template <> struct UnaryTypes<UnaryOp::kShrink> { using type = NumericTypes; };
template <> struct UnaryTypes<UnaryOp::kSign> { using type = NumericTypes; };
using FloatAndFloat8Types = Join<FloatTypes, Float8Types>;
template <> struct UnaryTypes<UnaryOp::kIsNaN> { using type = FloatAndFloat8Types; };
template <> struct UnaryTypes<UnaryOp::kIsInf> { using type = FloatAndFloat8Types; };

// The tests of a value's class, whose output is bool.
constexpr bool IsPredicate(UnaryOp op) { return op == UnaryOp::kIsNaN || op == UnaryOp::kIsInf; }

template <class T>
double ToDouble(T v) {
  if constexpr (std::is_floating_point_v<T>) return v;
  else return double(ToFloat(v));
}

// Runs a float32 kernel k(x, y, n) over a float array, or over a 16-bit one
// through a float buffer a chunk at a time, in chunks across threads.
template <class T, class K>
void ThroughFloat(const T* src, T* dst, int64_t n, int threads, const K& k) {
  ParallelElements(n, threads, [&](int64_t i0, int64_t i1) {
    if constexpr (std::is_same_v<T, float>) {
      k(src + i0, dst + i0, i1 - i0);
    } else {
      constexpr int64_t kChunk = 512;
      float buf[kChunk];
      for (int64_t i = i0; i < i1; i += kChunk) {
        const int64_t len = std::min(kChunk, i1 - i);
        if constexpr (std::is_same_v<T, Float16>) Float16ToFloat(src + i, buf, len);
        else for (int64_t e = 0; e < len; ++e) buf[e] = Widen(src[i + e]);
        k(buf, buf, len);
        if constexpr (std::is_same_v<T, Float16>) FloatToFloat16(buf, dst + i, len);
        else for (int64_t e = 0; e < len; ++e) dst[i + e] = Narrow<T>(buf[e]);
      }
    }
  });
}

// The activations with a kernel in kernels/vec/elementwise.h.
template <UnaryOp Kind>
constexpr bool kVecActivation = Kind == UnaryOp::kRelu || Kind == UnaryOp::kLeakyRelu ||
                                Kind == UnaryOp::kHardSigmoid || Kind == UnaryOp::kHardSwish;

template <UnaryOp Kind>
class UnaryOpKernel : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const UnaryParams params = UnaryParams::Parse<Kind>(node);
    if (Kind == UnaryOp::kCelu && params.alpha == 0)  // Celu divides by alpha
      return absl::InvalidArgumentError(node.Describe() + ": Celu's alpha must not be 0");
    return std::unique_ptr<Op>(new UnaryOpKernel(params));
  }
  explicit UnaryOpKernel(const UnaryParams& params) : params_(params) {}
  absl::Status Infer(InferContext& ctx) const override {
    ValueType out = ctx.input(0);
    if (IsPredicate(Kind)) out.dtype = DType::kBool;
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t n = in.size();
    return Dispatch<typename UnaryTypes<Kind>::type>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      if constexpr (IsPredicate(Kind)) {
        bool* dst = out.data<bool>();
        const bool pos = params_.detect_positive, neg = params_.detect_negative;
        ParallelElements(n, ctx.threads(), [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) {
            const double v = ToDouble(src[i]);
            if constexpr (Kind == UnaryOp::kIsNaN) dst[i] = std::isnan(v);
            else dst[i] = std::isinf(v) && (v > 0 ? pos : neg);
          }
        });
      } else if constexpr (Kind == UnaryOp::kNot) {
        T* dst = out.data<T>();
        for (int64_t i = 0; i < n; ++i) dst[i] = !src[i];
      } else if constexpr (Kind == UnaryOp::kBitwiseNot) {
        T* dst = out.data<T>();
        for (int64_t i = 0; i < n; ++i) dst[i] = T(~src[i]);
      } else {
        T* dst = out.data<T>();
        using A = typename Arith<T>::type;
        if constexpr (kVecActivation<Kind> && (std::is_same_v<T, float> || std::is_same_v<T, Float16> ||
                                               std::is_same_v<T, BFloat16>)) {
          constexpr VecActivationKind kAct = Kind == UnaryOp::kRelu        ? VecActivationKind::kRelu
                                             : Kind == UnaryOp::kLeakyRelu ? VecActivationKind::kLeakyRelu
                                             : Kind == UnaryOp::kHardSigmoid ? VecActivationKind::kHardSigmoid
                                                                             : VecActivationKind::kHardSwish;
          VecActivationParams p;
          p.alpha = float(params_.alpha);
          p.beta = float(params_.beta);
          ThroughFloat(src, dst, n, ctx.threads(),
                       [&](const float* x, float* y, int64_t len) { VecActivation(kAct, p, x, y, len); });
          return;
        }
        constexpr bool kVec = std::is_same_v<T, float> &&
                              (Kind == UnaryOp::kExp || Kind == UnaryOp::kSigmoid || Kind == UnaryOp::kSwish ||
                               Kind == UnaryOp::kTanh || Kind == UnaryOp::kErf || Kind == UnaryOp::kGelu);
        // Tanh, Erf and Gelu keep libm's plain loop on the baseline target (the reference).
        constexpr bool kLibmReference = Kind == UnaryOp::kTanh || Kind == UnaryOp::kErf || Kind == UnaryOp::kGelu;
        if (kVec && (Kind != UnaryOp::kSwish || params_.alpha == 1) &&
            (!kLibmReference || VecMathVectorized())) {
          // The vectorized float path (kernels/vec/vec_math.h), in chunks across threads.
          ParallelElements(n, ctx.threads(), [&](int64_t i, int64_t end) {
            const int64_t len = end - i;
            if constexpr (!kVec) return;
            else if constexpr (Kind == UnaryOp::kExp) VecExp(src + i, dst + i, len);
            else if constexpr (Kind == UnaryOp::kSigmoid) VecSigmoid(src + i, dst + i, len);
            else if constexpr (Kind == UnaryOp::kTanh) VecTanh(src + i, dst + i, len);
            else if constexpr (Kind == UnaryOp::kErf) VecErf(src + i, dst + i, len);
            else if constexpr (Kind == UnaryOp::kGelu) (params_.tanh_gelu ? VecGeluTanh : VecGeluErf)(src + i, dst + i, len);
            else VecSilu(src + i, dst + i, len);
          });
          return;
        }
        ParallelElements(n, ctx.threads(), [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) dst[i] = Narrow<T>(Apply<Kind, A>(Widen(src[i]), params_));
        });
      }
    });
  }

 private:
  UnaryParams params_;
};

template <UnaryOp Kind>
OpDef Unary(const char* name, int since) {
  if constexpr (IsPredicate(Kind))
    return {kOnnxDomain, name, Versions{since}, "T", "B", {{"T", UnaryTypes<Kind>::type::set()}, {"B", kBool}},
            UnaryOpKernel<Kind>::Create};
  return {kOnnxDomain, name, Versions{since}, "T", "T", {{"T", UnaryTypes<Kind>::type::set()}},
          UnaryOpKernel<Kind>::Create, InPlace(Out{0}, In{0})};
}

// ---- Clip: bounds from attributes (before opset 11), then from optional scalar inputs ----

class ClipOp : public Op {
 public:
  explicit ClipOp(const Node& node)
      : bounds_are_inputs_(node.opset >= 11), has_min_(node.attr("min") != nullptr), has_max_(node.attr("max") != nullptr),
        min_(node.attr_float("min", 0)), max_(node.attr_float("max", 0)) {}

  absl::Status Infer(InferContext& ctx) const override {
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      for (const Dim& d : *ctx.input(i).dims)
        if (d.known() && d.value != 1)
          return ctx.Error(absl::StrCat(i == 1 ? "min" : "max", " must be a scalar, got shape ",
                                        DimsToString(*ctx.input(i).dims)));
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t n = in.size();
    return Dispatch<NumericTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      // An absent bound clips nothing (infinities stay).
      A lo = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
      A hi = std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
      if (bounds_are_inputs_) {
        if (const Tensor* t = ctx.input(1)) lo = Widen(t->data<T>()[0]);
        if (const Tensor* t = ctx.input(2)) hi = Widen(t->data<T>()[0]);
      } else {
        if (has_min_) lo = A(min_);
        if (has_max_) hi = A(max_);
      }
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        VecActivationParams p;
        p.lo = lo;
        p.hi = hi;
        ThroughFloat(src, dst, n, ctx.threads(),
                     [&](const float* x, float* y, int64_t len) { VecActivation(VecActivationKind::kClip, p, x, y, len); });
        return;
      }
      // max, then min: with min > max every element becomes max; NaN stays NaN.
      ParallelElements(n, ctx.threads(), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          A v = Widen(src[i]);
          v = v < lo ? lo : v;
          v = v > hi ? hi : v;
          dst[i] = Narrow<T>(v);
        }
      });
    });
  }

 private:
  bool bounds_are_inputs_, has_min_, has_max_;
  float min_, max_;
};

// ---- Dropout ----
// Inference is the identity with a mask of ones. Training (is_test = 0 before
// opset 7, as those versions define it; training_mode = true from opset 12)
// drops each element with probability `ratio` and scales the rest by
// 1 / (1 - ratio). Opsets 7 to 11 leave the mode to the runtime: inference.

struct DropoutPlan : OpPlan {
  bool training = false;
  double ratio = 0;
};

class DropoutOp : public Op {
 public:
  explicit DropoutOp(const Node& node)
      : mode_inputs_(node.opset >= 12), legacy_training_(node.opset < 7 && node.attr_int("is_test", 0) == 0),
        ratio_(node.attr_float("ratio", 0.5f)), has_seed_(node.attr("seed") != nullptr),
        seed_(uint64_t(node.attr_int("seed", 0))) {}

  absl::Status Infer(InferContext& ctx) const override {
    ValueType mask = ctx.input(0);
    if (ctx.opset() >= 10) mask.dtype = DType::kBool;  // before, the mask has the data's type
    ctx.set_output(0, ctx.input(0));
    ctx.set_output(1, mask);
    auto plan = std::make_shared<DropoutPlan>();
    plan->training = legacy_training_;
    plan->ratio = ratio_;
    if (mode_inputs_) {
      plan->training = false;
      plan->ratio = 0.5;
      if (ctx.has_input(2)) {
        const Tensor* t = ctx.value(2);
        if (t == nullptr) return absl::OkStatus();  // known at run time
        if (t->size() != 1) return ctx.Error(absl::StrCat("training_mode must be a scalar, got shape ", ShapeToString(t->shape())));
        plan->training = t->data<bool>()[0];
      }
      if (plan->training && ctx.has_input(1)) {
        const Tensor* r = ctx.value(1);
        if (r == nullptr) return absl::OkStatus();
        if (r->size() != 1) return ctx.Error(absl::StrCat("ratio must be a scalar, got shape ", ShapeToString(r->shape())));
        plan->ratio = GetDouble(*r, 0);
      }
    }
    if (plan->training && !(plan->ratio >= 0 && plan->ratio < 1))
      return ctx.Error(absl::StrCat("ratio must be in [0, 1), got ", plan->ratio));
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const DropoutPlan& plan = ctx.plan<DropoutPlan>();
    const bool with_mask = ctx.output_requested(1);
    Tensor* mask = with_mask ? &ctx.output(1) : nullptr;
    const int64_t n = in.size();
    if (!plan.training || plan.ratio == 0) {
      if (out.raw() != in.raw() && n > 0) std::memcpy(out.raw(), in.raw(), size_t(in.bytes()));
      if (mask == nullptr) return absl::OkStatus();
      return Dispatch<Join<FloatTypes, TypeList<bool>>>(ctx, mask->dtype(), [&](auto tag) {
        using M = typename decltype(tag)::type;
        M* m = mask->data<M>();
        for (int64_t i = 0; i < n; ++i) m[i] = Narrow<M>(typename Arith<M>::type(1));
      });
    }
    // One sequential stream, so a seed gives the same mask at every run and
    // thread count: NumPy's legacy uniform draws (MT19937, 53-bit doubles), as
    // ONNX's reference computes the mask after np.random.seed(seed).
    std::mt19937 rng(has_seed_ ? uint32_t(seed_) : std::random_device{}());
    const auto keep = [&](std::mt19937& g) {
      const uint32_t hi = g() >> 5, lo = g() >> 6;
      return (double(hi) * 67108864.0 + double(lo)) / 9007199254740992.0 >= plan.ratio;
    };
    return Dispatch<FloatTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const A scale = A(1 / (1 - plan.ratio));
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const bool k = keep(rng);
        dst[i] = Narrow<T>(k ? A(Widen(src[i]) * scale) : A(0));
        if (mask == nullptr) continue;
        if (mask->dtype() == DType::kBool) mask->data<bool>()[i] = k;
        else mask->data<T>()[i] = Narrow<T>(A(k ? 1 : 0));
      }
    });
  }

 private:
  bool mode_inputs_, legacy_training_;
  float ratio_;
  bool has_seed_;
  uint64_t seed_;
};

}  // namespace

std::vector<OpDef> UnaryOps() {
  return {
      // Versions 1 to 5 differ only by `consumed_inputs`, accepted and ignored.
      Unary<UnaryOp::kNeg>("Neg", 1),
      Unary<UnaryOp::kAbs>("Abs", 1),
      Unary<UnaryOp::kRelu>("Relu", 1),
      Unary<UnaryOp::kCeil>("Ceil", 1),
      Unary<UnaryOp::kFloor>("Floor", 1),
      Unary<UnaryOp::kSqrt>("Sqrt", 1),
      Unary<UnaryOp::kExp>("Exp", 1),
      Unary<UnaryOp::kLog>("Log", 1),
      Unary<UnaryOp::kTanh>("Tanh", 1),
      Unary<UnaryOp::kErf>("Erf", 9),
      Unary<UnaryOp::kSigmoid>("Sigmoid", 1),
      Unary<UnaryOp::kReciprocal>("Reciprocal", 1),
      Unary<UnaryOp::kGelu>("Gelu", 20),
      Unary<UnaryOp::kNot>("Not", 1),
      Unary<UnaryOp::kBitwiseNot>("BitwiseNot", 18),
      Unary<UnaryOp::kElu>("Elu", 1),
      Unary<UnaryOp::kSelu>("Selu", 1),
      Unary<UnaryOp::kCelu>("Celu", 12),
      Unary<UnaryOp::kLeakyRelu>("LeakyRelu", 1),
      Unary<UnaryOp::kHardSigmoid>("HardSigmoid", 1),
      Unary<UnaryOp::kHardSwish>("HardSwish", 14),
      Unary<UnaryOp::kSoftplus>("Softplus", 1),
      Unary<UnaryOp::kSoftsign>("Softsign", 1),
      Unary<UnaryOp::kMish>("Mish", 18),
      Unary<UnaryOp::kSwish>("Swish", 24),
      Unary<UnaryOp::kThresholdedRelu>("ThresholdedRelu", 10),
      Unary<UnaryOp::kShrink>("Shrink", 9),
      Unary<UnaryOp::kSign>("Sign", 9),
      Unary<UnaryOp::kRound>("Round", 11),
      Unary<UnaryOp::kSin>("Sin", 7),
      Unary<UnaryOp::kCos>("Cos", 7),
      Unary<UnaryOp::kTan>("Tan", 7),
      Unary<UnaryOp::kAsin>("Asin", 7),
      Unary<UnaryOp::kAcos>("Acos", 7),
      Unary<UnaryOp::kAtan>("Atan", 7),
      Unary<UnaryOp::kSinh>("Sinh", 9),
      Unary<UnaryOp::kCosh>("Cosh", 9),
      Unary<UnaryOp::kAsinh>("Asinh", 9),
      Unary<UnaryOp::kAcosh>("Acosh", 9),
      Unary<UnaryOp::kAtanh>("Atanh", 9),
      Unary<UnaryOp::kIsNaN>("IsNaN", 9),
      Unary<UnaryOp::kIsInf>("IsInf", 10),
      {kOnnxDomain, "Clip", Versions{1, 10}, "T", "T", {{"T", kFloatTypes}}, MakeOp<ClipOp>, InPlace(Out{0}, In{0})},
      {kOnnxDomain, "Clip", Versions{11}, "T T? T?", "T", {{"T", kNumericTypes}}, MakeOp<ClipOp>,
       InPlace(Out{0}, In{0})},
      // The mask has the data's type before opset 10, bool after; ratio and
      // training_mode are inputs from opset 12.
      {kOnnxDomain, "Dropout", Versions{1, 9}, "T", "T T?", {{"T", kFloatTypes}}, MakeOp<DropoutOp>,
       InPlace(Out{0}, In{0})},
      {kOnnxDomain, "Dropout", Versions{10, 11}, "T", "T B?", {{"T", kFloatTypes}, {"B", kBool}}, MakeOp<DropoutOp>,
       InPlace(Out{0}, In{0})},
      {kOnnxDomain, "Dropout", Versions{12}, "T R? B?", "T B?", {{"T", kFloatTypes}, {"R", kFloatTypes}, {"B", kBool}},
       MakeOp<DropoutOp>, InPlace(Out{0}, In{0})},
  };
}

}  // namespace onnx_mini
