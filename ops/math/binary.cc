// Elementwise ops over two (or, for Where, three) inputs with NumPy
// broadcasting: Add, Sub, Mul, Div, Mod, Pow, the comparisons, And, Or, Xor,
// BitwiseAnd, BitwiseOr, BitwiseXor, BitShift, Where;
// PRelu (the slope broadcasts to X); Sum, Max, Min, Mean over any number of
// inputs. Before opset 7 the two-input ops broadcast only when asked
// (`broadcast`, `axis`), B onto A.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "kernels/vec/elementwise.h"
#include "kernels/vec/vec_math.h"
#include "runtime/cpu.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kMod, kPow,                             // arithmetic
  kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual,         // comparisons -> bool
  kAnd, kOr, kXor,                                                // bool -> bool
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kBitShift,                // integers -> integers
};
constexpr bool IsComparison(BinaryOp op) { return op >= BinaryOp::kEqual && op <= BinaryOp::kGreaterOrEqual; }
constexpr bool IsLogical(BinaryOp op) { return op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor; }
constexpr bool IsBitwise(BinaryOp op) { return op >= BinaryOp::kBitwiseAnd; }

// BitwiseAnd/Or/Xor and BitShift on integers. A shift by the type's width or
// more gives 0 (as NumPy does), never the undefined C++ shift.
template <BinaryOp Kind, class T>
T Bitwise(T x, T y, bool shift_left) {
  if constexpr (Kind == BinaryOp::kBitwiseAnd) return T(x & y);
  else if constexpr (Kind == BinaryOp::kBitwiseOr) return T(x | y);
  else if constexpr (Kind == BinaryOp::kBitwiseXor) return T(x ^ y);
  else {
    if (uint64_t(y) >= sizeof(T) * 8) return T(0);
    using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, T>;  // no promotion to int
    return T(shift_left ? W(x) << y : W(x) >> y);
  }
}

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
template <> struct BinaryTypes<BinaryOp::kXor> { using type = TypeList<bool>; };
template <> struct BinaryTypes<BinaryOp::kBitwiseAnd> { using type = IntTypes; };
template <> struct BinaryTypes<BinaryOp::kBitwiseOr> { using type = IntTypes; };
template <> struct BinaryTypes<BinaryOp::kBitwiseXor> { using type = IntTypes; };
template <> struct BinaryTypes<BinaryOp::kBitShift> { using type = UnsignedIntTypes; };
using PowBaseTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t>;
template <> struct BinaryTypes<BinaryOp::kPow> { using type = PowBaseTypes; };

// Opsets 1 to 6: B is broadcast onto A only with broadcast = 1, its dims
// matching A's from `axis` on (by default, A's trailing dims); otherwise the
// shapes must be equal. The plan holds B's shape padded to A's rank.
struct LegacyBroadcastPlan : OpPlan {
  Shape b_shape;
};

class LegacyBroadcast {
 public:
  explicit LegacyBroadcast(const Node& node)
      : enabled_(node.opset < 7), broadcast_(node.attr_int("broadcast", 0) != 0),
        has_axis_(node.attr("axis") != nullptr), axis_(node.attr_int("axis", 0)) {}
  bool enabled() const { return enabled_; }

