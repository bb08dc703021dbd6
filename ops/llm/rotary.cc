// RotaryEmbedding (23): validation and the layout; the kernel is
// kernels/attention/rotary.cc. 16-bit inputs compute in float.
#include "kernels/attention/rotary.h"
#include "kernels/attention/rotate_half.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

struct RotaryLayout : OpPlan {
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0, rotary_dim = 0;
  bool four_d = false;
};

class RotaryOp : public Op {
 public:
  explicit RotaryOp(const Node& node, bool broadcast_ids = false)
      : num_heads_(node.attr_int("num_heads", 0)), rotary_dim_(node.attr_int("rotary_embedding_dim", 0)),
        interleaved_(node.attr_int("interleaved", 0) != 0), broadcast_ids_(broadcast_ids) {}

  absl::Status Infer(InferContext& ctx) const override {
    const std::optional<Shape> x = ctx.input(0).concrete_shape();
    const std::optional<Shape> cos = ctx.input(1).concrete_shape();
    const std::optional<Shape> sin = ctx.input(2).concrete_shape();
    std::optional<Shape> pos;
    if (ctx.has_input(3)) pos = ctx.input(3).concrete_shape();
    if (x && cos && sin && (!ctx.has_input(3) || pos)) {
      if (*cos != *sin) return ctx.Error("cos_cache and sin_cache must have the same shape");
      ASSIGN_OR_RETURN(std::shared_ptr<RotaryLayout> l, Resolve(ctx, *x, *cos, pos ? &*pos : nullptr));
      // Position ids index the caches: checked here once known, so the kernel reads in range.
      if (ctx.has_input(3)) {
        const Tensor* ids = ctx.value(3);
        if (ids)
          for (int64_t i = 0; i < ids->size(); ++i)
            if (ids->data<int64_t>()[i] < 0 || ids->data<int64_t>()[i] >= (*cos)[0])
              return ctx.Error(absl::StrCat("position_ids value ", ids->data<int64_t>()[i],
                                            " is outside the cache of ", (*cos)[0], " positions"));
      }
      ctx.set_plan(std::move(l));
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& cos = *ctx.input(1);
    const Tensor& sin = *ctx.input(2);
    const Tensor* ids = ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
    const RotaryLayout& l = ctx.plan<RotaryLayout>();
    Tensor& y = ctx.output(0);
    RotaryProblem p;
    p.dtype = x.dtype();
    p.batch = l.batch, p.seq = l.seq, p.heads = l.heads, p.head_size = l.head_size, p.rotary_dim = l.rotary_dim;
    p.interleaved = interleaved_;
    p.x_view = p.y_view = l.four_d ? HeadView::Of4D(l.heads, l.seq, l.head_size) : HeadView::Of3D(l.heads, l.seq, l.head_size);
    p.x = x.raw();
    p.y = y.raw();
    p.cos = cos.raw();
    p.sin = sin.raw();
    p.cache_stride = l.rotary_dim / 2;
    if (ids) p.position_ids = ids->data<int64_t>();  // else the caches are (B, S, half): row b * S + s
    std::vector<int64_t> expanded;  // ids of a 1 broadcast to (B, S)
    if (ids && ids->shape() != Shape{l.batch, l.seq}) {
      expanded.resize(size_t(l.batch * l.seq));
      for (int64_t b = 0; b < l.batch; ++b)
        for (int64_t s = 0; s < l.seq; ++s)
          expanded[size_t(b * l.seq + s)] =
              p.position_ids[(ids->dim(0) == 1 ? 0 : b) * ids->dim(1) + (ids->dim(1) == 1 ? 0 : s)];
      p.position_ids = expanded.data();
    }
    Rotary(p);
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::shared_ptr<RotaryLayout>> Resolve(const InferContext& ctx, const Shape& x, const Shape& cos,
                                                        const Shape* position_ids) const {
    auto l = std::make_shared<RotaryLayout>();
    if (x.size() == 4) {  // (B, H, S, D)
      l->batch = x[0];
      l->heads = x[1];
      l->seq = x[2];
      l->head_size = x[3];
      l->four_d = true;
    } else if (x.size() == 3) {
      if (num_heads_ <= 0 || x[2] % num_heads_ != 0)
        return ctx.Error(absl::StrCat("3-D input ", ShapeToString(x),
                                      " needs num_heads > 0 dividing its hidden size, got ", num_heads_));
      l->batch = x[0];
      l->seq = x[1];
      l->heads = num_heads_;
      l->head_size = x[2] / num_heads_;
    } else {
      return ctx.Error(absl::StrCat("input must be 3-D or 4-D, got ", ShapeToString(x)));
    }
    l->rotary_dim = rotary_dim_ == 0 ? l->head_size : rotary_dim_;
    if (l->rotary_dim < 0 || l->rotary_dim > l->head_size || l->rotary_dim % 2 != 0)
      return ctx.Error(absl::StrCat("rotary_embedding_dim ", l->rotary_dim,
                                    " must be even and at most the head size ", l->head_size));
    const int64_t half = l->rotary_dim / 2;
    if (position_ids) {
      // onnx_mini::RotaryEmbedding (the rotary rewrite's, whose pattern
      // broadcast the gathered tables over x): a dim of 1 stands for all.
      const auto fits = [&](int64_t d, int64_t want) { return d == want || (broadcast_ids_ && d == 1); };
      if (position_ids->size() != 2 || !fits((*position_ids)[0], l->batch) || !fits((*position_ids)[1], l->seq))
        return ctx.Error(absl::StrCat("position_ids ", ShapeToString(*position_ids), " must be (", l->batch, ", ",
                                      l->seq, ")"));
      if (cos.size() != 2 || cos[1] != half)
        return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(cos), " must be (max_position, ", half, ")"));
    } else if (cos.size() != 3 || cos[0] != l->batch || cos[1] != l->seq || cos[2] != half) {
      return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(cos), " must be (", l->batch, ", ", l->seq, ", ",
                                    half, ") without position_ids"));
    }
    return l;
  }

  int64_t num_heads_, rotary_dim_;
  bool interleaved_;
  bool broadcast_ids_;
};

