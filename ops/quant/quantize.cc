// Linear quantization: QuantizeLinear and DequantizeLinear (10 to 25:
// per-tensor, per-axis and blocked scales; 2-, 4-, 8- and 16-bit integers,
// int32 for DequantizeLinear, the float8 types and float4e2m1; `saturate`,
// `output_dtype`, `precision`), DynamicQuantizeLinear (11), MatMulInteger
// (10) and QLinearMatMul (10, 21), whose int8 products run on oneDNN when B
// is int8 and the CPU has AVX-512 VNNI (zero points applied afterwards as row and column sums), the plain
// reference otherwise. Element conversions are the ones Cast uses
// (runtime/element.h); integer results round half to even and saturate to
// the type's range. The integer products accumulate in int64 and keep the
// result modulo 2^32 (int32), as ONNX's int32 accumulation does.
#include <algorithm>
#include <cmath>

#include "oneapi/dnnl/dnnl.hpp"
#include "ops/common.h"
#include "kernels/gemm/onednn.h"
#include "kernels/quant/block_format.h"
#include "kernels/vec/round.h"
#include "ops/math/matmul_plan.h"
#include "ops/ops.h"
#include "runtime/element.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

// The types QuantizeLinear produces (and DequantizeLinear reads, with int32).
using QuantizedTypes = TypeList<int8_t, uint8_t, int16_t, uint16_t, Float8E4M3FN, Float8E4M3FNUZ, Float8E5M2,
                                Float8E5M2FNUZ, UInt4x2, Int4x2, Float4E2M1x2, UInt2x4, Int2x4>;
using DequantizeInputTypes = Join<QuantizedTypes, TypeList<int32_t>>;
// QuantizeLinear's x; its scale may also be float8e8m0 (24+).
using QuantizeInputTypes = TypeList<float, Float16, BFloat16, int32_t>;
using QuantizeScaleTypes = Join<QuantizeInputTypes, TypeList<Float8E8M0>>;
// DequantizeLinear's scale and output.
using DequantizeOutputTypes = TypeList<float, Float16, BFloat16>;
using DequantizeScaleTypes = Join<DequantizeOutputTypes, TypeList<Float8E8M0>>;
// The 8-bit integers of DynamicQuantizeLinear, MatMulInteger, QLinearMatMul.
using Int8Types = TypeList<int8_t, uint8_t>;

bool IsIntegerType(DType d) {
  const DTypeKind k = Info(d).kind;
  return k == DTypeKind::kSigned || k == DTypeKind::kUnsigned;
}

// The range an integer type saturates to.
void IntegerRange(DType d, double& lo, double& hi) {
  const int bits = Info(d).bits;
  if (Info(d).kind == DTypeKind::kSigned) {
    lo = -std::ldexp(1.0, bits - 1);
    hi = std::ldexp(1.0, bits - 1) - 1;
  } else {
    lo = 0;
    hi = std::ldexp(1.0, bits) - 1;
  }
}

// v saturated to [lo, hi]; NaN becomes 0 (ONNX leaves it undefined).
double Saturate(double v, double lo, double hi) {
  if (std::isnan(v)) return 0;
  return std::min(hi, std::max(lo, v));
}

// Every element of a small tensor (a scale or zero point) as double.
template <class List>
std::vector<double> LoadAll(const Tensor& t) {
  std::vector<double> v(size_t(t.size()));
  VisitTypes<List>(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.size(); ++i) v[size_t(i)] = LoadDouble(t.data<T>(), t.dtype(), i);
  });
  return v;
}

// ---- QuantizeLinear and DequantizeLinear ----

// Which scale applies to each element. x is viewed as [outer, dim, inner]
// around the axis; element (o, a, i) uses scale (o * so) + (a / block) * sa + i * si.
struct ScalePlan : OpPlan {
  int64_t outer = 1, dim = 1, inner = 1;
  int64_t block = 1, so = 0, sa = 0, si = 0;
  bool blocked = false;  // block_size given and the scale blocked (not per tensor)
  int64_t Index(int64_t o, int64_t a, int64_t i) const { return o * so + (a / block) * sa + i * si; }
};

// The attributes both ops share.
struct QuantAttrs {
  int64_t axis = 1, block_size = 0;
  DType output_dtype = DType::kUndefined;