  absl::Status Infer(InferContext& ctx, DType dtype) const {
    const ValueType& a = ctx.input(0);
    const ValueType& b = ctx.input(1);
    ValueType out;
    out.dtype = dtype;
    out.dims = a.dims;
    if (a.dims && b.dims) {
      const int64_t ra = a.rank(), rb = b.rank();
      int64_t axis = 0;
      if (!broadcast_) {
        bool same = ra == rb;
        for (int64_t k = 0; same && k < ra; ++k) {
          const Dim &da = (*a.dims)[size_t(k)], &db = (*b.dims)[size_t(k)];
          same = !(da.known() && db.known() && da.value != db.value);
        }
        if (!same)
          return ctx.Error(absl::StrCat("without broadcast = 1 (opset ", ctx.opset(), ") the inputs must have one shape, got ",
                                        DimsToString(*a.dims), " and ", DimsToString(*b.dims)));
      } else {
        axis = has_axis_ ? (axis_ < 0 ? axis_ + ra : axis_) : ra - rb;
        if (rb > ra || axis < 0 || axis + rb > ra)
          return ctx.Error(absl::StrCat("B of shape ", DimsToString(*b.dims), " does not fit A of shape ",
                                        DimsToString(*a.dims), " at axis ", has_axis_ ? axis_ : axis));
        for (int64_t k = 0; k < rb; ++k) {
          const Dim &da = (*a.dims)[size_t(axis + k)], &db = (*b.dims)[size_t(k)];
          if (da.known() && db.known() && db.value != 1 && db.value != da.value)
            return ctx.Error(absl::StrCat("B of shape ", DimsToString(*b.dims), " does not broadcast onto A of shape ",
                                          DimsToString(*a.dims), " at axis ", axis));
        }
      }
      std::optional<Shape> sb = b.concrete_shape();
      if (a.concrete_shape() && sb) {
        auto plan = std::make_shared<LegacyBroadcastPlan>();
        plan->b_shape.assign(size_t(ra), 1);
        for (int64_t k = 0; k < rb; ++k) plan->b_shape[size_t(axis + k)] = (*sb)[size_t(k)];
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  // B's shape as the kernel broadcasts it.
  const Shape& BShape(const KernelContext& ctx) const {
    return enabled_ ? ctx.plan<LegacyBroadcastPlan>().b_shape : ctx.input(1)->shape();
  }

 private:
  bool enabled_, broadcast_, has_axis_;
  int64_t axis_;
};

// The vectorized Pow of a float array by a supported constant exponent
// (kernels/vec/vec_math.h), in chunks across threads.
void PowConstChunks(const float* x, float* y, int64_t n, double e, int threads) {
  ParallelElements(n, threads, [&](int64_t i0, int64_t i1) { VecPowConst(x + i0, y + i0, i1 - i0, e); });
}

// The vectorized float loops (kernels/vec/elementwise.h) over a broadcast:
// dims of size 1 dropped and neighbours merged where both inputs run through
// them alike, so same shapes, a scalar and a per-channel [C,1,1] operand
// become few long rows; f(out, a, a_step, b, b_step, len) gets one row (or,
// for one row, a chunk of it), a step 0 where that input repeats one value.
template <class F>
void ForEachBroadcastRow(const Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                         int threads, const F& f) {
  const int64_t total = ElementCount(out);
  if (total == 0) return;
  Shape dims;
  std::vector<int64_t> da, db;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!dims.empty() && da.back() == sa[d] * out[d] && db.back() == sb[d] * out[d]) {
      dims.back() *= out[d];
      da.back() = sa[d];
      db.back() = sb[d];
      continue;
    }
    dims.push_back(out[d]);
    da.push_back(sa[d]);
    db.push_back(sb[d]);
  }
  if (dims.empty()) {
    f(0, 0, 0, 0, 0, 1);
    return;
  }
  const int64_t inner = dims.back(), ia = da.back(), ib = db.back();  // steps 0 or 1
  const int64_t rows = total / inner;
  if (rows == 1) {
    ParallelElements(inner, threads, [&](int64_t i0, int64_t i1) { f(i0, i0 * ia, ia, i0 * ib, ib, i1 - i0); });
    return;
  }
  const int64_t rank = int64_t(dims.size());
  ParallelFor(threads, rows, WorkPerIndex{2.0 * double(inner)}, [&](int64_t r0, int64_t r1) {
    int64_t small[16] = {};  // no allocation for the usual ranks
    std::vector<int64_t> large;
    if (rank > 16) large.assign(size_t(rank), 0);
    int64_t* idx = rank > 16 ? large.data() : small;
    int64_t a = 0, b = 0, rem = r0;
    for (int64_t d = rank - 2; d >= 0; --d) {
      idx[d] = rem % dims[size_t(d)];
      rem /= dims[size_t(d)];
      a += idx[d] * da[size_t(d)];
      b += idx[d] * db[size_t(d)];
    }
    for (int64_t r = r0; r < r1; ++r) {
      f(r * inner, a, ia, b, ib, inner);
      for (int64_t d = rank - 2; d >= 0; --d) {
        a += da[size_t(d)];
        b += db[size_t(d)];
        if (++idx[d] < dims[size_t(d)]) break;
        a -= dims[size_t(d)] * da[size_t(d)];
        b -= dims[size_t(d)] * db[size_t(d)];
        idx[d] = 0;
      }
    }
  });
}

template <BinaryOp Kind>
class BinaryOpKernel : public Op {
 public:
  explicit BinaryOpKernel(const Node& node)
      : fmod_(node.attr_int("fmod", 0) != 0), direction_(node.attr_string("direction", "")), legacy_(node) {}