// onnx_mini::RotaryEmbedding: RotaryEmbedding-23 whose position_ids of one
// row (or one position) stand for all of x's batch (or sequence), as the
// rotary rewrite's pattern broadcast its gathered tables over x. Made by
// that rewrite only: a model cannot ask the spec op for it.
class BroadcastIdsRotaryOp : public RotaryOp {
 public:
  explicit BroadcastIdsRotaryOp(const Node& node) : RotaryOp(node, /*broadcast_ids=*/true) {}
};

// onnx_mini::RotateHalf(x, cos, sin) = x * cos + rotate_half(x) * sin
// (interleaved = 1: GPT-J's rotate_every_two, pairs (2i, 2i + 1)), the
// rotary rewrite's op for cos and sin computed at run time (full rows of D,
// HF's cat(freqs, freqs)): x, cos and sin of rank 1 to 4 broadcast against
// each other over all dims but the last, as the pattern's Mul and Add do; the
// last dims all D, even.
struct RotateHalfPlan : OpPlan {
  RotateHalfProblem p;
};

class RotateHalfOp : public Op {
 public:
  explicit RotateHalfOp(const Node& node) : interleaved_(node.attr_int("interleaved", 0) != 0) {}

  absl::Status Infer(InferContext& ctx) const override {
    ValueType y;
    y.dtype = ctx.input(0).dtype;
    const ValueType &x = ctx.input(0), &c = ctx.input(1), &s = ctx.input(2);
    if (x.dims && c.dims && s.dims) {
      for (const ValueType* t : {&x, &c, &s})
        if (t->dims->empty() || t->dims->size() > 4)
          return ctx.Error(absl::StrCat("inputs must have rank 1 to 4, got ", t->ToString()));
      const Dim& d = x.dims->back();
      if (d.known() && (d.value < 2 || d.value % 2 != 0))
        return ctx.Error(absl::StrCat("x's last dim must be even and at least 2, got ", x.ToString()));
      for (const ValueType* t : {&c, &s})
        if (d.known() && t->dims->back().known() && t->dims->back().value != d.value)
          return ctx.Error(absl::StrCat("cos and sin must have x's last dim ", d.value, ", got ", t->ToString()));
      ASSIGN_OR_RETURN(std::vector<Dim> xc, BroadcastDims(ctx, *x.dims, *c.dims));
      ASSIGN_OR_RETURN(std::vector<Dim> all, BroadcastDims(ctx, xc, *s.dims));
      y.dims = std::move(all);
    }
    std::vector<std::optional<Shape>> shapes;
    if (ConcreteInputShapes(ctx, 3, shapes)) {
      const Shape out = *y.concrete_shape();
      auto plan = std::make_shared<RotateHalfPlan>();
      RotateHalfProblem& p = plan->p;
      p.dtype = y.dtype;
      p.d = out.back();
      p.interleaved = interleaved_;
      // The leading dims, padded in front to three.
      const size_t lead = out.size() - 1;
      for (size_t k = 0; k < lead; ++k) p.dims[3 - lead + k] = out[k];
      int64_t* strides[3] = {p.x_strides, p.cos_strides, p.sin_strides};
      for (int i = 0; i < 3; ++i) {
        const std::vector<int64_t> st = BroadcastStrides(*shapes[size_t(i)], out);
        for (size_t k = 0; k < lead; ++k) strides[i][3 - lead + k] = st[k];
      }
      ctx.set_plan(std::move(plan));
    }
    ctx.set_output(0, y);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    RotateHalfProblem p = ctx.plan<RotateHalfPlan>().p;
    Tensor& y = ctx.output(0);
    if (y.size() == 0) return absl::OkStatus();
    p.x = ctx.input(0)->raw();
    p.cos = ctx.input(1)->raw();
    p.sin = ctx.input(2)->raw();
    p.y = y.raw();
    RotateHalf(p);
    return absl::OkStatus();
  }

 private:
  bool interleaved_;
};

}  // namespace

std::vector<OpDef> RotaryOps() {
  const TypeConstraint t = {"T", kFloatTypes};
  return {
      {kOnnxDomain, "RotaryEmbedding", Versions{23}, "T T T M?", "T", {t, {"M", kInt64}}, MakeOp<RotaryOp>},
      {kInternalDomain, "RotateHalf", Versions{1}, "T T T", "T", {t}, MakeOp<RotateHalfOp>},
      {kInternalDomain, "RotaryEmbedding", Versions{1}, "T T T M", "T", {t, {"M", kInt64}},
       MakeOp<BroadcastIdsRotaryOp>},
  };
}

}  // namespace onnx_mini