  static absl::StatusOr<QuantAttrs> Parse(const Node& node) {
    QuantAttrs a;
    a.axis = node.attr_int("axis", 1);
    a.block_size = node.attr_int("block_size", 0);
    if (a.block_size < 0)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": block_size ", a.block_size, " must not be negative"));
    const int64_t out = node.attr_int("output_dtype", 0);
    if (out != 0) {
      if (!IsValidDType(int32_t(out)))
        return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": output_dtype ", out, " is not an element type"));
      a.output_dtype = DType(out);
    }
    return a;
  }

  // Checks the scale's shape against x (and the zero point's against the
  // scale) and plans the scale lookup. Only when both shapes are known.
  absl::Status Plan(InferContext& ctx, size_t scale_input, size_t zero_input) const {
    const std::optional<Shape> xs = ctx.input(0).concrete_shape();
    const std::optional<Shape> ss = ctx.input(scale_input).concrete_shape();
    if (!xs || !ss) return absl::OkStatus();
    if (ctx.has_input(zero_input)) {
      const std::optional<Shape> zs = ctx.input(zero_input).concrete_shape();
      // The same shape (one element in any shape counts as a scalar).
      if (zs && *zs != *ss && !(ElementCount(*zs) == 1 && ElementCount(*ss) == 1))
        return ctx.Error(absl::StrCat("the zero point's shape ", ShapeToString(*zs), " must be the scale's ",
                                      ShapeToString(*ss)));
    }
    auto p = std::make_shared<ScalePlan>();
    p->outer = ElementCount(*xs);
    const std::string shapes = absl::StrCat("x ", ShapeToString(*xs), ", scale ", ShapeToString(*ss));
    if (ElementCount(*ss) == 1) {
      // Per tensor (a scalar, or any shape of one element).
    } else if (ctx.opset() < 13) {
      return ctx.Error(absl::StrCat("the scale must be a scalar before opset 13: ", shapes));
    } else {
      const int64_t rank = int64_t(xs->size());
      ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(ctx, axis, rank, "axis"));
      p->dim = (*xs)[size_t(axis)];
      p->inner = 1;
      for (int64_t d = axis + 1; d < rank; ++d) p->inner *= (*xs)[size_t(d)];
      p->outer = p->dim == 0 || p->inner == 0 ? 0 : ElementCount(*xs) / p->dim / p->inner;
      if (block_size == 0) {
        if (ss->size() != 1 || (*ss)[0] != p->dim)
          return ctx.Error(absl::StrCat("a per-axis scale must be 1-D with x's dim ", p->dim, " at axis ", axis, ": ",
                                        shapes));
        p->sa = 1;
      } else {
        // Blocked: the scale is x's shape with ceil(dim / block_size) at the axis.
        bool fits = int64_t(ss->size()) == rank;
        for (int64_t d = 0; fits && d < rank; ++d)
          fits = d == axis ? (*ss)[size_t(d)] == (p->dim == 0 ? 0 : (p->dim - 1) / block_size + 1)  // no overflow
                           : (*ss)[size_t(d)] == (*xs)[size_t(d)];
        if (!fits)
          return ctx.Error(absl::StrCat("a blocked scale must be x's shape with ceil(", p->dim, " / block_size ",
                                        block_size, ") at axis ", axis, ": ", shapes));
        const int64_t blocks = (*ss)[size_t(axis)];
        p->block = block_size;
        p->blocked = true;
        p->si = 1;
        p->sa = p->inner;
        p->so = blocks * p->inner;
      }
    }
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }
};

// Calls f(index, scale_index) over every element of x, rows in parallel
// unless the output is packed (neighbours share a byte).
template <class F>
void ForEachScaled(const ScalePlan& p, bool parallel, int threads, F f) {
  const int64_t rows = p.outer * p.dim;
  ParallelFor(parallel ? threads : 1, rows, WorkPerIndex{2.0 * double(p.inner)},
              [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
    const int64_t o = r / p.dim, a = r % p.dim;
    for (int64_t i = 0; i < p.inner; ++i) f(r * p.inner + i, p.Index(o, a, i));
  }});
}