  absl::Status Infer(InferContext& ctx) const override {
    const DType a = ctx.input(0).dtype;
    if (Kind == BinaryOp::kMod && Info(a).kind == DTypeKind::kFloat && !fmod_)
      return ctx.Error("Mod of floating-point inputs requires fmod = 1");
    if (Kind == BinaryOp::kBitShift && direction_ != "LEFT" && direction_ != "RIGHT")
      return ctx.Error("direction '" + direction_ + "' must be LEFT or RIGHT");
    if (legacy_.enabled()) return legacy_.Infer(ctx, IsComparison(Kind) || IsLogical(Kind) ? DType::kBool : a);
    return SetBroadcastOutput(ctx, 2, IsComparison(Kind) || IsLogical(Kind) ? DType::kBool : a);
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sa = BroadcastStrides(a.shape(), out.shape());
    const std::vector<int64_t> sb = BroadcastStrides(legacy_.BShape(ctx), out.shape());
    std::atomic<bool> divided_by_zero{false};
    RETURN_IF_ERROR(Dispatch<typename BinaryTypes<Kind>::type>(ctx, a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pa = a.data<T>();
      if constexpr (IsLogical(Kind)) {
        const bool* pb = b.data<bool>();
        bool* po = out.data<bool>();
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          po[o] = Kind == BinaryOp::kAnd ? (pa[i] && pb[j]) : Kind == BinaryOp::kOr ? (pa[i] || pb[j]) : (pa[i] != pb[j]);
        });
      } else if constexpr (IsBitwise(Kind)) {
        const T* pb = b.data<T>();
        T* po = out.data<T>();
        const bool left = direction_ == "LEFT";
        ForEachBroadcast(out.shape(), sa, sb, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
          po[o] = Bitwise<Kind, T>(pa[i], pb[j], left);
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
        // Float base, one exponent of 0.5, 1, 2, 3, -1 or -0.5 (a constant
        // usually): the vectorized path above the baseline CPU target.
        if constexpr (std::is_same_v<T, float>) {
          if (b.size() == 1 && a.size() == out.size() && VecMathVectorized()) {
            double e = 0;
            VisitTypes<NumericTypes>(b.dtype(), [&](auto exp_tag) {
              e = double(Widen(b.data<typename decltype(exp_tag)::type>()[0]));
            });
            if (e == 0.5 || e == 1 || e == 2 || e == 3 || e == -1 || e == -0.5) {
              PowConstChunks(pa, po, out.size(), e, ctx.threads());
              return;
            }
          }
        }
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
        if constexpr (std::is_same_v<T, float> && Kind != BinaryOp::kMod) {
          constexpr VecBinaryKind kVec = Kind == BinaryOp::kAdd   ? VecBinaryKind::kAdd
                                         : Kind == BinaryOp::kSub ? VecBinaryKind::kSub
                                         : Kind == BinaryOp::kMul ? VecBinaryKind::kMul
                                                                  : VecBinaryKind::kDiv;
          ForEachBroadcastRow(out.shape(), sa, sb, ctx.threads(),
                              [&](int64_t o, int64_t i, int64_t is, int64_t j, int64_t js, int64_t len) {
                                VecBinary(kVec, pa + i, is, pb + j, js, po + o, len);
                              });
          return;
        }
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
  std::string direction_;  // BitShift
  LegacyBroadcast legacy_;
};

// ---- PRelu: x < 0 ? slope * x : x, the slope broadcast to X's shape ----

using PReluTypes = Join<FloatTypes, TypeList<int32_t, int64_t, uint32_t, uint64_t>>;

class PReluOp : public Op {
 public:
  explicit PReluOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& slope = ctx.input(1);
    if (x.dims && slope.dims) {
      // Unidirectional: the broadcast of both must be X's shape.
      ASSIGN_OR_RETURN(std::vector<Dim> dims, BroadcastDims(ctx, *x.dims, *slope.dims));
      bool fits = dims.size() == x.dims->size();
      for (size_t k = 0; fits && k < dims.size(); ++k)
        fits = !(dims[k].known() && (*x.dims)[k].known() && dims[k].value != (*x.dims)[k].value);
      if (!fits)
        return ctx.Error(absl::StrCat("slope of shape ", DimsToString(*slope.dims), " does not broadcast to X of shape ",
                                      DimsToString(*x.dims)));
    }
    ctx.set_output(0, x);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& slope = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const std::vector<int64_t> sx = BroadcastStrides(x.shape(), out.shape());
    const std::vector<int64_t> ss = BroadcastStrides(slope.shape(), out.shape());
    return Dispatch<PReluTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* px = x.data<T>();
      const T* ps = slope.data<T>();
      T* po = out.data<T>();
      ForEachBroadcast(out.shape(), sx, ss, ctx.threads(), [&](int64_t o, int64_t i, int64_t j) {
        const A v = Widen(px[i]);
        po[o] = v < A(0) ? Narrow<T>(Wrapping(A(Widen(ps[j])), v, [](auto a, auto b) { return a * b; })) : px[i];
      });
    });
  }
};

// ---- Sum, Max, Min, Mean: the broadcast reduction of any number of inputs ----

enum class VariadicOp { kSum, kMax, kMin, kMean };
template <VariadicOp Kind> struct VariadicTypes { using type = NumericTypes; };
template <> struct VariadicTypes<VariadicOp::kSum> { using type = FloatTypes; };
template <> struct VariadicTypes<VariadicOp::kMean> { using type = FloatTypes; };

template <VariadicOp Kind>
class VariadicOpKernel : public Op {
 public:
  explicit VariadicOpKernel(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    return SetBroadcastOutput(ctx, ctx.num_inputs(), ctx.input(0).dtype);
  }
  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    if (out.dtype() == DType::kFloat) {
      ComputeFloat(ctx, out);
      return absl::OkStatus();
    }
    const std::vector<int64_t> zero(out.shape().size(), 0);
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(out.size(), sizeof(double), "the accumulators"));
    return Dispatch<typename VariadicTypes<Kind>::type>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      std::vector<A> acc(static_cast<size_t>(out.size()), A(0));
      for (size_t k = 0; k < ctx.num_inputs(); ++k) {
        const Tensor& in = *ctx.input(k);
        const T* src = in.data<T>();
        ForEachBroadcast(out.shape(), BroadcastStrides(in.shape(), out.shape()), zero, ctx.threads(),
                         [&](int64_t o, int64_t i, int64_t) {
                           const A v = Widen(src[i]);
                           A& a = acc[size_t(o)];
                           if (k == 0) a = v;
                           else if constexpr (Kind == VariadicOp::kMax) a = (v > a || v != v) ? v : a;  // NaN wins
                           else if constexpr (Kind == VariadicOp::kMin) a = (v < a || v != v) ? v : a;
                           else a += v;
                         });
      }
      const A n = A(ctx.num_inputs());
      for (int64_t o = 0; o < out.size(); ++o)
        out.data<T>()[o] = Narrow<T>(Kind == VariadicOp::kMean ? A(acc[size_t(o)] / n) : acc[size_t(o)]);
    });
  }

 private:
  // Float: the vectorized loops straight into the output, no accumulators:
  // out = in0 op in1, then out = out op in_k, the plain loop's order (Mean
  // divides the sum by the count at the end, as it does).
  static void ComputeFloat(KernelContext& ctx, Tensor& out) {
    constexpr VecBinaryKind kVec = Kind == VariadicOp::kMax   ? VecBinaryKind::kMax
                                   : Kind == VariadicOp::kMin ? VecBinaryKind::kMin
                                                              : VecBinaryKind::kAdd;
    float* po = out.data<float>();
    const size_t inputs = ctx.num_inputs();
    const Tensor& first = *ctx.input(0);
    const std::vector<int64_t> s0 = BroadcastStrides(first.shape(), out.shape());
    const auto run = [&](const float* pa, const std::vector<int64_t>& sa, const Tensor& in) {
      const float* pb = in.data<float>();
      ForEachBroadcastRow(out.shape(), sa, BroadcastStrides(in.shape(), out.shape()), ctx.threads(),
                          [&](int64_t o, int64_t i, int64_t is, int64_t j, int64_t js, int64_t len) {
                            VecBinary(kVec, pa + i, is, pb + j, js, po + o, len);
                          });
    };
    if (inputs == 1) {  // a copy, broadcast to the output's shape
      const std::vector<int64_t> zero(out.shape().size(), 0);
      const float* pa = first.data<float>();
      ForEachBroadcastRow(out.shape(), s0, zero, ctx.threads(),
                          [&](int64_t o, int64_t i, int64_t is, int64_t, int64_t, int64_t len) {
                            for (int64_t k = 0; k < len; ++k) po[o + k] = pa[i + k * is];
                          });
    } else {
      run(first.data<float>(), s0, *ctx.input(1));
      const std::vector<int64_t> dense = BroadcastStrides(out.shape(), out.shape());
      for (size_t k = 2; k < inputs; ++k) run(po, dense, *ctx.input(k));
    }
    if (Kind == VariadicOp::kMean) {
      const float n = float(inputs);
      ParallelElements(out.size(), ctx.threads(), [&](int64_t i0, int64_t i1) {
        VecBinary(VecBinaryKind::kDiv, po + i0, 1, &n, 0, po + i0, i1 - i0);
      });
    }
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
  OpDef d{kOnnxDomain, name, Versions{since}, "T T", boolean_output ? "B" : "T", {{"T", types}},
          MakeOp<BinaryOpKernel<Kind>>};
  if (boolean_output) d.types.push_back({"B", kBool});
  if (in_place) d.aliases = {InPlace(Out{0}, In{0})};
  return d;
}

}  // namespace

