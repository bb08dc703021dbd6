// Elementwise ops over two (or, for Where, three) inputs with NumPy
// broadcasting: Add, Sub, Mul, Div, Mod, Pow, the comparisons, And, Or, Where.
#include <atomic>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kMod, kPow,                             // arithmetic
  kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual,         // comparisons -> bool
  kAnd, kOr,                                                      // bool -> bool
};
constexpr bool IsComparison(BinaryOp op) { return op >= BinaryOp::kEqual && op <= BinaryOp::kGreaterOrEqual; }
constexpr bool IsLogical(BinaryOp op) { return op == BinaryOp::kAnd || op == BinaryOp::kOr; }

absl::StatusOr<std::vector<Dim>> BroadcastInputs(const InferContext& ctx, size_t n) {
  std::vector<Dim> dims;
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.input(i).dims) return absl::NotFoundError("rank unknown");
    if (i == 0) {
      dims = *ctx.input(0).dims;
      continue;
    }
    absl::StatusOr<std::vector<Dim>> next = BroadcastDims(ctx, dims, *ctx.input(i).dims);
    if (!next.ok()) return next.status();
    dims = *std::move(next);
  }
  return dims;
}

// Sets output 0 to `dtype` with the broadcast of the first n inputs' shapes.
absl::Status SetBroadcastOutput(InferContext& ctx, size_t n, DType dtype) {
  ValueType out;
  out.dtype = dtype;
  absl::StatusOr<std::vector<Dim>> dims = BroadcastInputs(ctx, n);
  if (dims.ok()) out.dims = *std::move(dims);
  else if (!absl::IsNotFound(dims.status())) return dims.status();
  ctx.set_output(0, out);
  return absl::OkStatus();
}

template <BinaryOp Op>
absl::Status InferBinary(InferContext& ctx) {
  absl::StatusOr<DType> a = CheckInputs(ctx, 2, 2);
  if (!a.ok()) return a.status();
  absl::StatusOr<DType> b = InputDType(ctx, 1);
  if (!b.ok()) return b.status();
  if (Op != BinaryOp::kPow && *a != *b)  // Pow's exponent has a type of its own
    return ctx.Error(absl::StrCat("inputs must have the same element type, got ", LowerName(*a),
                                  " and ", LowerName(*b)));
  return SetBroadcastOutput(ctx, 2, IsComparison(Op) || IsLogical(Op) ? DType::kBool : *a);
}

// Integer Mod: the sign of the divisor (Python's %), or of the dividend with fmod.
template <class A>
A IntegerMod(A x, A y, bool fmod) {
  if constexpr (std::is_signed_v<A>) {
    if (y == -1) return 0;  // avoids the MIN % -1 trap
    A r = A(x % y);
    if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = A(r + y);
    return r;
  } else {
    return A(x % y);
  }
}

template <BinaryOp Op, class A>
A Arithmetic(A x, A y, bool fmod, std::atomic<bool>& divided_by_zero) {
  if constexpr (Op == BinaryOp::kAdd) return x + y;
  else if constexpr (Op == BinaryOp::kSub) return x - y;
  else if constexpr (Op == BinaryOp::kMul) return x * y;
  else if constexpr (std::is_integral_v<A>) {
    // Integer division and modulo must not trap on 0 or MIN / -1.
    if (y == 0) {
      divided_by_zero = true;
      return 0;
    }
    if constexpr (Op == BinaryOp::kMod) return IntegerMod(x, y, fmod);
    if constexpr (std::is_signed_v<A>)
      if (y == -1) return A(A(0) - x);  // wraps for MIN, like NumPy
    return A(x / y);
  } else if constexpr (Op == BinaryOp::kMod) {
    // Floats require fmod = 1: the C fmod, sign of the dividend.
    return A(std::fmod(x, y));
  } else {
    return x / y;
  }
}

template <BinaryOp Op, class A>
bool Compare(A x, A y) {
  if constexpr (Op == BinaryOp::kEqual) return x == y;
  else if constexpr (Op == BinaryOp::kLess) return x < y;
  else if constexpr (Op == BinaryOp::kLessOrEqual) return x <= y;
  else if constexpr (Op == BinaryOp::kGreater) return x > y;
  else return x >= y;
}

template <class T> constexpr bool kArithmetic =
    kIsArithmetic<T>;

