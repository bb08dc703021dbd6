// Normalizations of images: BatchNormalization (1, 6, 7, 9, 14, 15),
// InstanceNormalization (1, 6, 22), GroupNormalization (18: scale and bias
// per group; 21: per channel) and LRN (1, 13). Statistics are computed in
// double; 16-bit inputs are read and written through float.
#include <cmath>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

// X seen as (N, C, inner): the batch, channels, and spatial elements per channel.
struct ImagePlan : OpPlan {
  int64_t n = 0, c = 0, inner = 1;
};

absl::StatusOr<std::shared_ptr<ImagePlan>> PlanImage(const InferContext& ctx, const Shape& xs, int64_t min_rank) {
  if (int64_t(xs.size()) < min_rank)
    return ctx.Error(absl::StrCat("X ", ShapeToString(xs), " must have rank at least ", min_rank, " (N, C, ...)"));
  auto p = std::make_shared<ImagePlan>();
  p->n = xs[0];
  p->c = xs.size() > 1 ? xs[1] : 1;
  for (size_t i = 2; i < xs.size(); ++i) p->inner *= xs[i];
  return p;
}

// Checks that input `i` has shape `want` (when its shape is known).
absl::Status CheckParam(const InferContext& ctx, size_t i, const char* name, const Shape& want) {
  if (!ctx.has_input(i)) return absl::OkStatus();
  const std::optional<Shape> s = ctx.input(i).concrete_shape();
  if (s && *s != want)
    return ctx.Error(absl::StrCat(name, " ", ShapeToString(*s), " must be ", ShapeToString(want)));
  return absl::OkStatus();
}

std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> v(size_t(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[size_t(i)] = GetDouble(t, i);
  return v;
}

// y = x * a[param] + b[param] over X as (N, C, inner), where a parameter
// index is the channel (per_element false) or channel * inner + i.
template <class T>
void ScaleShift(const ImagePlan& p, const T* x, T* y, const std::vector<double>& a, const std::vector<double>& b,
                bool per_element, int threads) {
  using A = typename Arith<T>::type;
  ParallelFor(threads, p.n * p.c, WorkPerIndex{2.0 * double(p.inner)},
              [&](int64_t nc_begin, int64_t nc_end) { for (int64_t nc = nc_begin; nc < nc_end; ++nc) {
    const int64_t c = nc % p.c;
    const T* xi = x + nc * p.inner;
    T* yi = y + nc * p.inner;
    for (int64_t i = 0; i < p.inner; ++i) {
      const size_t k = size_t(per_element ? c * p.inner + i : c);
      yi[i] = Narrow<T>(A(double(Widen(xi[i])) * a[k] + b[k]));
    }
  }});
}

// ---- BatchNormalization ----

class BatchNormOp : public Op {
 public:
  explicit BatchNormOp(const Node& node)
      : opset_(node.opset), epsilon_(node.attr_float("epsilon", 1e-5f)), momentum_(node.attr_float("momentum", 0.9f)),
        // spatial (before 9): 0 gives every element of a channel its own statistics.
        spatial_(node.opset >= 9 || node.attr_int("spatial", 1) != 0),
        training_(node.opset >= 14 && node.attr_int("training_mode", 0) != 0) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ctx.set_output(0, x);
    bool extra = false;
    for (size_t o = 1; o < ctx.num_outputs(); ++o) extra |= ctx.output_requested(o);
    if (extra && !training_)
      return opset_ >= 14 ? ctx.Error("running_mean and running_var are outputs only with training_mode = 1")
                          : NotImplemented(ctx.node(), "training outputs before opset 14");
    const std::optional<Shape> xs = x.concrete_shape();
    if (!xs) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::shared_ptr<ImagePlan> p, PlanImage(ctx, *xs, 2));
    Shape param = {p->c};
    if (!spatial_) param.insert(param.end(), xs->begin() + 2, xs->end());
    const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) RETURN_IF_ERROR(CheckParam(ctx, i, names[i], param));
    for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, ValueType::Of(ctx.input(3).dtype, param));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const ImagePlan& p = ctx.plan<ImagePlan>();
    const std::vector<double> scale = Doubles(*ctx.input(1)), bias = Doubles(*ctx.input(2));
    std::vector<double> mean = Doubles(*ctx.input(3)), var = Doubles(*ctx.input(4));
    if (training_) {
      // The batch's own statistics normalize; the running ones move towards them.
      std::vector<double> bm(size_t(p.c), 0.0), bv(size_t(p.c), 0.0);
      RETURN_IF_ERROR(Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = x.data<T>();
        for (int64_t c = 0; c < p.c; ++c) {
          double s = 0, sq = 0;
          for (int64_t n = 0; n < p.n; ++n)
            for (int64_t i = 0; i < p.inner; ++i) {
              const double v = double(Widen(px[(n * p.c + c) * p.inner + i]));
              s += v;
              sq += v * v;
            }
          const double count = double(std::max<int64_t>(1, p.n * p.inner));
          bm[size_t(c)] = s / count;
          bv[size_t(c)] = std::max(0.0, sq / count - bm[size_t(c)] * bm[size_t(c)]);
        }
      }));
      for (size_t o = 1; o < 3 && o < ctx.num_outputs(); ++o) {
        if (!ctx.output_requested(o)) continue;
        Tensor& out = ctx.output(o);
        const std::vector<double>& running = o == 1 ? mean : var;
        const std::vector<double>& batch = o == 1 ? bm : bv;
        for (int64_t c = 0; c < p.c; ++c)
          SetDouble(out, c, running[size_t(c)] * double(momentum_) + batch[size_t(c)] * (1 - double(momentum_)));
      }
      mean = bm;
      var = bv;
    }
    std::vector<double> a(mean.size()), b(mean.size());
    for (size_t k = 0; k < mean.size(); ++k) {
      a[k] = scale[k] / std::sqrt(var[k] + double(epsilon_));
      b[k] = bias[k] - mean[k] * a[k];
    }
    Tensor& y = ctx.output(0);
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      ScaleShift(p, x.data<T>(), y.data<T>(), a, b, !spatial_, ctx.threads());
    });
  }

 private:
  int64_t opset_;
  float epsilon_, momentum_;
  bool spatial_, training_;
};