std::vector<OpDef> BinaryOps() {
  // Versions differ only in the types they allow; one kernel serves each op.
  // Before opset 7 the kernel takes the legacy `broadcast`/`axis` attributes
  // (LegacyBroadcast); `consumed_inputs` (opsets 1 to 5) is ignored.
  const TypeSet equal_types = BinaryTypes<BinaryOp::kEqual>::type::set();
  std::vector<OpDef> rows = {
      Binary<BinaryOp::kAdd>("Add", 1, kNumericTypes, false, true),
      Binary<BinaryOp::kSub>("Sub", 1, kNumericTypes, false, true),
      Binary<BinaryOp::kMul>("Mul", 1, kNumericTypes, false, true),
      Binary<BinaryOp::kDiv>("Div", 1, kNumericTypes, false, true),
      Binary<BinaryOp::kMod>("Mod", 10, kNumericTypes, false, true),
      Binary<BinaryOp::kEqual>("Equal", 1, equal_types, true, false),
      Binary<BinaryOp::kLess>("Less", 1, kNumericTypes, true, false),
      Binary<BinaryOp::kLessOrEqual>("LessOrEqual", 12, kNumericTypes, true, false),
      Binary<BinaryOp::kGreater>("Greater", 1, kNumericTypes, true, false),
      Binary<BinaryOp::kGreaterOrEqual>("GreaterOrEqual", 12, kNumericTypes, true, false),
      Binary<BinaryOp::kAnd>("And", 1, kBool, true, false),
      Binary<BinaryOp::kOr>("Or", 1, kBool, true, false),
      Binary<BinaryOp::kXor>("Xor", 1, kBool, true, false),
      Binary<BinaryOp::kBitwiseAnd>("BitwiseAnd", 18, IntTypes::set(), false, true),
      Binary<BinaryOp::kBitwiseOr>("BitwiseOr", 18, IntTypes::set(), false, true),
      Binary<BinaryOp::kBitwiseXor>("BitwiseXor", 18, IntTypes::set(), false, true),
      Binary<BinaryOp::kBitShift>("BitShift", 11, UnsignedIntTypes::set(), false, true),
      // Pow's exponent has a type of its own.
      {kOnnxDomain, "Pow", Versions{1}, "T T1", "T", {{"T", PowBaseTypes::set()}, {"T1", kNumericTypes}},
       MakeOp<BinaryOpKernel<BinaryOp::kPow>>, InPlace(Out{0}, In{0})},
      {kOnnxDomain, "Where", Versions{9}, "B T T", "T", {{"B", kBool}, {"T", kUnpackedTypes}}, MakeOp<WhereOp>},
      // Variadic ops broadcast from opset 8; before, equal shapes (which broadcast trivially).
      {kOnnxDomain, "Sum", Versions{1}, "T*", "T", {{"T", kFloatTypes}}, MakeOp<VariadicOpKernel<VariadicOp::kSum>>},
      {kOnnxDomain, "Max", Versions{1}, "T*", "T", {{"T", kNumericTypes}}, MakeOp<VariadicOpKernel<VariadicOp::kMax>>},
      {kOnnxDomain, "Min", Versions{1}, "T*", "T", {{"T", kNumericTypes}}, MakeOp<VariadicOpKernel<VariadicOp::kMin>>},
      {kOnnxDomain, "Mean", Versions{1}, "T*", "T", {{"T", kFloatTypes}}, MakeOp<VariadicOpKernel<VariadicOp::kMean>>},
      {kOnnxDomain, "PRelu", Versions{1}, "T T", "T", {{"T", PReluTypes::set()}}, MakeOp<PReluOp>,
       InPlace(Out{0}, In{0})},
  };
  return rows;
}

}  // namespace onnx_mini
