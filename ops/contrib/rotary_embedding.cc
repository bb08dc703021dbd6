// com.microsoft RotaryEmbedding (opset 1): input, position_ids, cos_cache,
// sin_cache, as onnxruntime's CPU kernel takes them (docs/contrib_ops.md):
//  - input (B, S, hidden) or (B, N, S, H);
//  - position_ids (B, S), or a scalar / [1] start: token s is at start + s;
//  - cos/sin (max_position, rotary_dim / 2);
//  - head size: hidden / num_heads when rotary_embedding_dim is set (then
//    num_heads is required), else twice the caches' width.
// The kernel is the one of ai.onnx RotaryEmbedding (kernels/attention/rotary.h).
#include "kernels/attention/rotary.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

struct MsRotaryPlan : OpPlan {
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0, rotary_dim = 0, max_position = 0;
  bool four_d = false;
  bool start_only = false;  // position_ids is a scalar / [1] start
};

class MsRotaryOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t heads = node.attr_int("num_heads", 0);
    const int64_t dim = node.attr_int("rotary_embedding_dim", 0);
    if (heads < 0 || dim < 0)
      return AttributeError(node, absl::StrCat("num_heads ", heads, " and rotary_embedding_dim ", dim,
                                               " must not be negative"));
    if (dim > 0 && heads == 0)
      return AttributeError(node, "num_heads must be given when rotary_embedding_dim is (onnxruntime requires it)");
    if (dim % 2 != 0) return AttributeError(node, absl::StrCat("rotary_embedding_dim ", dim, " must be even"));
    return std::unique_ptr<Op>(new MsRotaryOp(heads, dim, node.attr_int("interleaved", 0) != 0));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const std::optional<Shape> x = ctx.input(0).concrete_shape();
    const std::optional<Shape> pos = ctx.input(1).concrete_shape();
    const std::optional<Shape> cos = ctx.input(2).concrete_shape();
    const std::optional<Shape> sin = ctx.input(3).concrete_shape();
    if (x && pos && cos && sin) {
      ASSIGN_OR_RETURN(std::shared_ptr<MsRotaryPlan> plan, Resolve(ctx, *x, *pos, *cos, *sin));
      ctx.set_plan(std::move(plan));
    }
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const MsRotaryPlan& l = ctx.plan<MsRotaryPlan>();
    const Tensor& x = *ctx.input(0);
    const Tensor& pos = *ctx.input(1);
    const int64_t* ids = pos.data<int64_t>();
    // The positions index the caches: checked before anything is written.
    std::vector<int64_t> starts;
    if (l.start_only) {
      const int64_t start = ids[0];
      if (start < 0 || start > l.max_position - l.seq)
        return ctx.Error(absl::StrCat("position_ids start ", start, " with sequence length ", l.seq,
                                      " runs past the cos/sin cache of ", l.max_position, " positions"));
      starts.assign(size_t(l.batch), start);
    } else {
      for (int64_t i = 0; i < pos.size(); ++i)
        if (ids[i] < 0 || ids[i] >= l.max_position)
          return ctx.Error(absl::StrCat("position_ids value ", ids[i], " at index ", i,
                                        " is outside the cos/sin cache of ", l.max_position, " positions"));
    }
    RotaryProblem p;
    p.dtype = x.dtype();
    p.batch = l.batch, p.seq = l.seq, p.heads = l.heads, p.head_size = l.head_size, p.rotary_dim = l.rotary_dim;
    p.interleaved = interleaved_;
    p.x_view = p.y_view =
        l.four_d ? HeadView::Of4D(l.heads, l.seq, l.head_size) : HeadView::Of3D(l.heads, l.seq, l.head_size);
    p.x = x.raw();
    p.y = ctx.output(0).raw();
    p.cos = ctx.input(2)->raw();
    p.sin = ctx.input(3)->raw();
    p.cache_stride = l.rotary_dim / 2;
    if (l.start_only) p.row_offsets = starts.data();
    else p.position_ids = ids;
    if (x.size() > 0) Rotary(p);
    return absl::OkStatus();
  }

 private:
  MsRotaryOp(int64_t heads, int64_t dim, bool interleaved) : num_heads_(heads), rotary_dim_(dim), interleaved_(interleaved) {}

  absl::StatusOr<std::shared_ptr<MsRotaryPlan>> Resolve(const InferContext& ctx, const Shape& x, const Shape& pos,
                                                        const Shape& cos, const Shape& sin) const {
    auto l = std::make_shared<MsRotaryPlan>();
    if (cos.size() != 2 || cos != sin)
      return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(cos), " and sin_cache ", ShapeToString(sin),
                                    " must be the same 2-D shape (max_position, rotary_dim / 2)"));
    l->max_position = cos[0];
    int64_t hidden = 0;
    if (x.size() == 3) {
      l->batch = x[0], l->seq = x[1], hidden = x[2];
    } else if (x.size() == 4) {  // (B, N, S, H)
      l->batch = x[0], l->seq = x[2], l->four_d = true;
      if (num_heads_ != 0 && num_heads_ != x[1])
        return ctx.Error(absl::StrCat("num_heads ", num_heads_, " differs from the 4-D input's ", x[1], " heads ",
                                      ShapeToString(x)));
      hidden = CheckedMul(x[1], x[3]).value_or(-1);
    } else {
      return ctx.Error(absl::StrCat("input must be 3-D (B, S, hidden) or 4-D (B, N, S, H), got ", ShapeToString(x)));
    }
    // The head size: from num_heads with a rotary_embedding_dim, else from the caches.
    l->head_size = rotary_dim_ > 0 ? hidden / num_heads_ : 2 * cos[1];
    if (rotary_dim_ > 0 && hidden % num_heads_ != 0)
      return ctx.Error(absl::StrCat("num_heads ", num_heads_, " does not divide the hidden size ", hidden));
    if (l->head_size <= 0 || hidden % l->head_size != 0 || (x.size() == 4 && l->head_size != x[3]))
      return ctx.Error(absl::StrCat("head size ", l->head_size, (rotary_dim_ > 0 ? " (hidden / num_heads)" : " (2 x cos_cache's width)"),
                                    " does not fit the input ", ShapeToString(x)));
    l->heads = hidden / l->head_size;
    if (num_heads_ != 0 && l->heads != num_heads_)
      return ctx.Error(absl::StrCat("num_heads ", num_heads_, " with head size ", l->head_size,
                                    " (2 x cos_cache's width) does not make the hidden size ", hidden));
    l->rotary_dim = rotary_dim_ > 0 ? rotary_dim_ : l->head_size;
    if (l->rotary_dim > l->head_size)
      return ctx.Error(absl::StrCat("rotary_embedding_dim ", l->rotary_dim, " exceeds the head size ", l->head_size));
    if (cos[1] != l->rotary_dim / 2)
      return ctx.Error(absl::StrCat("cos_cache ", ShapeToString(cos), " must be (max_position, ", l->rotary_dim / 2,
                                    "): half the rotary dim ", l->rotary_dim));
    const int64_t pos_count = ShapeProduct(pos, 0, int64_t(pos.size()));
    if (pos.size() <= 1 && pos_count == 1) {
      l->start_only = true;
    } else if (pos.size() != 2 || pos[0] != l->batch || pos[1] != l->seq) {
      return ctx.Error(absl::StrCat("position_ids ", ShapeToString(pos), " must be a scalar, [1] or (", l->batch, ", ",
                                    l->seq, ")"));
    }
    return l;
  }

  int64_t num_heads_, rotary_dim_;
  bool interleaved_;
};

}  // namespace

std::vector<OpDef> MsRotaryEmbeddingOps() {
  const std::vector<TypeConstraint> types = {{"T", {DType::kFloat, DType::kFloat16}}, {"M", kInt64}};
  return {
      {kMsDomain, "RotaryEmbedding", Versions{1}, "T M T T", "T", types, MsRotaryOp::Create},
  };
}

}  // namespace onnx_mini