// y = saturate(round(x / scale) + zero_point), the division in the scale's
// type or `precision`. Float8 and float4 outputs add the zero point and
// convert as Cast does (with `saturate` for float8).
class QuantizeLinearOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::make_unique<QuantizeLinearOp>();
    ASSIGN_OR_RETURN(op->a_, QuantAttrs::Parse(node));
    op->saturate_ = node.attr_int("saturate", 1) != 0;
    const int64_t precision = node.attr_int("precision", 0);
    if (precision != 0) {
      const DType d = DType(precision);
      if (!IsValidDType(int32_t(precision)) || (d != DType::kFloat && d != DType::kFloat16 && d != DType::kBFloat16))
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": precision ", precision, " must be float, float16 or bfloat16"));
      op->precision_ = d;
    }
    if (op->a_.output_dtype != DType::kUndefined && !QuantizedTypes::set().contains(op->a_.output_dtype))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": output_dtype ", LowerName(op->a_.output_dtype),
                                                     " is not a quantized type"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    DType out = a_.output_dtype;
    if (ctx.has_input(2)) {
      const DType zp = ctx.input(2).dtype;
      if (out != DType::kUndefined && out != zp)
        return ctx.Error(absl::StrCat("output_dtype ", LowerName(out), " differs from y_zero_point's ", LowerName(zp)));
      out = zp;
    }
    if (out == DType::kUndefined) out = DType::kUInt8;
    RETURN_IF_ERROR(a_.Plan(ctx, 1, 2));
    ValueType y = ctx.input(0);
    y.dtype = out;
    ctx.set_output(0, y);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* zero = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    const ScalePlan& p = ctx.plan<ScalePlan>();
    // The division's precision: `precision`, else the scale's type (float
    // for int32 and float8e8m0 scales). Quotients computed in double and
    // rounded once to a float type equal the division in that type.
    DType prec = precision_ != DType::kUndefined ? precision_ : scale.dtype();
    if (prec == DType::kInt32 || prec == DType::kFloat8E8M0) prec = DType::kFloat;
    std::vector<double> s = LoadAll<QuantizeScaleTypes>(scale);
    for (double& v : s) v = RoundToPrecision(prec, v);
    const std::vector<double> z = zero ? LoadAll<QuantizedTypes>(*zero) : std::vector<double>(s.size(), 0.0);
    const DType out = y.dtype();
    const bool integer = IsIntegerType(out);
    double lo = 0, hi = 0;
    if (integer) IntegerRange(out, lo, hi);
    const CastOptions options{saturate_, E8M0Rounding::kUp};
    absl::Status inner = absl::OkStatus();
    const absl::Status outer = Dispatch<QuantizeInputTypes>(ctx, x.dtype(), [&](auto x_tag) {
      using X = typename decltype(x_tag)::type;
      const X* px = x.data<X>();
      inner = Dispatch<QuantizedTypes>(ctx, out, [&](auto y_tag) {
        using Y = typename decltype(y_tag)::type;
        Y* py = y.data<Y>();
        ForEachScaled(p, !kIsPacked<Y>, ctx.threads(), [&](int64_t e, int64_t k) {
          const double q = RoundToPrecision(prec, RoundToPrecision(prec, LoadDouble(px, x.dtype(), e)) / s[size_t(k)]);
          // std::nearbyint rounds half to even (the default rounding mode).
          const double v = integer ? Saturate(std::nearbyint(q) + z[size_t(k)], lo, hi) : q + z[size_t(k)];
          StoreDouble(py, out, e, v, options);
        });
      });
    });
    return outer.ok() ? inner : outer;
  }

 private:
  QuantAttrs a_;
  bool saturate_ = true;
  DType precision_ = DType::kUndefined;
};