template <BinaryOp Op>
class BinaryKernel : public OpKernel {
 public:
  explicit BinaryKernel(const KernelInfo& info) : fmod_(info.node.attr_int("fmod", 0) != 0) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sa = BroadcastStrides(a.shape(), out.shape());
    const std::vector<int64_t> sb = BroadcastStrides(b.shape(), out.shape());
    std::atomic<bool> divided_by_zero{false};
    VisitDType(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.data<T>();
      if constexpr (IsLogical(Op)) {
        if constexpr (std::is_same_v<T, bool>) {
          const bool* pb = b.data<bool>();
          bool* po = out.data<bool>();
          ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
            po[o] = Op == BinaryOp::kAnd ? (pa[i] && pb[j]) : (pa[i] || pb[j]);
          });
        }
      } else if constexpr (IsComparison(Op)) {
        if constexpr (kIsArithmetic<T> || ((std::is_same_v<T, bool> || std::is_same_v<T, std::string>) &&
                                         Op == BinaryOp::kEqual)) {
          const T* pb = b.data<T>();
          bool* po = out.data<bool>();
          ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
            po[o] = Compare<Op>(Widen(pa[i]), Widen(pb[j]));
          });
        }
      } else if constexpr (Op == BinaryOp::kPow) {
        if constexpr (kIsArithmetic<T>) {
          T* po = out.data<T>();
          VisitDType(b.dtype(), [&](auto exp_tag) {
            using E = typename decltype(exp_tag)::type;
            if constexpr (kIsArithmetic<E>) {
              const E* pb = b.data<E>();
              ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
                const double v = std::pow(double(Widen(pa[i])), double(Widen(pb[j])));
                if constexpr (std::is_integral_v<T>) po[o] = T(int64_t(v));
                else po[o] = Narrow<T>(typename Arith<T>::type(v));
              });
            }
          });
        }
      } else if constexpr (kIsArithmetic<T>) {
        using A = typename Arith<T>::type;
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          po[o] = Narrow<T>(A(Arithmetic<Op, A>(Widen(pa[i]), Widen(pb[j]), fmod_, divided_by_zero)));
        });
      }
    });
    if (divided_by_zero)
      return absl::InvalidArgumentError(Op == BinaryOp::kMod ? "Mod: integer modulo by zero"
                                                             : "Div: integer division by zero");
    return absl::OkStatus();
  }

 private:
  bool fmod_;
};

template <BinaryOp Op>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateBinary(const KernelInfo& info) {
  const DType dtype = info.inputs[0]->dtype;
  bool ok = OneOf(dtype, kNumericTypes);
  if (IsLogical(Op)) ok = dtype == DType::kBool;
  if (Op == BinaryOp::kEqual) ok = ok || dtype == DType::kBool || dtype == DType::kString;
  if (Op == BinaryOp::kPow) ok = ok && OneOf(info.inputs[1]->dtype, kNumericTypes);
  if (Op == BinaryOp::kMod && Info(dtype).kind == DTypeKind::kFloat && info.node.attr_int("fmod", 0) == 0)
    return absl::InvalidArgumentError(
        absl::StrCat(info.node.Describe(), ": Mod of floating-point inputs requires fmod = 1"));
  if (!ok) return NotImplemented(info.node, dtype);
  return MakeKernel<BinaryKernel<Op>>(info);
}

// ---- Sum: the broadcast sum of any number of inputs ----

absl::Status InferSum(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 1, ctx.num_inputs());
  if (!dtype.ok()) return dtype.status();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    absl::StatusOr<DType> t = InputDType(ctx, i);
    if (!t.ok()) return t.status();
    if (*t != *dtype) return ctx.Error(absl::StrCat("input ", i, " is ", LowerName(*t), ", input 0 is ", LowerName(*dtype)));
  }
  return SetBroadcastOutput(ctx, ctx.num_inputs(), *dtype);
}

class SumKernel : public OpKernel {
 public:
  explicit SumKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> zero(out.shape().size(), 0);
    VisitDType(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsArithmetic<T>) {
        using A = typename Arith<T>::type;
        std::vector<A> acc(static_cast<size_t>(out.size()), A(0));
        for (size_t k = 0; k < ctx.num_inputs(); ++k) {
          const Tensor& in = *ctx.input(k);
          const T* src = in.data<T>();
          ForEachBroadcast(out.shape(), BroadcastStrides(in.shape(), out.shape()), zero, ctx.threads(),
                           [&](int64_t o, int64_t i, int64_t) { acc[size_t(o)] += A(Widen(src[i])); });
        }
        for (int64_t o = 0; o < out.size(); ++o) out.data<T>()[o] = Narrow<T>(acc[size_t(o)]);
      }
    });
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateSum(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kNumericTypes);
  if (!s.ok()) return s;
  return MakeKernel<SumKernel>(info);
}

