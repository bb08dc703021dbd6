// Decoder-layer ops: LayerNormalization (17), RMSNormalization (23),
// RotaryEmbedding (23). 16-bit inputs compute in float.
#include <cmath>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

constexpr std::initializer_list<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                                      DType::kBFloat16};

template <class F>
void VisitFloat(DType dtype, F&& f) {
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Float16> ||
                  std::is_same_v<T, BFloat16>)
      f(tag);
  });
}

// ---- LayerNormalization / RMSNormalization ----

// Validates X and the normalized axis; scale and bias must broadcast
// (unidirectionally) to X's dims from the axis on.
absl::Status InferNormalization(InferContext& ctx, bool rms) {
  absl::Status s = rms ? CheckArity(ctx, 2, 2, 1, 1) : CheckArity(ctx, 2, 3, 1, 3);
  if (!s.ok()) return s;
  absl::StatusOr<DType> dtype = InputDType(ctx, 0);
  if (!dtype.ok()) return dtype.status();
  const ValueType& x = ctx.input(0);
  ctx.set_output(0, x);
  if (!x.dims) return absl::OkStatus();
  const int64_t rank = x.rank(), axis_attr = ctx.node().attr_int("axis", -1);
  if (axis_attr < -rank || axis_attr >= rank)
    return ctx.Error(absl::StrCat("axis ", axis_attr, " is out of range for rank ", rank));
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
    const std::vector<Dim>& p = *ctx.input(i).dims;
    if (int64_t(p.size()) > rank - axis)
      return ctx.Error(absl::StrCat(i == 1 ? "scale " : "bias ", ctx.input(i).ToString(),
                                    " has more dims than the normalized part of ", x.ToString()));
    for (size_t k = 0; k < p.size(); ++k) {
      const Dim& want = (*x.dims)[size_t(rank) - p.size() + k];
      if (p[k].known() && want.known() && p[k].value != 1 && p[k].value != want.value)
        return ctx.Error(absl::StrCat(i == 1 ? "scale " : "bias ", ctx.input(i).ToString(), " does not broadcast to ",
                                      x.ToString(), " from axis ", axis));
    }
  }
  // Mean and InvStdDev: X's shape with the normalized dims set to 1.
  ValueType stat;
  stat.dtype = ctx.node().attr_int("stash_type", 1) == 11 ? DType::kDouble : DType::kFloat;
  stat.dims = *x.dims;
  for (int64_t k = axis; k < rank; ++k) (*stat.dims)[size_t(k)] = Dim::Known(1);
  for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, stat);
  return absl::OkStatus();
}
absl::Status InferLayerNorm(InferContext& ctx) { return InferNormalization(ctx, false); }
absl::Status InferRmsNorm(InferContext& ctx) { return InferNormalization(ctx, true); }

