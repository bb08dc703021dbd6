// com.microsoft Attention (opset 1), the BERT-style op onnxruntime's
// optimizers write, as its CPU kernel runs it (docs/contrib_ops.md): input
// (B, S, Din) x weights (Din, D + Dk + Dv) + bias, split into Q, K, V
// (qkv_hidden_sizes, else three equal parts); mask_index int32 (B) ends,
// (2B) ends and starts, (B, T) or (B, S, T); past (2, B, N, P, H) with
// present (2, B, N, P + S, H) (required with a past); attention_bias
// (1|B, 1|N, S, T); unidirectional, scale, mask_filter_value. The product runs
// through the GEMM router (a constant weight prepared once), the attention
// through the attention kernel with the masks as its additive bias.
#include "kernels/gemm/onednn.h"
#include "kernels/gemm/prepared_matmul.h"
#include "kernels/vec/arith.h"
#include "ops/common.h"
#include "ops/contrib/ms_attention.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

using ProjectTypes = TypeList<float, Float16>;

enum Input { kInput = 0, kWeights, kBias, kMaskIndex, kPast, kAttentionBias, kPastSeqLen };
enum Output { kY = 0, kPresent };

struct BertAttentionPlan : OpPlan {
  AttentionProblem problem;
  MsBiasPlan bias;
  int64_t rows = 0, in = 0, width = 0;  // the product: (rows, in) x (in, width)
  int64_t q_hidden = 0, k_hidden = 0, v_hidden = 0;
};

class BertAttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const MsAttentionAttrs attrs, ParseMsAttentionAttrs(node));
    if (node.attr_int("do_rotary", 0) != 0)
      return NotImplemented(node, "do_rotary (onnxruntime's CPU kernel has none either)");
    if (node.attr_int("past_present_share_buffer", 0) != 0 || node.has_input(kPastSeqLen))
      return NotImplemented(node, "past_present_share_buffer and past_sequence_length");
    std::vector<int64_t> sizes;
    if (const Attribute* a = node.attr("qkv_hidden_sizes")) {
      sizes = a->ints;
      if (sizes.size() != 3 || sizes[0] <= 0 || sizes[1] != sizes[0] || sizes[2] <= 0 || sizes[0] % attrs.heads != 0 ||
          sizes[2] % attrs.heads != 0)
        return AttributeError(node, absl::StrCat("qkv_hidden_sizes must be three positive sizes, the first two equal, "
                                                 "each divisible by num_heads ", attrs.heads, ", got ", a->ints.size(),
                                                 " values"));
    }
    if (node.has_input(kPast) && !node.has_output(kPresent))
      return AttributeError(node, "a past needs the present output (onnxruntime requires it)");
    return std::unique_ptr<Op>(new BertAttentionOp(attrs, sizes));
  }

  absl::Status Prepare(PrepareContext& ctx) override {
    const Tensor* w = ctx.constant(kWeights);
    const Tensor* bias = ctx.num_inputs() > kBias ? ctx.constant(kBias) : nullptr;
    if (!w || w->shape().size() != 2 || (ctx.num_inputs() > kBias && !bias && ctx.node().has_input(kBias)))
      return absl::OkStatus();  // a run-time weight or bias: the plain product
    packed_ = PackedMatMul::Make(*w, false, bias ? *bias : Tensor(), ctx.threads(), ctx.budget());
    released_ = packed_ && packed_->ReleaseB();
    if (released_) ctx.release(kWeights);
    return absl::OkStatus();
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType t = ctx.input(kInput).dtype;
    std::vector<std::optional<Shape>> s;
    const bool known = ConcreteInputShapes(ctx, kPastSeqLen + 1, s);
    ValueType y, present;
    y.dtype = present.dtype = t;
    if (known) {
      auto plan = std::make_shared<BertAttentionPlan>();
      RETURN_IF_ERROR(Resolve(ctx, s, *plan));
      const AttentionProblem& p = plan->problem;
      y = ValueType::Of(t, {p.batch, p.q_len, plan->v_hidden});
      present = ValueType::Of(t, {2, p.batch, p.q_heads, p.total_len, p.head_size});
      ctx.set_plan(std::move(plan));
    } else {
      y.dims = std::vector<Dim>(3);
      present.dims = std::vector<Dim>(5);
    }
    ctx.set_output(kY, y);
    if (ctx.num_outputs() > kPresent) ctx.set_output(kPresent, present);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const BertAttentionPlan& plan = ctx.plan<BertAttentionPlan>();
    AttentionProblem p = plan.problem;
    const auto input = [&](size_t i) { return i < ctx.num_inputs() ? ctx.input(i) : nullptr; };
    MemoryReservation workspace;  // the bias and the kernel's workspaces, against the session's budget
    std::vector<double> bias;
    RETURN_IF_ERROR(MakeMsBias(ctx, plan.bias, input(kMaskIndex), input(kAttentionBias), workspace, bias, p));
    ASSIGN_OR_RETURN(Tensor qkv, Project(ctx, plan));
    const size_t esize = StorageBytes(p.dtype, 1);
    const char* base = static_cast<const char*>(qkv.raw());
    p.q_data = base;
    p.k_data = base + size_t(plan.q_hidden) * esize;
    p.v_data = base + size_t(plan.q_hidden + plan.k_hidden) * esize;
    const int64_t half = p.batch * p.q_heads * p.cache.past_len * p.head_size;  // elements of past's K half
    if (const Tensor* past = input(kPast); past && p.cache.past_len > 0) {
      p.cache.past_key = past->raw();
      p.cache.past_value = static_cast<const char*>(past->raw()) + size_t(half) * esize;
    }
    p.y_data = ctx.output(kY).raw();
    if (ctx.output_requested(kPresent)) {
      char* present = static_cast<char*>(ctx.output(kPresent).raw());
      p.cache.present_key = present;
      p.cache.present_value = present + size_t(p.batch * p.q_heads * p.total_len * p.head_size) * esize;
    }
    return RunMsAttention(ctx, p, ctx.output(kY).size(), 0, workspace);
  }

 private:
  BertAttentionOp(const MsAttentionAttrs& attrs, std::vector<int64_t> sizes)
      : attrs_(attrs), sizes_(std::move(sizes)) {}

  absl::Status Resolve(const InferContext& ctx, const std::vector<std::optional<Shape>>& s,
                       BertAttentionPlan& plan) const {
    AttentionProblem& p = plan.problem;
    const int64_t N = attrs_.heads;
    p.dtype = p.softmax_dtype = ctx.input(kInput).dtype;
    const Shape& x = *s[kInput];
    const Shape& w = *s[kWeights];
    if (x.size() != 3) return ctx.Error(absl::StrCat("input must be (B, S, input_hidden), got ", ShapeToString(x)));
    if (w.size() != 2 || w[0] != x[2])
      return ctx.Error(absl::StrCat("weights ", ShapeToString(w), " must be (", x[2], ", D + Dk + Dv)"));
    if (sizes_.empty()) {
      if (w[1] % 3 != 0 || (w[1] / 3) % N != 0)
        return ctx.Error(absl::StrCat("weights ", ShapeToString(w), ": the width ", w[1],
                                      " must be three hidden sizes divisible by num_heads ", N,
                                      " (or give qkv_hidden_sizes)"));
      plan.q_hidden = plan.k_hidden = plan.v_hidden = w[1] / 3;
    } else {
      plan.q_hidden = sizes_[0], plan.k_hidden = sizes_[1], plan.v_hidden = sizes_[2];
      if (CheckedAdd(CheckedAdd(sizes_[0], sizes_[1]).value_or(-1), sizes_[2]).value_or(-1) != w[1])
        return ctx.Error(absl::StrCat("weights ", ShapeToString(w), ": the width must be the sum of qkv_hidden_sizes (",
                                      sizes_[0], ", ", sizes_[1], ", ", sizes_[2], ")"));
    }
    plan.width = w[1];
    plan.in = x[2];
    if (s[kBias] && (s[kBias]->size() != 1 || (*s[kBias])[0] != w[1]))
      return ctx.Error(absl::StrCat("bias ", ShapeToString(*s[kBias]), " must be (", w[1], ")"));
    const int64_t B = x[0], S = x[1];
    const std::optional<int64_t> rows = CheckedMul(B, S);
    if (!rows) return ctx.Error("batch x sequence overflows");
    plan.rows = *rows;
    p.batch = B, p.q_len = p.kv_len = S, p.q_heads = p.kv_heads = N;
    p.head_size = plan.q_hidden / N;
    p.v_head_size = plan.v_hidden / N;
    // past and present hold K and V in one (2, B, N, T, H) tensor: one head size for both.
    if ((s[kPast] || ctx.num_outputs() > kPresent) && plan.k_hidden != plan.v_hidden)
      return ctx.Error(absl::StrCat("a ", s[kPast] ? "past" : "present", " needs equal key and value hidden sizes (",
                                    plan.k_hidden, " and ", plan.v_hidden, "): it holds both in one tensor"));
    if (s[kPast]) {
      const Shape& past = *s[kPast];
      if (past.size() != 5 || past[0] != 2 || past[1] != B || past[2] != N || past[4] != p.head_size)
        return ctx.Error(absl::StrCat("past ", ShapeToString(past), " must be (2, ", B, ", ", N, ", P, ", p.head_size,
                                      ")"));
      p.cache.past_len = p.cache.capacity = past[3];
    }
    const std::optional<int64_t> total = CheckedAdd(p.cache.past_len, S);
    if (!total) return ctx.Error("past length + sequence length overflows");
    p.total_len = p.cache.present_capacity = *total;
    const HeadView rows_of = {S * plan.width, 0, plan.width};  // Q, K, V: columns of the product's rows
    p.q = p.k = p.v = rows_of;
    p.q.stride_h = p.k.stride_h = p.head_size;
    p.v.stride_h = p.v_head_size;
    p.y = HeadView::Of3D(N, S, p.v_head_size);
    p.scale = attrs_.ScaleFor(p.head_size);
    p.causal = attrs_.unidirectional;  // as many keys as queries: onnxruntime's rule is the kernel's
    plan.bias.filter = attrs_.filter;
    return ResolveMsBias(ctx, s[kMaskIndex] ? &*s[kMaskIndex] : nullptr,
                         s[kAttentionBias] ? &*s[kAttentionBias] : nullptr, false, plan.bias, p);
  }

  // input x weights + bias: (rows, width) in the input's type.
  absl::StatusOr<Tensor> Project(const KernelContext& ctx, const BertAttentionPlan& plan) const {
    const DType t = plan.problem.dtype;
    ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(t, {plan.rows, plan.width}));
    const Tensor* bias = ctx.num_inputs() > kBias ? ctx.input(kBias) : nullptr;
    const void* a = ctx.input(kInput)->raw();
    if (plan.rows == 0 || plan.width == 0) return out;
    bool bias_added = false;
    bool done = false;
    if (packed_) {
      done = packed_->Run(a, out.raw(), plan.rows, ctx.threads());
      bias_added = done && packed_->has_bias();
      if (!done && released_)
        return absl::FailedPreconditionError(absl::StrCat(ctx.node().Describe(), ": the weights were packed for another "
                                                          "CPU target than the one running (",
                                                          CpuTargetName(ActiveCpuTarget()),
                                                          ") and their original was released"));
    }
    const void* w = ctx.input(kWeights)->raw();
    if (!done)
      done = OneDnnMatMul(t, a, w, out.raw(), 1, 1, 1, plan.rows, plan.in, plan.width, false, false, ctx.threads());
    RETURN_IF_ERROR(Dispatch<ProjectTypes>(ctx, t, [&](auto tag) {
      using E = typename decltype(tag)::type;
      E* o = out.data<E>();
      const E* b = bias && !bias_added ? bias->data<E>() : nullptr;
      if (!done) {  // no GEMM route for this type: a plain product, float accumulation
        const E* x = static_cast<const E*>(a);
        const E* wt = static_cast<const E*>(w);
        std::vector<float> row(size_t(plan.width));
        for (int64_t r = 0; r < plan.rows; ++r) {
          std::fill(row.begin(), row.end(), 0.0f);
          for (int64_t k = 0; k < plan.in; ++k) {
            const float xv = float(Widen(x[r * plan.in + k]));
            for (int64_t c = 0; c < plan.width; ++c) row[size_t(c)] += xv * float(Widen(wt[k * plan.width + c]));
          }
          for (int64_t c = 0; c < plan.width; ++c) o[r * plan.width + c] = Narrow<E>(row[size_t(c)]);
        }
      }
      if (b)
        for (int64_t r = 0; r < plan.rows; ++r)
          for (int64_t c = 0; c < plan.width; ++c)
            o[r * plan.width + c] = Narrow<E>(Widen(o[r * plan.width + c]) + Widen(b[c]));
    }));
    return out;
  }

  MsAttentionAttrs attrs_;
  std::vector<int64_t> sizes_;
  std::unique_ptr<PackedMatMul> packed_;  // set by Prepare, read-only after
  bool released_ = false;
};

}  // namespace

std::vector<OpDef> BertAttentionOps() {
  const std::vector<TypeConstraint> types = {{"T", {DType::kFloat, DType::kFloat16}}, {"M", {DType::kInt32}}};
  return {
      {kMsDomain, "Attention", Versions{1}, "T T T? M? T? T? M?", "T T?", types, BertAttentionOp::Create},
  };
}

}  // namespace onnx_mini