// y = (x - zero_point) * scale, computed in float (as ONNX's reference does),
// then converted to the output type (`output_dtype`, else the scale's).
class DequantizeLinearOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::make_unique<DequantizeLinearOp>();
    ASSIGN_OR_RETURN(op->a_, QuantAttrs::Parse(node));
    if (op->a_.output_dtype != DType::kUndefined && !DequantizeOutputTypes::set().contains(op->a_.output_dtype))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": output_dtype ", LowerName(op->a_.output_dtype),
                                                     " must be float, float16 or bfloat16"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType out = a_.output_dtype != DType::kUndefined ? a_.output_dtype : ctx.input(1).dtype;
    if (!DequantizeOutputTypes::set().contains(out))
      return ctx.Error(absl::StrCat("a ", LowerName(out), " scale needs output_dtype (float, float16 or bfloat16)"));
    RETURN_IF_ERROR(a_.Plan(ctx, 1, 2));
    ValueType y = ctx.input(0);
    y.dtype = out;
    ctx.set_output(0, y);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor* zero = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    const ScalePlan& p = ctx.plan<ScalePlan>();
    const std::vector<double> s = LoadAll<DequantizeScaleTypes>(*ctx.input(1));
    if (p.blocked)
      if (const BlockFormat* f = FindBlockFormat(x.dtype())) return DequantizeBlocked(ctx, *f, p, x, s, zero, y);
    const std::vector<double> z = zero ? LoadAll<DequantizeInputTypes>(*zero) : std::vector<double>(s.size(), 0.0);
    absl::Status inner = absl::OkStatus();
    const absl::Status outer = Dispatch<DequantizeInputTypes>(ctx, x.dtype(), [&](auto x_tag) {
      using X = typename decltype(x_tag)::type;
      const X* px = x.data<X>();
      inner = Dispatch<DequantizeOutputTypes>(ctx, y.dtype(), [&](auto y_tag) {
        using Y = typename decltype(y_tag)::type;
        Y* py = y.data<Y>();
        ForEachScaled(p, true, ctx.threads(), [&](int64_t e, int64_t k) {
          const float d = float(LoadDouble(px, x.dtype(), e) - z[size_t(k)]);
          StoreDouble(py, y.dtype(), e, double(d * float(s[size_t(k)])), CastOptions{});
        });
      });
    });
    return outer.ok() ? inner : outer;
  }

 private:
  // Blocked scales over a block format's data (kernels/quant/block_format.h):
  // with the axis last, each block goes through the format's row function
  // (in chunks); otherwise the elements of a block are `inner` apart and go
  // one at a time. The same float arithmetic as the plain path.
  static absl::Status DequantizeBlocked(const KernelContext& ctx, const BlockFormat& f, const ScalePlan& p,
                                        const Tensor& x, const std::vector<double>& s, const Tensor* zero, Tensor& y) {
    // The pool's size rule: an element decoded, scaled and stored some 4 units.
    const int threads = ThreadsForWork(ctx.threads(), 4.0 * double(x.size()));
    return Dispatch<DequantizeOutputTypes>(ctx, y.dtype(), [&](auto tag) {
      using Y = typename decltype(tag)::type;
      Y* py = y.data<Y>();
      const auto store = [](float v) {
        if constexpr (std::is_same_v<Y, float>) return v;
        else if constexpr (std::is_same_v<Y, Float16>) return ToFloat16(double(v));
        else return ToBFloat16(double(v));
      };
      const auto zero_at = [&](int64_t k) { return zero ? float(f.load(zero->raw(), k)) : 0.0f; };
      constexpr int64_t kChunk = 256;
      if (p.inner == 1) {
        const int64_t blocks = p.so;  // per row of `dim` elements
        const int64_t tasks = p.outer * blocks;
        ParallelFor(threads, tasks, std::max<int64_t>(1, (tasks + threads - 1) / threads), [&](int64_t t0, int64_t t1) {
          float buf[kChunk];
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t o = t / blocks, a0 = (t % blocks) * p.block, n = std::min(p.block, p.dim - a0);
            const float scale = float(s[size_t(t)]), z = zero_at(t);  // scale index o * so + block = t
            for (int64_t c = 0; c < n; c += kChunk) {
              const int64_t len = std::min(kChunk, n - c), e = o * p.dim + a0 + c;
              f.dequantize_row(x.raw(), e, len, scale, z, buf);
              for (int64_t i = 0; i < len; ++i) py[e + i] = store(buf[i]);
            }
          }
        });
      } else {
        const int64_t rows = p.outer * p.dim;
        ParallelFor(threads, rows, std::max<int64_t>(1, (rows + threads - 1) / threads), [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t o = r / p.dim, a = r % p.dim;
            for (int64_t i = 0; i < p.inner; ++i) {
              const int64_t k = p.Index(o, a, i);
              float v;
              f.dequantize_row(x.raw(), r * p.inner + i, 1, float(s[size_t(k)]), zero_at(k), &v);
              py[r * p.inner + i] = store(v);
            }
          }
        });
      }
    });
  }

  QuantAttrs a_;
};

