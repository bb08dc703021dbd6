// Elementwise ops of one input: Neg, Abs, Sqrt, Exp, Log, Tanh, Erf, Sigmoid,
// Reciprocal, Gelu, Relu, Ceil, Floor, Not. 16-bit floats compute in float.
#include <cmath>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

enum class UnaryOp { kNeg, kAbs, kRelu, kCeil, kFloor, kSqrt, kExp, kLog, kTanh, kErf, kSigmoid, kReciprocal, kGelu, kNot };

constexpr std::initializer_list<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                                      DType::kBFloat16};
constexpr std::initializer_list<DType> kSignedTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                                       DType::kBFloat16, DType::kInt8, DType::kInt16,
                                                       DType::kInt32, DType::kInt64};

template <UnaryOp Op, class A>
A Apply(A x, bool tanh_gelu) {
  if constexpr (Op == UnaryOp::kNeg) return A(-x);
  else if constexpr (Op == UnaryOp::kAbs) return x < 0 ? A(-x) : x;
  else if constexpr (Op == UnaryOp::kRelu) return x > 0 ? x : A(0);
  else if constexpr (Op == UnaryOp::kCeil) return std::ceil(x);
  else if constexpr (Op == UnaryOp::kFloor) return std::floor(x);
  else if constexpr (Op == UnaryOp::kSqrt) return std::sqrt(x);
  else if constexpr (Op == UnaryOp::kExp) return std::exp(x);
  else if constexpr (Op == UnaryOp::kLog) return std::log(x);
  else if constexpr (Op == UnaryOp::kTanh) return std::tanh(x);
  else if constexpr (Op == UnaryOp::kErf) return std::erf(x);
  else if constexpr (Op == UnaryOp::kSigmoid) return x >= 0 ? A(1) / (A(1) + std::exp(-x)) : std::exp(x) / (A(1) + std::exp(x));
  else if constexpr (Op == UnaryOp::kReciprocal) return A(1) / x;
  else {  // Gelu: exact with erf, or the tanh approximation
    if (tanh_gelu) return A(0.5) * x * (A(1) + std::tanh(A(0.7978845608028654) * (x + A(0.044715) * x * x * x)));
    return A(0.5) * x * (A(1) + std::erf(x * A(0.7071067811865476)));
  }
}

absl::Status InferUnary(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  ctx.set_output(0, ctx.input(0));
  return absl::OkStatus();
}

template <UnaryOp Op>
class UnaryKernel : public OpKernel {
 public:
  explicit UnaryKernel(const KernelInfo& info)
      : tanh_gelu_(info.node.attr_string("approximate", "none") == "tanh") {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const int64_t n = in.size();
    VisitDType(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      if constexpr (Op == UnaryOp::kNot) {
        if constexpr (std::is_same_v<T, bool>)
          for (int64_t i = 0; i < n; ++i) dst[i] = !src[i];
      } else if constexpr (kIsArithmetic<T>) {
        using A = typename Arith<T>::type;
#pragma omp parallel for num_threads(ctx.threads()) if (n > (1 << 15))
        for (int64_t i = 0; i < n; ++i) dst[i] = Narrow<T>(Apply<Op, A>(Widen(src[i]), tanh_gelu_));
      }
    });
    return absl::OkStatus();
  }

 private:
  bool tanh_gelu_;
};

template <UnaryOp Op>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateUnary(const KernelInfo& info) {
  const DType dtype = info.inputs[0]->dtype;
  bool ok = OneOf(dtype, kFloatTypes);
  if (Op == UnaryOp::kNeg || Op == UnaryOp::kAbs || Op == UnaryOp::kRelu) ok = OneOf(dtype, kSignedTypes);
  if (Op == UnaryOp::kAbs) ok = ok || OneOf(dtype, kNumericTypes);
  if (Op == UnaryOp::kNot) ok = dtype == DType::kBool;
  if (!ok) return NotImplemented(info.node, dtype);
  return MakeKernel<UnaryKernel<Op>>(info);
}

}  // namespace

std::vector<OpDef> UnaryOps() {
  return {
      {"", "Neg", 6, 0, InferUnary, CreateUnary<UnaryOp::kNeg>, 0},
      {"", "Abs", 6, 0, InferUnary, CreateUnary<UnaryOp::kAbs>, 0},
      {"", "Relu", 6, 0, InferUnary, CreateUnary<UnaryOp::kRelu>, 0},
      {"", "Ceil", 6, 0, InferUnary, CreateUnary<UnaryOp::kCeil>, 0},
      {"", "Floor", 6, 0, InferUnary, CreateUnary<UnaryOp::kFloor>, 0},
      {"", "Sqrt", 6, 0, InferUnary, CreateUnary<UnaryOp::kSqrt>, 0},
      {"", "Exp", 6, 0, InferUnary, CreateUnary<UnaryOp::kExp>, 0},
      {"", "Log", 6, 0, InferUnary, CreateUnary<UnaryOp::kLog>, 0},
      {"", "Tanh", 6, 0, InferUnary, CreateUnary<UnaryOp::kTanh>, 0},
      {"", "Erf", 9, 0, InferUnary, CreateUnary<UnaryOp::kErf>, 0},
      {"", "Sigmoid", 6, 0, InferUnary, CreateUnary<UnaryOp::kSigmoid>, 0},
      {"", "Reciprocal", 6, 0, InferUnary, CreateUnary<UnaryOp::kReciprocal>, 0},
      {"", "Gelu", 20, 0, InferUnary, CreateUnary<UnaryOp::kGelu>, 0},
      {"", "Not", 1, 0, InferUnary, CreateUnary<UnaryOp::kNot>, 0},
  };
}

}  // namespace onnx_mini
