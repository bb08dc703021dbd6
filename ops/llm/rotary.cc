// RotaryEmbedding (23): validation and the layout; the kernel is
// kernels/attention/rotary.cc. 16-bit inputs compute in float.
#include "kernels/attention/rotary.h"
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
  explicit RotaryOp(const Node& node)
      : num_heads_(node.attr_int("num_heads", 0)), rotary_dim_(node.attr_int("rotary_embedding_dim", 0)),
        interleaved_(node.attr_int("interleaved", 0) != 0) {}

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
      if (position_ids->size() != 2 || (*position_ids)[0] != l->batch || (*position_ids)[1] != l->seq)
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
};

}  // namespace

std::vector<OpDef> RotaryOps() {
  const TypeConstraint t = {"T", kFloatTypes};
  return {
      {kOnnxDomain, "RotaryEmbedding", Versions{23}, "T T T M?", "T", {t, {"M", kInt64}}, MakeOp<RotaryOp>},
  };
}

}  // namespace onnx_mini
