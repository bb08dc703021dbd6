// com.microsoft EmbedLayerNormalization (opset 1), as onnxruntime's CPU kernel
// runs it (docs/contrib_ops.md): per token, word_embedding[input_id] +
// position_embedding[position] (+ segment_embedding[segment_id]), layer-
// normalized with gamma, beta and epsilon. Positions are position_ids
// ((B, S) or (1, S)) or the token's index. Outputs: the normalized rows,
// mask_index (B) int32 = the count of mask values equal to 1 (0 without a
// mask; mask_index_type is not read, as onnxruntime's CPU kernel does not) and
// embedding_sum (the rows before normalization). Every index is checked
// against its table before anything is written; the kernel is
// kernels/norm/embed_layer_norm.h.
#include <cmath>

#include "kernels/norm/embed_layer_norm.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

enum Input { kIds = 0, kSegmentIds, kWord, kPosition, kSegment, kGamma, kBeta, kMask, kPositionIds };
enum Output { kY = 0, kMaskIndex, kSum };

struct EmbedPlan : OpPlan {
  int64_t batch = 0, seq = 0, hidden = 0, words = 0, positions = 0, segments = 0;
  bool ids_per_batch = false;  // position_ids (B, S), else (1, S)
};

class EmbedLayerNormOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const float epsilon = node.attr_float("epsilon", 1e-12f);
    if (!(epsilon >= 0) || !std::isfinite(epsilon))
      return AttributeError(node, absl::StrCat("epsilon ", epsilon, " must be finite and not negative"));
    if (node.has_input(kSegmentIds) != node.has_input(kSegment))
      return AttributeError(node, "segment_ids and segment_embedding must be given together");
    return std::unique_ptr<Op>(new EmbedLayerNormOp(epsilon));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType t = ctx.input(kWord).dtype;
    std::vector<std::optional<Shape>> s;
    const bool known = ConcreteInputShapes(ctx, kPositionIds + 1, s);
    ValueType y, sum, mask_index;
    y.dtype = sum.dtype = t;
    mask_index.dtype = DType::kInt32;
    if (known) {
      auto plan = std::make_shared<EmbedPlan>();
      RETURN_IF_ERROR(Resolve(ctx, s, *plan));
      y = sum = ValueType::Of(t, {plan->batch, plan->seq, plan->hidden});
      mask_index = ValueType::Of(DType::kInt32, {plan->batch});
      ctx.set_plan(std::move(plan));
    } else {
      y.dims = sum.dims = std::vector<Dim>(3);
      mask_index.dims = std::vector<Dim>(1);
    }
    ctx.set_output(kY, y);
    if (ctx.num_outputs() > kMaskIndex) ctx.set_output(kMaskIndex, mask_index);
    if (ctx.num_outputs() > kSum) ctx.set_output(kSum, sum);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const EmbedPlan& l = ctx.plan<EmbedPlan>();
    const auto input = [&](size_t i) { return i < ctx.num_inputs() ? ctx.input(i) : nullptr; };
    const int64_t tokens = l.batch * l.seq;
    const int32_t* ids = ctx.input(kIds)->data<int32_t>();
    const Tensor* seg_ids = input(kSegmentIds);
    const Tensor* pos_ids = input(kPositionIds);
    // Every row index checked before anything is written.
    auto check = [&](const int32_t* v, int64_t n, int64_t table, const char* what) -> absl::Status {
      for (int64_t i = 0; i < n; ++i)
        if (v[i] < 0 || v[i] >= table)
          return ctx.Error(absl::StrCat(what, " ", v[i], " at index ", i, " is outside its table of ", table, " rows"));
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(check(ids, tokens, l.words, "input_ids value"));
    if (seg_ids) RETURN_IF_ERROR(check(seg_ids->data<int32_t>(), tokens, l.segments, "segment_ids value"));
    if (pos_ids) RETURN_IF_ERROR(check(pos_ids->data<int32_t>(), pos_ids->size(), l.positions, "position_ids value"));
    if (!pos_ids && l.seq > l.positions)
      return ctx.Error(absl::StrCat("sequence length ", l.seq, " runs past the position_embedding table of ",
                                    l.positions, " rows"));
    if (ctx.output_requested(kMaskIndex)) {
      int32_t* mi = ctx.output(kMaskIndex).data<int32_t>();
      const int32_t* mask = input(kMask) ? input(kMask)->data<int32_t>() : nullptr;
      for (int64_t b = 0; b < l.batch; ++b) {
        mi[b] = 0;
        if (mask)
          for (int64_t s = 0; s < l.seq; ++s) mi[b] += mask[b * l.seq + s] == 1;
      }
    }
    EmbedLayerNormProblem p;
    p.dtype = ctx.input(kWord)->dtype();
    p.batch = l.batch, p.seq = l.seq, p.hidden = l.hidden;
    p.ids = ids;
    p.segment_ids = seg_ids ? seg_ids->data<int32_t>() : nullptr;
    p.position_ids = pos_ids ? pos_ids->data<int32_t>() : nullptr;
    p.position_ids_per_batch = l.ids_per_batch;
    p.word = ctx.input(kWord)->raw();
    p.position = ctx.input(kPosition)->raw();
    p.segment = seg_ids ? ctx.input(kSegment)->raw() : nullptr;
    p.gamma = ctx.input(kGamma)->raw();
    p.beta = input(kBeta) ? input(kBeta)->raw() : nullptr;
    p.epsilon = epsilon_;
    p.y = ctx.output(kY).raw();
    p.sum = ctx.output_requested(kSum) ? ctx.output(kSum).raw() : nullptr;
    EmbedLayerNorm(p, ctx.threads());
    return absl::OkStatus();
  }

 private:
  explicit EmbedLayerNormOp(float epsilon) : epsilon_(epsilon) {}

  absl::Status Resolve(const InferContext& ctx, const std::vector<std::optional<Shape>>& s, EmbedPlan& l) const {
    const Shape& ids = *s[kIds];
    const Shape& word = *s[kWord];
    const Shape& pos = *s[kPosition];
    if (ids.size() != 2) return ctx.Error(absl::StrCat("input_ids must be (B, S), got ", ShapeToString(ids)));
    l.batch = ids[0], l.seq = ids[1];
    if (word.size() != 2) return ctx.Error(absl::StrCat("word_embedding must be 2-D, got ", ShapeToString(word)));
    l.words = word[0], l.hidden = word[1];
    if (pos.size() != 2 || pos[1] != l.hidden)
      return ctx.Error(absl::StrCat("position_embedding ", ShapeToString(pos), " must be (max_position, ", l.hidden, ")"));
    l.positions = pos[0];
    if (s[kSegment]) {
      const Shape& seg = *s[kSegment];
      if (seg.size() != 2 || seg[1] != l.hidden)
        return ctx.Error(absl::StrCat("segment_embedding ", ShapeToString(seg), " must be (segments, ", l.hidden, ")"));
      l.segments = seg[0];
      if (*s[kSegmentIds] != ids)
        return ctx.Error(absl::StrCat("segment_ids ", ShapeToString(*s[kSegmentIds]), " must have input_ids' shape ",
                                      ShapeToString(ids)));
    }
    for (Input v : {kGamma, kBeta})
      if (s[v] && (s[v]->size() != 1 || (*s[v])[0] != l.hidden))
        return ctx.Error(absl::StrCat(v == kGamma ? "gamma " : "beta ", ShapeToString(*s[v]), " must be (", l.hidden, ")"));
    if (s[kMask] && *s[kMask] != ids)
      return ctx.Error(absl::StrCat("mask ", ShapeToString(*s[kMask]), " must have input_ids' shape ", ShapeToString(ids)));
    if (s[kPositionIds]) {
      const Shape& p = *s[kPositionIds];
      if (p.size() != 2 || (p[0] != l.batch && p[0] != 1) || p[1] != l.seq)
        return ctx.Error(absl::StrCat("position_ids ", ShapeToString(p), " must be (", l.batch, ", ", l.seq, ") or (1, ",
                                      l.seq, ")"));
      l.ids_per_batch = p[0] == l.batch && l.batch != 1;
    }
    return absl::OkStatus();
  }

  float epsilon_;
};

}  // namespace

std::vector<OpDef> EmbedLayerNormOps() {
  const std::vector<TypeConstraint> types = {{"T", {DType::kFloat, DType::kFloat16}}, {"I", {DType::kInt32}}};
  return {
      {kMsDomain, "EmbedLayerNormalization", Versions{1}, "I I? T T T? T T? I? I?", "T I? T?", types,
       EmbedLayerNormOp::Create},
  };
}

}  // namespace onnx_mini
