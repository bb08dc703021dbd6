// Add, Sub, Mul, Div with NumPy broadcasting.
#include <atomic>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

absl::Status InferBinary(InferContext& ctx) {
  absl::Status s = CheckArity(ctx, 2, 2);
  if (!s.ok()) return s;
  absl::StatusOr<DType> a = InputDType(ctx, 0);
  if (!a.ok()) return a.status();
  absl::StatusOr<DType> b = InputDType(ctx, 1);
  if (!b.ok()) return b.status();
  if (*a != *b)
    return ctx.Error(absl::StrCat("inputs must have the same element type, got ", LowerName(*a),
                                  " and ", LowerName(*b)));
  ValueType out;
  out.dtype = *a;
  if (ctx.input(0).dims && ctx.input(1).dims) {
    absl::StatusOr<std::vector<Dim>> dims = BroadcastDims(ctx, *ctx.input(0).dims, *ctx.input(1).dims);
    if (!dims.ok()) return dims.status();
    out.dims = *std::move(dims);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

template <BinaryOp Op, class A>
A Apply(A x, A y, std::atomic<bool>& divided_by_zero) {
  if constexpr (Op == BinaryOp::kAdd) {
    return x + y;
  } else if constexpr (Op == BinaryOp::kSub) {
    return x - y;
  } else if constexpr (Op == BinaryOp::kMul) {
    return x * y;
  } else if constexpr (std::is_integral_v<A>) {
    // Integer division truncates; it must not trap on 0 or MIN / -1.
    if (y == 0) {
      divided_by_zero = true;
      return 0;
    }
    if constexpr (std::is_signed_v<A>)
      if (y == -1) return A(0) - x;  // wraps for MIN, like NumPy
    return x / y;
  } else {
    return x / y;
  }
}

template <BinaryOp Op>
class BinaryKernel : public OpKernel {
 public:
  explicit BinaryKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sa = BroadcastStrides(a.shape(), out.shape());
    const std::vector<int64_t> sb = BroadcastStrides(b.shape(), out.shape());
    std::atomic<bool> divided_by_zero{false};
    VisitDType(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr ((std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || std::is_same_v<T, Float16> ||
                    std::is_same_v<T, BFloat16>) {
        using A = typename Arith<T>::type;
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          po[o] = Narrow<T>(A(Apply<Op, A>(Widen(pa[i]), Widen(pb[j]), divided_by_zero)));
        });
      }
    });
    if (divided_by_zero) return absl::InvalidArgumentError("Div: integer division by zero");
    return absl::OkStatus();
  }
};

template <BinaryOp Op>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateBinary(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kNumericTypes);
  if (!s.ok()) return s;
  return MakeKernel<BinaryKernel<Op>>(info);
}

}  // namespace

std::vector<OpDef> BinaryOps() {
  // Versions 7, 13 and 14 differ only in the types they allow; one kernel
  // serves them all, and opsets 1 to 6 (legacy broadcast attribute) are not implemented.
  return {
      {"", "Add", 7, 0, InferBinary, CreateBinary<BinaryOp::kAdd>, 0},
      {"", "Sub", 7, 0, InferBinary, CreateBinary<BinaryOp::kSub>, 0},
      {"", "Mul", 7, 0, InferBinary, CreateBinary<BinaryOp::kMul>, 0},
      {"", "Div", 7, 0, InferBinary, CreateBinary<BinaryOp::kDiv>, 0},
  };
}

}  // namespace onnx_mini
