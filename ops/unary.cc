// Elementwise ops of one input: Neg, Abs, Sqrt, Exp, Log, Tanh, Erf, Sigmoid,
// Reciprocal, Gelu, Relu, Ceil, Floor, Not. 16-bit floats compute in float.
#include <cmath>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

enum class UnaryOp { kNeg, kAbs, kRelu, kCeil, kFloor, kSqrt, kExp, kLog, kTanh, kErf, kSigmoid, kReciprocal, kGelu, kNot };

template <UnaryOp Kind, class A>
A Apply(A x, bool tanh_gelu) {
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
  else if constexpr (Kind == UnaryOp::kSigmoid) return x >= 0 ? A(1) / (A(1) + std::exp(-x)) : std::exp(x) / (A(1) + std::exp(x));
  else if constexpr (Kind == UnaryOp::kReciprocal) return A(1) / x;
  else {  // Gelu: exact with erf, or the tanh approximation
    if (tanh_gelu) return A(0.5) * x * (A(1) + std::tanh(A(0.7978845608028654) * (x + A(0.044715) * x * x * x)));
    return A(0.5) * x * (A(1) + std::erf(x * A(0.7071067811865476)));
  }
}

// The element types each op computes on (its row's type set).
template <UnaryOp Kind> struct UnaryTypes { using type = FloatTypes; };
template <> struct UnaryTypes<UnaryOp::kNeg> { using type = SignedTypes; };
template <> struct UnaryTypes<UnaryOp::kRelu> { using type = SignedTypes; };
template <> struct UnaryTypes<UnaryOp::kAbs> { using type = NumericTypes; };
template <> struct UnaryTypes<UnaryOp::kNot> { using type = TypeList<bool>; };

template <UnaryOp Kind>
class UnaryOpKernel : public Op {
 public:
  explicit UnaryOpKernel(const Node& node) : tanh_gelu_(node.attr_string("approximate", "none") == "tanh") {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t n = in.size();
    return Dispatch<typename UnaryTypes<Kind>::type>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      if constexpr (Kind == UnaryOp::kNot) {
        for (int64_t i = 0; i < n; ++i) dst[i] = !src[i];
      } else {
        using A = typename Arith<T>::type;
#pragma omp parallel for num_threads(ctx.threads()) if (n > (1 << 15))
        for (int64_t i = 0; i < n; ++i) dst[i] = Narrow<T>(Apply<Kind, A>(Widen(src[i]), tanh_gelu_));
      }
    });
  }

 private:
  bool tanh_gelu_;
};

template <UnaryOp Kind>
OpDef Unary(const char* name, int since) {
  return {"", name, since, 0, "T", "T", {{"T", UnaryTypes<Kind>::type::set()}}, MakeOp<UnaryOpKernel<Kind>>,
          {{0, 0, Alias::kInPlace}}};
}

}  // namespace

std::vector<OpDef> UnaryOps() {
  return {
      Unary<UnaryOp::kNeg>("Neg", 6),
      Unary<UnaryOp::kAbs>("Abs", 6),
      Unary<UnaryOp::kRelu>("Relu", 6),
      Unary<UnaryOp::kCeil>("Ceil", 6),
      Unary<UnaryOp::kFloor>("Floor", 6),
      Unary<UnaryOp::kSqrt>("Sqrt", 6),
      Unary<UnaryOp::kExp>("Exp", 6),
      Unary<UnaryOp::kLog>("Log", 6),
      Unary<UnaryOp::kTanh>("Tanh", 6),
      Unary<UnaryOp::kErf>("Erf", 9),
      Unary<UnaryOp::kSigmoid>("Sigmoid", 6),
      Unary<UnaryOp::kReciprocal>("Reciprocal", 6),
      Unary<UnaryOp::kGelu>("Gelu", 20),
      Unary<UnaryOp::kNot>("Not", 1),
  };
}

}  // namespace onnx_mini