// ---- DynamicQuantizeLinear: uint8 with the scale and zero point of x's range ----

// As ONNX's reference: the range [min(0, min x), max(0, max x)] over 0..255,
// in float; zero_point = round(clip(-min / scale, 0, 255)).
class DynamicQuantizeLinearOp : public Op {
 public:
  explicit DynamicQuantizeLinearOp(const Node&) {}

  absl::Status Infer(InferContext& ctx) const override {
    ValueType y = ctx.input(0);
    y.dtype = DType::kUInt8;
    ctx.set_output(0, y);
    ctx.set_output(1, ValueType::Of(DType::kFloat, {}));
    ctx.set_output(2, ValueType::Of(DType::kUInt8, {}));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const float* px = x.data<float>();
    const int64_t n = x.size();
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, px[i]);
      hi = std::max(hi, px[i]);
    }
    const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;  // all zeros: any scale
    const float zero = float(std::nearbyint(Saturate(0.0f - lo / scale, 0, 255)));
    uint8_t* py = ctx.output(0).data<uint8_t>();
    ParallelFor(ctx.threads(), n, WorkPerIndex{1}, [&](int64_t i_begin, int64_t i_end) {
      for (int64_t i = i_begin; i < i_end; ++i)
        py[i] = uint8_t(Saturate(std::nearbyint(px[i] / scale) + zero, 0, 255));
    });
    if (ctx.output_requested(1)) ctx.output(1).data<float>()[0] = scale;
    if (ctx.output_requested(2)) ctx.output(2).data<uint8_t>()[0] = uint8_t(zero);
    return absl::OkStatus();
  }
};

// ---- MatMulInteger and QLinearMatMul ----