// ---- InstanceNormalization and GroupNormalization ----

// Normalizes X over groups of `channels / groups` channels per sample
// (InstanceNormalization: one channel per group), then scales and shifts
// each channel by its own parameter or by its group's.
class GroupNormOp : public Op {
 public:
  // groups 0: instance normalization.
  GroupNormOp(const Node& node, bool instance)
      : instance_(instance), groups_(instance ? 0 : node.attr_int("num_groups", 0)),
        per_group_params_(!instance && node.opset < 21), epsilon_(node.attr_float("epsilon", 1e-5f)) {}

  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node, bool instance) {
    auto op = std::make_unique<GroupNormOp>(node, instance);
    if (!instance && op->groups_ < 1)
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": num_groups ", op->groups_, " must be given and positive"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    const std::optional<Shape> xs = ctx.input(0).concrete_shape();
    if (!xs) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::shared_ptr<ImagePlan> p, PlanImage(ctx, *xs, instance_ ? 3 : 2));
    const int64_t groups = instance_ ? p->c : groups_;
    if (!instance_ && p->c % groups != 0)
      return ctx.Error(absl::StrCat("num_groups ", groups, " does not divide the ", p->c, " channels"));
    const Shape param = {per_group_params_ ? groups : p->c};
    RETURN_IF_ERROR(CheckParam(ctx, 1, "scale", param));
    RETURN_IF_ERROR(CheckParam(ctx, 2, "B", param));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const ImagePlan& p = ctx.plan<ImagePlan>();
    const int64_t groups = instance_ ? p.c : groups_;
    const int64_t per = instance_ ? 1 : p.c / groups;  // channels per group
    const std::vector<double> scale = Doubles(*ctx.input(1)), bias = Doubles(*ctx.input(2));
    Tensor& y = ctx.output(0);
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const int64_t len = per * p.inner;  // a group's elements, contiguous
      ParallelFor(ctx.threads(), p.n * groups, WorkPerIndex{2.0 * double(len)},
                  [&](int64_t ng_begin, int64_t ng_end) { for (int64_t ng = ng_begin; ng < ng_end; ++ng) {
        const T* xg = px + ng * len;
        double mean = 0, sq = 0;
        for (int64_t e = 0; e < len; ++e) mean += double(Widen(xg[e]));
        mean /= double(std::max<int64_t>(1, len));
        for (int64_t e = 0; e < len; ++e) {
          const double dv = double(Widen(xg[e])) - mean;
          sq += dv * dv;
        }
        const double inv = 1.0 / std::sqrt(sq / double(std::max<int64_t>(1, len)) + double(epsilon_));
        const int64_t g = ng % groups;
        for (int64_t ch = 0; ch < per; ++ch) {
          const size_t k = size_t(per_group_params_ ? g : g * per + ch);
          const double a = scale[k] * inv, b = bias[k] - mean * a;
          for (int64_t i = 0; i < p.inner; ++i) {
            const int64_t e = ch * p.inner + i;
            py[ng * len + e] = Narrow<T>(A(double(Widen(xg[e])) * a + b));
          }
        }
      }});
    });
  }

 private:
  bool instance_;
  int64_t groups_;
  bool per_group_params_;
  float epsilon_;
};