template <bool kRms>
class NormalizationKernel : public OpKernel {
 public:
  explicit NormalizationKernel(const KernelInfo& info)
      : axis_(info.node.attr_int("axis", -1)), epsilon_(info.node.attr_float("epsilon", 1e-5f)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& scale = *ctx.input(1);
    const Tensor* bias = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    const int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    int64_t rows = 1, n = 1;
    for (int64_t d = 0; d < axis; ++d) rows *= x.dim(d);
    for (int64_t d = axis; d < x.rank(); ++d) n *= x.dim(d);
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const std::vector<int64_t> scale_strides = BroadcastStrides(scale.shape(), norm_shape);
    const std::vector<int64_t> bias_strides = bias ? BroadcastStrides(bias->shape(), norm_shape) : scale_strides;
    // Flat offsets of scale/bias for each normalized element.
    std::vector<int64_t> scale_at(static_cast<size_t>(n)), bias_at(scale_at);
    for (int64_t e = 0; e < n; ++e) {
      int64_t rem = e, so = 0, bo = 0;
      for (int64_t d = int64_t(norm_shape.size()) - 1; d >= 0; --d) {
        const int64_t idx = rem % norm_shape[size_t(d)];
        rem /= norm_shape[size_t(d)];
        so += idx * scale_strides[size_t(d)];
        bo += idx * bias_strides[size_t(d)];
      }
      scale_at[size_t(e)] = so;
      bias_at[size_t(e)] = bo;
    }
    Tensor& y = ctx.output(0);
    Tensor* mean_out = ctx.num_outputs() > 1 && ctx.output_requested(1) ? &ctx.output(1) : nullptr;
    Tensor* inv_out = ctx.num_outputs() > 2 && ctx.output_requested(2) ? &ctx.output(2) : nullptr;
    VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* ps = scale.data<T>();
      const T* pb = bias ? bias->data<T>() : nullptr;
      T* py = y.data<T>();
#pragma omp parallel for num_threads(ctx.threads()) if (rows * n > (1 << 15))
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = px + r * n;
        double mean = 0, sq = 0;
        for (int64_t e = 0; e < n; ++e) {
          const double v = double(Widen(row[e]));
          mean += v;
          sq += v * v;
        }
        mean /= double(n ? n : 1);
        const double var = kRms ? sq / double(n ? n : 1) : std::max(0.0, sq / double(n ? n : 1) - mean * mean);
        const double inv = 1.0 / std::sqrt(var + double(epsilon_));
        for (int64_t e = 0; e < n; ++e) {
          double v = (double(Widen(row[e])) - (kRms ? 0.0 : mean)) * inv * double(Widen(ps[scale_at[size_t(e)]]));
          if (pb) v += double(Widen(pb[bias_at[size_t(e)]]));
          py[r * n + e] = Narrow<T>(typename Arith<T>::type(v));
        }
        if (mean_out) SetStat(*mean_out, r, mean);
        if (inv_out) SetStat(*inv_out, r, inv);
      }
    });
    return absl::OkStatus();
  }

 private:
  static void SetStat(Tensor& t, int64_t i, double v) {
    if (t.dtype() == DType::kDouble) t.data<double>()[i] = v;
    else t.data<float>()[i] = float(v);
  }
  int64_t axis_;
  float epsilon_;
};

template <bool kRms>
absl::StatusOr<std::unique_ptr<OpKernel>> CreateNormalization(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kFloatTypes);
  if (!s.ok()) return s;
  for (size_t i = 1; i < info.inputs.size(); ++i)
    if (info.inputs[i] && info.inputs[i]->dtype != info.inputs[0]->dtype)
      return NotImplemented(info.node, absl::StrCat(LowerName(info.inputs[0]->dtype), " with ",
                                                    LowerName(info.inputs[i]->dtype), " parameters"));
  return MakeKernel<NormalizationKernel<kRms>>(info);
}

// ---- RotaryEmbedding ----

struct RotaryLayout {
  int64_t batch, seq, heads, head_size, rotary_dim;
  bool four_d;
};

absl::StatusOr<RotaryLayout> ResolveRotary(const InferContext& ctx, const Shape& x, const Shape& cos,
                                           const Shape* position_ids) {
  RotaryLayout l{};
  const int64_t num_heads = ctx.node().attr_int("num_heads", 0);
  if (x.size() == 4) {
    l = {x[0], x[2], x[1], x[3], 0, true};  // (B, H, S, D)
  } else if (x.size() == 3) {
    if (num_heads <= 0 || x[2] % num_heads != 0)
      return ctx.Error(absl::StrCat("3-D input ", ShapeToString(x), " needs num_heads > 0 dividing its hidden size, got ",
                                    num_heads));
    l = {x[0], x[1], num_heads, x[2] / num_heads, 0, false};
  } else {
    return ctx.Error(absl::StrCat("input must be 3-D or 4-D, got ", ShapeToString(x)));
  }
  l.rotary_dim = ctx.node().attr_int("rotary_embedding_dim", 0);
  if (l.rotary_dim == 0) l.rotary_dim = l.head_size;
  if (l.rotary_dim < 0 || l.rotary_dim > l.head_size || l.rotary_dim % 2 != 0)
    return ctx.Error(absl::StrCat("rotary_embedding_dim ", l.rotary_dim, " must be even and at most the head size ",
                                  l.head_size));
  const int64_t half = l.rotary_dim / 2;
  if (position_ids) {
    if (position_ids->size() != 2 || (*position_ids)[0] != l.batch || (*position_ids)[1] != l.seq)
      return ctx.Error(absl::StrCat("position_ids ", ShapeToString(*position_ids), " must be (", l.batch, ", ", l.seq, ")"));
    if (cos.size() != 2 || cos[1] != half)
      return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(cos), " must be (max_position, ", half, ")"));
  } else if (cos.size() != 3 || cos[0] != l.batch || cos[1] != l.seq || cos[2] != half) {
    return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(cos), " must be (", l.batch, ", ", l.seq, ", ", half,
                                  ") without position_ids"));
  }
  return l;
}

