// Elementwise ops over two (or, for Where, three) inputs with NumPy
// broadcasting: Add, Sub, Mul, Div, Mod, Pow, the comparisons, And, Or, Where.
#include <atomic>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/element.h"

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
    ASSIGN_OR_RETURN(dims, BroadcastDims(ctx, dims, *ctx.input(i).dims));
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

// Integer +, - and * wrap modulo 2^bits, as ONNX integer arithmetic does:
// computed on the unsigned type, where wrapping is defined.
template <class A, class F>
A Wrapping(A x, A y, F f) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<std::conditional_t<sizeof(A) < sizeof(int), int, A>>;
    return A(f(U(x), U(y)));
  } else if constexpr (std::is_integral_v<A> && sizeof(A) < sizeof(int)) {
    return A(f(unsigned(x), unsigned(y)));  // no promotion to signed int
  } else {
    return f(x, y);
  }
}

template <BinaryOp Kind, class A>
A Arithmetic(A x, A y, bool fmod, std::atomic<bool>& divided_by_zero) {
  if constexpr (Kind == BinaryOp::kAdd) return Wrapping(x, y, [](auto a, auto b) { return a + b; });
  else if constexpr (Kind == BinaryOp::kSub) return Wrapping(x, y, [](auto a, auto b) { return a - b; });
  else if constexpr (Kind == BinaryOp::kMul) return Wrapping(x, y, [](auto a, auto b) { return a * b; });
  else if constexpr (std::is_integral_v<A>) {
    // Integer division and modulo must not trap on 0 or MIN / -1.
    if (y == 0) {
      divided_by_zero = true;
      return 0;
    }
    if constexpr (Kind == BinaryOp::kMod) return IntegerMod(x, y, fmod);
    if constexpr (std::is_signed_v<A>)
      if (y == -1) return Wrapping(A(0), x, [](auto a, auto b) { return a - b; });  // MIN / -1 wraps to MIN
    return A(x / y);
  } else if constexpr (Kind == BinaryOp::kMod) {
    // Floats require fmod = 1: the C fmod, sign of the dividend.
    return A(std::fmod(x, y));
  } else {
    return x / y;
  }
}

template <BinaryOp Kind, class A>
bool Compare(const A& x, const A& y) {
  if constexpr (Kind == BinaryOp::kEqual) return x == y;
  else if constexpr (Kind == BinaryOp::kLess) return x < y;
  else if constexpr (Kind == BinaryOp::kLessOrEqual) return x <= y;
  else if constexpr (Kind == BinaryOp::kGreater) return x > y;
  else return x >= y;
}


// The element types each kind of binary op computes on (its row's type sets).
template <BinaryOp Kind> struct BinaryTypes { using type = NumericTypes; };
template <> struct BinaryTypes<BinaryOp::kEqual> { using type = Join<NumericTypes, TypeList<bool, std::string>>; };
template <> struct BinaryTypes<BinaryOp::kAnd> { using type = TypeList<bool>; };
template <> struct BinaryTypes<BinaryOp::kOr> { using type = TypeList<bool>; };
using PowBaseTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t>;
template <> struct BinaryTypes<BinaryOp::kPow> { using type = PowBaseTypes; };

template <BinaryOp Kind>
class BinaryOpKernel : public Op {
 public:
  explicit BinaryOpKernel(const Node& node) : fmod_(node.attr_int("fmod", 0) != 0) {}

  absl::Status Infer(InferContext& ctx) const override {
    const DType a = ctx.input(0).dtype;
    if (Kind == BinaryOp::kMod && Info(a).kind == DTypeKind::kFloat && !fmod_)
      return ctx.Error("Mod of floating-point inputs requires fmod = 1");
    return SetBroadcastOutput(ctx, 2, IsComparison(Kind) || IsLogical(Kind) ? DType::kBool : a);
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sa = BroadcastStrides(a.shape(), out.shape());
    const std::vector<int64_t> sb = BroadcastStrides(b.shape(), out.shape());
    std::atomic<bool> divided_by_zero{false};
    RETURN_IF_ERROR(Dispatch<typename BinaryTypes<Kind>::type>(ctx, a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.data<T>();
      if constexpr (IsLogical(Kind)) {
        const bool* pb = b.data<bool>();
        bool* po = out.data<bool>();
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          po[o] = Kind == BinaryOp::kAnd ? (pa[i] && pb[j]) : (pa[i] || pb[j]);
        });
      } else if constexpr (IsComparison(Kind)) {
        const T* pb = b.data<T>();
        bool* po = out.data<bool>();
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          if constexpr (kIsArithmetic<T>) po[o] = Compare<Kind>(Widen(pa[i]), Widen(pb[j]));
          else po[o] = Compare<Kind>(pa[i], pb[j]);
        });
      } else if constexpr (Kind == BinaryOp::kPow) {
        T* po = out.data<T>();
        VisitTypes<NumericTypes>(b.dtype(), [&](auto exp_tag) {
          using E = typename decltype(exp_tag)::type;
          const E* pb = b.data<E>();
          ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
            const double v = std::pow(double(Widen(pa[i])), double(Widen(pb[j])));
            if constexpr (std::is_integral_v<T>) po[o] = T(FloatToInt64(v));  // NaN/inf: defined, never UB
            else po[o] = Narrow<T>(typename Arith<T>::type(v));
          });
        });
      } else {
        using A = typename Arith<T>::type;
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          po[o] = Narrow<T>(A(Arithmetic<Kind, A>(Widen(pa[i]), Widen(pb[j]), fmod_, divided_by_zero)));
        });
      }
    }));
    if (divided_by_zero)
      return ctx.Error(Kind == BinaryOp::kMod ? "integer modulo by zero" : "integer division by zero");
    return absl::OkStatus();
  }

 private:
  bool fmod_;
};