// Plans the product (MatMul's plan, ops/math/matmul_plan.h) and sets output 0
// (of `dtype`); checks each listed per-side input (input index, 'a' or 'b'),
// a zero point or scale, is a scalar or one per row of A (M) / column of B (N).
absl::Status PlanIntMatMul(InferContext& ctx, size_t ia, size_t ib, DType dtype,
                           std::initializer_list<std::pair<size_t, char>> sides) {
  const std::optional<Shape> sa0 = ctx.input(ia).concrete_shape(), sb0 = ctx.input(ib).concrete_shape();
  if (!sa0 || !sb0) {
    // The dims known so far, as MatMul infers them: later rewrites and
    // inference read the rank and the columns (an RMSNorm over a residual
    // sum of this product needs its last dim).
    ValueType out;
    out.dtype = dtype;
    const ValueType &ta = ctx.input(ia), &tb = ctx.input(ib);
    if (ta.dims && tb.dims && !ta.dims->empty() && !tb.dims->empty()) {
      std::vector<Dim> da = *ta.dims, db = *tb.dims;
      const bool a_vec = da.size() == 1, b_vec = db.size() == 1;
      if (a_vec) da.insert(da.begin(), Dim::Known(1));
      if (b_vec) db.push_back(Dim::Known(1));
      const Dim &k1 = da.back(), &k2 = db[db.size() - 2];
      if (k1.known() && k2.known() && k1.value != k2.value)
        return ctx.Error(absl::StrCat("inner dimensions differ: ", ta.ToString(), " x ", tb.ToString()));
      ASSIGN_OR_RETURN(out.dims, BroadcastDims(ctx, std::vector<Dim>(da.begin(), da.end() - 2),
                                               std::vector<Dim>(db.begin(), db.end() - 2)));
      if (!a_vec) out.dims->push_back(da[da.size() - 2]);
      if (!b_vec) out.dims->push_back(db.back());
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }
  auto p = std::make_shared<MatMulPlan>();
  RETURN_IF_ERROR(PlanMatMul(ctx, *sa0, *sb0, absl::StrCat(ShapeToString(*sa0), " x ", ShapeToString(*sb0)), *p));
  for (const auto& [i, side] : sides) {
    if (!ctx.has_input(i)) continue;
    const std::optional<Shape> s = ctx.input(i).concrete_shape();
    if (!s) continue;
    const int64_t want = side == 'a' ? p->M : p->N;
    if (s->size() > 1 || (ElementCount(*s) != 1 && ElementCount(*s) != want))
      return ctx.Error(absl::StrCat("input ", i, " of shape ", ShapeToString(*s), " must be a scalar or 1-D of ", want,
                                    side == 'a' ? " (one per row of A)" : " (one per column of B)"));
  }
  ctx.set_output(0, ValueType::Of(dtype, p->output));
  ctx.set_plan(std::move(p));
  return absl::OkStatus();
}

// The zero point of row (or column) i: one value, or one per row.
inline int32_t ZeroAt(const std::vector<int32_t>& z, int64_t i) { return z.size() == 1 ? z[0] : z[size_t(i)]; }

template <class T>
std::vector<int32_t> IntValues(const Tensor* t) {
  if (t == nullptr) return {0};
  std::vector<int32_t> v(size_t(t->size()));
  for (int64_t i = 0; i < t->size(); ++i) v[size_t(i)] = int32_t(t->data<T>()[i]);
  return v;
}

// C = (A - za) x (B - zb) in int32 (wrapping), the plain reference. Each
// product of two differences fits int32 (|a - za|, |b - zb| <= 255), and a sum
// kept in uint32 wraps as the int64 sum taken modulo 2^32 does.
template <class TA, class TB>
void IntMatMulReference(const MatMulPlan& p, const TA* a, const TB* b, const std::vector<int32_t>& za,
                        const std::vector<int32_t>& zb, int32_t* c, int threads) {
  const int64_t M = p.M, K = p.K, N = p.N;
  ParallelFor(threads, p.batches * M, WorkPerIndex{double(N * K)}, [&](int64_t t_begin, int64_t t_end) {
    std::vector<uint32_t> acc(static_cast<size_t>(N));
    std::vector<int32_t> zbv(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) zbv[size_t(n)] = ZeroAt(zb, n);
    for (int64_t t = t_begin; t < t_end; ++t) {
      const int64_t bi = t / M, m = t % M;
      int64_t oa, ob;
      p.Offsets(bi, oa, ob);
      const TA* ar = a + (oa * M + m) * K;
      const TB* bm = b + ob * K * N;
      const int32_t zam = ZeroAt(za, m);
      std::fill(acc.begin(), acc.end(), 0u);
      for (int64_t k = 0; k < K; ++k) {
        const int32_t av = int32_t(ar[k]) - zam;
        const TB* br = bm + k * N;
        for (int64_t n = 0; n < N; ++n) acc[size_t(n)] += uint32_t(av * (int32_t(br[n]) - zbv[size_t(n)]));
      }
      int32_t* cr = c + t * N;
      for (int64_t n = 0; n < N; ++n) cr[n] = int32_t(acc[size_t(n)]);
    }
  });
}

// Whether oneDNN's int8 matmul is exact here: with VNNI its products
// accumulate in int32; without, it adds pairs of u8 x s8 products in int16
// with saturation (VPMADDUBSW), which loses values as small as 255 x 127 x 2
// (wrong answers seen on an AVX2-only Zen 3). AVX-VNNI alone is not trusted:
// oneDNN 2.6's matmul may not use it.
bool OneDnnIntMatMulExact() {
  static const bool exact = [] {
    const unsigned isa = unsigned(dnnl::get_effective_cpu_isa());
    const unsigned avx512_core_vnni = unsigned(dnnl::cpu_isa::avx512_core_vnni);
    return (isa & avx512_core_vnni) == avx512_core_vnni;
  }();
  return exact;
}

// C = A x B, A uint8 or int8, B int8, on oneDNN (int32 accumulation, no
// zero points); false, having written nothing useful, when it declines or
// would not be exact (no VNNI).
bool OneDnnIntMatMul(const MatMulPlan& p, DType ta, const void* a, const void* b, int32_t* c, int threads) {
  using dnnl::memory;
  if (!p.one_call || p.batches <= 0 || p.M <= 0 || p.K <= 0 || p.N <= 0 || !OneDnnIntMatMulExact()) return false;
  const int64_t M = p.M, K = p.K, N = p.N;
  try {
    const OmpThreadsScope scope(threads);
    const memory::desc a_md({p.count_a, M, K}, ta == DType::kUInt8 ? memory::data_type::u8 : memory::data_type::s8,
                            memory::dims{M * K, K, 1});
    const memory::desc b_md({p.count_b, K, N}, memory::data_type::s8, memory::dims{K * N, N, 1});
    const memory::desc c_md({p.batches, M, N}, memory::data_type::s32, memory::dims{M * N, N, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), OneDnnEngine());
    const dnnl::matmul primitive(pd);
    dnnl::stream stream(OneDnnEngine());
    memory a_mem(a_md, OneDnnEngine(), const_cast<void*>(a));
    memory b_mem(b_md, OneDnnEngine(), const_cast<void*>(b));
    memory c_mem(c_md, OneDnnEngine(), c);
    primitive.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

// The zero points applied to a raw product C = A x B:
// (A - za)(B - zb) = AB - za[m] colsum(B)[n] - zb[n] rowsum(A)[m] + K za[m] zb[n], modulo 2^32.
template <class TA, class TB>
void ApplyZeroPoints(const MatMulPlan& p, const TA* a, const TB* b, const std::vector<int32_t>& za,
                     const std::vector<int32_t>& zb, int32_t* c) {
  const int64_t M = p.M, K = p.K, N = p.N;
  for (int64_t t = 0; t < p.batches; ++t) {
    int64_t oa, ob;
    p.Offsets(t, oa, ob);
    std::vector<int64_t> col(size_t(N), 0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) col[size_t(n)] += b[(ob * K + k) * N + n];
    for (int64_t m = 0; m < M; ++m) {
      int64_t row = 0;
      for (int64_t k = 0; k < K; ++k) row += a[(oa * M + m) * K + k];
      const int64_t zam = ZeroAt(za, m);
      int32_t* cr = c + (t * M + m) * N;
      for (int64_t n = 0; n < N; ++n) {
        const int64_t zbn = ZeroAt(zb, n);
        const int64_t v = int64_t(cr[n]) - zam * col[size_t(n)] - zbn * row + K * zam * zbn;
        cr[n] = int32_t(uint32_t(uint64_t(v)));
      }
    }
  }
}

// The int32 product of inputs ia and ib with zero points iza and izb (absent
// when beyond the inputs or not given).
absl::Status IntMatMul(KernelContext& ctx, size_t ia, size_t iza, size_t ib, size_t izb, int32_t* c) {
  const MatMulPlan& p = ctx.plan<MatMulPlan>();
  const Tensor& a = *ctx.input(ia);
  const Tensor& b = *ctx.input(ib);
  const Tensor* za = iza < ctx.num_inputs() ? ctx.input(iza) : nullptr;
  const Tensor* zb = izb < ctx.num_inputs() ? ctx.input(izb) : nullptr;
  absl::Status inner = absl::OkStatus();
  const absl::Status outer = Dispatch<Int8Types>(ctx, a.dtype(), [&](auto a_tag) {
    using TA = typename decltype(a_tag)::type;
    inner = Dispatch<Int8Types>(ctx, b.dtype(), [&](auto b_tag) {
      using TB = typename decltype(b_tag)::type;
      const std::vector<int32_t> zav = IntValues<TA>(za), zbv = IntValues<TB>(zb);
      if (std::is_same_v<TB, int8_t> && OneDnnIntMatMul(p, a.dtype(), a.raw(), b.raw(), c, ctx.threads())) {
        const bool zero = std::all_of(zav.begin(), zav.end(), [](int32_t v) { return v == 0; }) &&
                          std::all_of(zbv.begin(), zbv.end(), [](int32_t v) { return v == 0; });
        if (!zero) ApplyZeroPoints(p, a.data<TA>(), b.data<TB>(), zav, zbv, c);
        return;
      }
      IntMatMulReference(p, a.data<TA>(), b.data<TB>(), zav, zbv, c, ctx.threads());
    });
  });
  return outer.ok() ? inner : outer;
}

class MatMulIntegerOp : public Op {
 public:
  explicit MatMulIntegerOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    return PlanIntMatMul(ctx, 0, 1, DType::kInt32, {{2, 'a'}, {3, 'b'}});
  }
  absl::Status Compute(KernelContext& ctx) const override {
    return IntMatMul(ctx, 0, 2, 1, 3, ctx.output(0).data<int32_t>());
  }
};

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point): the int32 product requantized, y = saturate(round(C *
// a_scale * b_scale / y_scale) + y_zero_point). The multiplier is formed in
// the scales' type, the product in double, as ONNX's reference does.
class QLinearMatMulOp : public Op {
 public:
  explicit QLinearMatMulOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    for (size_t i : {size_t(6), size_t(7)}) {
      const std::optional<Shape> s = ctx.input(i).concrete_shape();
      if (s && ElementCount(*s) != 1)
        return ctx.Error(absl::StrCat(i == 6 ? "y_scale" : "y_zero_point", " must have one element, got ", ShapeToString(*s)));
    }
    return PlanIntMatMul(ctx, 0, 3, ctx.input(7).dtype, {{1, 'a'}, {2, 'a'}, {4, 'b'}, {5, 'b'}});
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const MatMulPlan& p = ctx.plan<MatMulPlan>();
    Tensor& y = ctx.output(0);
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(y.size(), sizeof(int32_t), "the int32 products"));
    std::vector<int32_t> c(size_t(y.size()));
    RETURN_IF_ERROR(IntMatMul(ctx, 0, 2, 3, 5, c.data()));
    using ScaleTypes = TypeList<float, Float16, BFloat16>;
    const DType st = ctx.input(1)->dtype();
    const std::vector<double> sa = LoadAll<ScaleTypes>(*ctx.input(1)), sb = LoadAll<ScaleTypes>(*ctx.input(4));
    const double sy = LoadAll<ScaleTypes>(*ctx.input(6))[0];
    const double zy = LoadAll<Int8Types>(*ctx.input(7))[0];
    double lo, hi;
    IntegerRange(y.dtype(), lo, hi);
    return Dispatch<Int8Types>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* py = y.data<T>();
      for (int64_t e = 0; e < y.size(); ++e) {
        const int64_t m = (e / p.N) % p.M, n = e % p.N;
        const double mult = RoundToPrecision(st, RoundToPrecision(st, sa[sa.size() == 1 ? 0 : size_t(m)] * sb[sb.size() == 1 ? 0 : size_t(n)]) / sy);
        py[e] = T(Saturate(std::nearbyint(double(c[size_t(e)]) * mult + zy), lo, hi));
      }
    });
  }
};

}  // namespace