absl::Status InferRotary(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 3, 4);
  if (!dtype.ok()) return dtype.status();
  for (size_t i = 1; i < 3; ++i) {
    absl::StatusOr<DType> t = InputDType(ctx, i);
    if (!t.ok()) return t.status();
    if (*t != *dtype) return ctx.Error(absl::StrCat("cos/sin caches must be ", LowerName(*dtype)));
  }
  const std::optional<Shape> x = ctx.input(0).concrete_shape();
  const std::optional<Shape> cos = ctx.input(1).concrete_shape();
  const std::optional<Shape> sin = ctx.input(2).concrete_shape();
  std::optional<Shape> pos;
  if (ctx.has_input(3)) pos = ctx.input(3).concrete_shape();
  if (x && cos && sin && (!ctx.has_input(3) || pos)) {
    if (*cos != *sin) return ctx.Error("cos_cache and sin_cache must have the same shape");
    absl::StatusOr<RotaryLayout> l = ResolveRotary(ctx, *x, *cos, pos ? &*pos : nullptr);
    if (!l.ok()) return l.status();
    if (const Tensor* ids = ctx.value(3))
      for (int64_t i = 0; i < ids->size(); ++i)
        if (ids->data<int64_t>()[i] < 0 || ids->data<int64_t>()[i] >= (*cos)[0])
          return ctx.Error(absl::StrCat("position_ids value ", ids->data<int64_t>()[i], " is outside the cache of ",
                                        (*cos)[0], " positions"));
  }
  ctx.set_output(0, ctx.input(0));
  return absl::OkStatus();
}

class RotaryKernel : public OpKernel {
 public:
  explicit RotaryKernel(const KernelInfo& info)
      : node_(info.node), interleaved_(info.node.attr_int("interleaved", 0) != 0) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& cos = *ctx.input(1);
    const Tensor& sin = *ctx.input(2);
    const Tensor* ids = ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
    InferContext ictx(node_, {}, {});
    absl::StatusOr<RotaryLayout> layout = ResolveRotary(ictx, x.shape(), cos.shape(), ids ? &ids->shape() : nullptr);
    if (!layout.ok()) return layout.status();
    const RotaryLayout& l = *layout;
    const int64_t half = l.rotary_dim / 2;
    Tensor& y = ctx.output(0);
    VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      for (int64_t b = 0; b < l.batch; ++b)
        for (int64_t s = 0; s < l.seq; ++s) {
          const int64_t row = ids ? ids->data<int64_t>()[b * l.seq + s] : b * l.seq + s;
          const T* c = cos.data<T>() + row * half;
          const T* sn = sin.data<T>() + row * half;
          for (int64_t h = 0; h < l.heads; ++h) {
            const int64_t off = l.four_d ? ((b * l.heads + h) * l.seq + s) * l.head_size
                                         : ((b * l.seq + s) * l.heads + h) * l.head_size;
            const T* in = x.data<T>() + off;
            T* out = y.data<T>() + off;
            for (int64_t i = 0; i < half; ++i) {
              const int64_t i1 = interleaved_ ? 2 * i : i, i2 = interleaved_ ? 2 * i + 1 : i + half;
              const A x1 = A(Widen(in[i1])), x2 = A(Widen(in[i2]));
              const A cv = A(Widen(c[i])), sv = A(Widen(sn[i]));
              out[i1] = Narrow<T>(x1 * cv - x2 * sv);
              out[i2] = Narrow<T>(x2 * cv + x1 * sv);
            }
            for (int64_t i = l.rotary_dim; i < l.head_size; ++i) out[i] = in[i];
          }
        }
    });
    return absl::OkStatus();
  }

 private:
  const Node& node_;
  bool interleaved_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateRotary(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, kFloatTypes);
  if (!s.ok()) return s;
  return MakeKernel<RotaryKernel>(info);
}

}  // namespace

std::vector<OpDef> NormalizationOps() {
  return {
      {"", "LayerNormalization", 17, 0, InferLayerNorm, CreateNormalization<false>},
      {"", "RMSNormalization", 23, 0, InferRmsNorm, CreateNormalization<true>},
      {"", "RotaryEmbedding", 23, 0, InferRotary, CreateRotary},
  };
}

}  // namespace onnx_mini