// ---- Sum: the broadcast sum of any number of inputs ----

class SumOp : public Op {
 public:
  explicit SumOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    return SetBroadcastOutput(ctx, ctx.num_inputs(), ctx.input(0).dtype);
  }
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> zero(out.shape().size(), 0);
    return Dispatch<FloatTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      std::vector<A> acc(static_cast<size_t>(out.size()), A(0));
      for (size_t k = 0; k < ctx.num_inputs(); ++k) {
        const Tensor& in = *ctx.input(k);
        const T* src = in.data<T>();
        ForEachBroadcast(out.shape(), BroadcastStrides(in.shape(), out.shape()), zero, ctx.threads(),
                         [&](int64_t o, int64_t i, int64_t) { acc[size_t(o)] += A(Widen(src[i])); });
      }
      for (int64_t o = 0; o < out.size(); ++o) out.data<T>()[o] = Narrow<T>(acc[size_t(o)]);
    });
  }
};

// ---- Where(condition, X, Y) ----

class WhereOp : public Op {
 public:
  explicit WhereOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    return SetBroadcastOutput(ctx, 3, ctx.input(1).dtype);
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& c = *ctx.input(0);
    const Tensor& x = *ctx.input(1);
    const Tensor& y = *ctx.input(2);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sc = BroadcastStrides(c.shape(), out.shape());
    const std::vector<int64_t> sx = BroadcastStrides(x.shape(), out.shape());
    const std::vector<int64_t> sy = BroadcastStrides(y.shape(), out.shape());
    // Two passes over the two-input iterator: X where true, then Y where false.
    return Dispatch<UnpackedTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
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
    });
  }
};

template <BinaryOp Kind>
OpDef Binary(const char* name, int since, TypeSet types, bool boolean_output, bool in_place) {
  OpDef d{"", name, since, 0, "T T", boolean_output ? "B" : "T", {{"T", types}}, MakeOp<BinaryOpKernel<Kind>>};
  if (boolean_output) d.types.push_back({"B", kBool});
  if (in_place) d.aliases = {{0, 0, Alias::kInPlace}};
  return d;
}

}  // namespace

std::vector<OpDef> BinaryOps() {
  // Versions differ only in the types they allow; one kernel serves each op.
  // Opsets before 7 (the legacy broadcast attribute) are not implemented.
  const TypeSet equal_types = BinaryTypes<BinaryOp::kEqual>::type::set();
  std::vector<OpDef> rows = {
      Binary<BinaryOp::kAdd>("Add", 7, kNumericTypes, false, true),
      Binary<BinaryOp::kSub>("Sub", 7, kNumericTypes, false, true),
      Binary<BinaryOp::kMul>("Mul", 7, kNumericTypes, false, true),
      Binary<BinaryOp::kDiv>("Div", 7, kNumericTypes, false, true),
      Binary<BinaryOp::kMod>("Mod", 10, kNumericTypes, false, true),
      Binary<BinaryOp::kEqual>("Equal", 7, equal_types, true, false),
      Binary<BinaryOp::kLess>("Less", 7, kNumericTypes, true, false),
      Binary<BinaryOp::kLessOrEqual>("LessOrEqual", 12, kNumericTypes, true, false),
      Binary<BinaryOp::kGreater>("Greater", 7, kNumericTypes, true, false),
      Binary<BinaryOp::kGreaterOrEqual>("GreaterOrEqual", 12, kNumericTypes, true, false),
      Binary<BinaryOp::kAnd>("And", 7, kBool, true, false),
      Binary<BinaryOp::kOr>("Or", 7, kBool, true, false),
      // Pow's exponent has a type of its own.
      {"", "Pow", 7, 0, "T T1", "T", {{"T", PowBaseTypes::set()}, {"T1", kNumericTypes}},
       MakeOp<BinaryOpKernel<BinaryOp::kPow>>, {{0, 0, Alias::kInPlace}}},
      {"", "Where", 9, 0, "B T T", "T", {{"B", kBool}, {"T", kUnpackedTypes}}, MakeOp<WhereOp>},
      {"", "Sum", 8, 0, "T*", "T", {{"T", kFloatTypes}}, MakeOp<SumOp>},
  };
  return rows;
}

}  // namespace onnx_mini