std::vector<OpDef> QuantizeOps() {
  // One row each: later versions add types and attributes (axis 13, float8
  // and saturate 19, block_size, output_dtype and 4-/16-bit types 21,
  // float4e2m1 and precision 23, float8e8m0 scales 24, 2-bit types 25),
  // which earlier models cannot use.
  return {
      {kOnnxDomain, "QuantizeLinear", Versions{10}, "T1 T2 T3?", "T3",
       {{"T1", QuantizeInputTypes::set()}, {"T2", QuantizeScaleTypes::set()}, {"T3", QuantizedTypes::set()}},
       QuantizeLinearOp::Create},
      {kOnnxDomain, "DequantizeLinear", Versions{10}, "T1 T2 T1?", "T3",
       {{"T1", DequantizeInputTypes::set()}, {"T2", DequantizeScaleTypes::set()}, {"T3", DequantizeOutputTypes::set()}},
       DequantizeLinearOp::Create},
      {kOnnxDomain, "DynamicQuantizeLinear", Versions{11}, "T1", "T2 S T2",
       {{"T1", {DType::kFloat}}, {"T2", {DType::kUInt8}}, {"S", {DType::kFloat}}},
       MakeOp<DynamicQuantizeLinearOp>},
      {kOnnxDomain, "MatMulInteger", Versions{10}, "T1 T2 T1? T2?", "T3",
       {{"T1", Int8Types::set()}, {"T2", Int8Types::set()}, {"T3", {DType::kInt32}}}, MakeOp<MatMulIntegerOp>},
      // 21 adds float16 and bfloat16 scales (and float8 data, not implemented).
      {kOnnxDomain, "QLinearMatMul", Versions{10}, "T1 S T1 T2 S T2 S T3", "T3",
       {{"T1", Int8Types::set()}, {"T2", Int8Types::set()}, {"T3", Int8Types::set()},
        {"S", TypeList<float, Float16, BFloat16>::set()}},
       MakeOp<QLinearMatMulOp>},
  };
}

}  // namespace onnx_mini