template <bool kInstance>
absl::StatusOr<std::unique_ptr<Op>> MakeGroupNorm(const Node& node) {
  return GroupNormOp::Create(node, kInstance);
}

// ---- LRN: x / (bias + alpha / size * sum of squares over nearby channels)^beta ----

class LrnOp : public Op {
 public:
  explicit LrnOp(const Node& node)
      : size_(node.attr_int("size", 0)), alpha_(node.attr_float("alpha", 1e-4f)), beta_(node.attr_float("beta", 0.75f)),
        bias_(node.attr_float("bias", 1.0f)) {}

  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::make_unique<LrnOp>(node);
    if (op->size_ < 1 || op->size_ >= (int64_t(1) << 31))
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": size ", op->size_, " must be given and positive"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    const std::optional<Shape> xs = ctx.input(0).concrete_shape();
    if (!xs) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::shared_ptr<ImagePlan> p, PlanImage(ctx, *xs, 3));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const ImagePlan& p = ctx.plan<ImagePlan>();
    Tensor& y = ctx.output(0);
    // The window over channels: floor((size - 1) / 2) before, ceil((size - 1) / 2) after.
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ParallelFor(ctx.threads(), p.n * p.c, WorkPerIndex{2.0 * double(p.inner)},
                  [&](int64_t nc_begin, int64_t nc_end) { for (int64_t nc = nc_begin; nc < nc_end; ++nc) {
        const int64_t n = nc / p.c, c = nc % p.c;
        const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min<int64_t>(p.c - 1, c + after);
        for (int64_t i = 0; i < p.inner; ++i) {
          double sq = 0;
          for (int64_t k = lo; k <= hi; ++k) {
            const double v = double(Widen(px[(n * p.c + k) * p.inner + i]));
            sq += v * v;
          }
          const double v = double(Widen(px[nc * p.inner + i]));
          py[nc * p.inner + i] =
              Narrow<T>(A(v / std::pow(double(bias_) + double(alpha_) / double(size_) * sq, double(beta_))));
        }
      }});
    });
  }

 private:
  int64_t size_;
  float alpha_, beta_, bias_;
};

}  // namespace

std::vector<OpDef> ImageNormOps() {
  const TypeConstraint t = {"T", kFloatTypes};
  // Before 14 every input and output is T; 14 gives the running statistics
  // a type of their own (U), 15 the scale and bias too (T1, T2).
  return {
      {"", "BatchNormalization", 1, 13, "T T T T T", "T T? T? T? T?", {t}, MakeOp<BatchNormOp>},
      {"", "BatchNormalization", 14, 14, "T T T U U", "T U? U?", {t, {"U", kFloatTypes}}, MakeOp<BatchNormOp>},
      {"", "BatchNormalization", 15, 0, "T T1 T1 T2 T2", "T T2? T2?", {t, {"T1", kFloatTypes}, {"T2", kFloatTypes}},
       MakeOp<BatchNormOp>},
      {"", "InstanceNormalization", 1, 0, "T T T", "T", {t}, MakeGroupNorm<true>},
      {"", "GroupNormalization", 18, 0, "T T T", "T", {t}, MakeGroupNorm<false>},
      {"", "LRN", 1, 0, "T", "T", {t}, LrnOp::Create},
  };
}

}  // namespace onnx_mini