// ---- Where(condition, X, Y) ----

absl::Status InferWhere(InferContext& ctx) {
  absl::StatusOr<DType> c = CheckInputs(ctx, 3, 3);
  if (!c.ok()) return c.status();
  absl::StatusOr<DType> x = InputDType(ctx, 1);
  if (!x.ok()) return x.status();
  absl::StatusOr<DType> y = InputDType(ctx, 2);
  if (!y.ok()) return y.status();
  if (*c != DType::kBool) return ctx.Error(absl::StrCat("condition must be bool, got ", LowerName(*c)));
  if (*x != *y)
    return ctx.Error(absl::StrCat("X and Y must have the same element type, got ", LowerName(*x), " and ",
                                  LowerName(*y)));
  return SetBroadcastOutput(ctx, 3, *x);
}

class WhereKernel : public OpKernel {
 public:
  explicit WhereKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& c = *ctx.input(0);
    const Tensor& x = *ctx.input(1);
    const Tensor& y = *ctx.input(2);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sc = BroadcastStrides(c.shape(), out.shape());
    const std::vector<int64_t> sx = BroadcastStrides(x.shape(), out.shape());
    const std::vector<int64_t> sy = BroadcastStrides(y.shape(), out.shape());
    // Two passes over the two-input iterator: X where true, then Y where false.
    VisitDType(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!kIsPacked<T> && !std::is_same_v<T, void>) {
        const bool* pc = c.data<bool>();
        T* po = out.data<T>();
        const T* px = x.data<T>();
        const T* py = y.data<T>();
        ForEachBroadcast(out.shape(), sc, sx, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          if (pc[i]) po[o] = px[j];
        });
        ForEachBroadcast(out.shape(), sc, sy, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          if (!pc[i]) po[o] = py[j];
        });
      }
    });
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateWhere(const KernelInfo& info) {
  if (Info(info.inputs[1]->dtype).packed()) return NotImplemented(info.node, info.inputs[1]->dtype);
  return MakeKernel<WhereKernel>(info);
}

}  // namespace

std::vector<OpDef> BinaryOps() {
  // Versions differ only in the types they allow; one kernel serves each op.
  // Opsets before 7 (the legacy broadcast attribute) are not implemented.
  return {
      {"", "Add", 7, 0, InferBinary<BinaryOp::kAdd>, CreateBinary<BinaryOp::kAdd>, 0},
      {"", "Sub", 7, 0, InferBinary<BinaryOp::kSub>, CreateBinary<BinaryOp::kSub>, 0},
      {"", "Mul", 7, 0, InferBinary<BinaryOp::kMul>, CreateBinary<BinaryOp::kMul>, 0},
      {"", "Div", 7, 0, InferBinary<BinaryOp::kDiv>, CreateBinary<BinaryOp::kDiv>, 0},
      {"", "Mod", 10, 0, InferBinary<BinaryOp::kMod>, CreateBinary<BinaryOp::kMod>, 0},
      {"", "Pow", 7, 0, InferBinary<BinaryOp::kPow>, CreateBinary<BinaryOp::kPow>},
      {"", "Equal", 7, 0, InferBinary<BinaryOp::kEqual>, CreateBinary<BinaryOp::kEqual>},
      {"", "Less", 7, 0, InferBinary<BinaryOp::kLess>, CreateBinary<BinaryOp::kLess>},
      {"", "LessOrEqual", 12, 0, InferBinary<BinaryOp::kLessOrEqual>, CreateBinary<BinaryOp::kLessOrEqual>},
      {"", "Greater", 7, 0, InferBinary<BinaryOp::kGreater>, CreateBinary<BinaryOp::kGreater>},
      {"", "GreaterOrEqual", 12, 0, InferBinary<BinaryOp::kGreaterOrEqual>, CreateBinary<BinaryOp::kGreaterOrEqual>},
      {"", "And", 7, 0, InferBinary<BinaryOp::kAnd>, CreateBinary<BinaryOp::kAnd>},
      {"", "Or", 7, 0, InferBinary<BinaryOp::kOr>, CreateBinary<BinaryOp::kOr>},
      {"", "Where", 9, 0, InferWhere, CreateWhere},
      {"", "Sum", 8, 0, InferSum, CreateSum},
  };
}

}  // namespace onnx_mini
