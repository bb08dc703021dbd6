// FlexAttention (ai.onnx.preview, version 1; docs/llm_ops.md): attention over
// rank-4 Q, K, V with two optional subgraphs, score_mod on the scores before
// the softmax and prob_mod on the probabilities after it. The subgraphs are
// planned once, at session creation, like the bodies of If and Loop (so the
// row makes its output), and run on the whole (B, Hq, L, S) tensor. Without
// either subgraph the op is Attention without a mask and runs on Attention's
// fast kernel, which never materializes the scores.
#include <cmath>
#include <limits>

#include "kernels/attention/attention.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

struct FlexPlan : OpPlan {
  const Subgraph* score_mod = nullptr;
  const Subgraph* prob_mod = nullptr;
  DType softmax = DType::kFloat;
};

// The shape rules (FA1-FA3) on dims that may be unknown (-1); "" when they hold.
std::string FlexShapeRule(const int64_t q[4], const int64_t k[4], const int64_t v[4]) {
  auto differ = [](int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; };
  if (differ(q[0], k[0]) || differ(q[0], v[0])) return "Q, K and V must have the same batch size (FA1)";
  if (differ(k[1], v[1])) return "K and V must have the same number of heads (FA2)";
  if (differ(k[2], v[2])) return "K and V must have the same sequence length (FA2)";
  if (differ(q[3], k[3])) return "Q and K must have the same head size (FA2)";
  if (q[1] >= 0 && k[1] >= 0 && (k[1] == 0 ? q[1] != 0 : q[1] % k[1] != 0))
    return absl::StrCat("q_num_heads ", q[1], " must be a multiple of kv_num_heads ", k[1], " (FA3)");
  return "";
}

std::string Shapes(const Shape& q, const Shape& k, const Shape& v) {
  return absl::StrCat(": Q ", ShapeToString(q), ", K ", ShapeToString(k), ", V ", ShapeToString(v));
}

// x rounded to the precision of a float type; beyond float's range, +-inf (a
// plain float(x) is undefined there, and hostile inputs reach it).
double RoundAt(DType d, double x) {
  if (d == DType::kFloat && std::fabs(x) > double(std::numeric_limits<float>::max()))
    return std::copysign(double(INFINITY), x);
  return RoundToDType(d, x);
}

// The plain reference: the score tensor in the softmax precision, each cast
// point of the function body rounded (Q and K times Cast_T(sqrt(scale)), the
// scores as a T MatMul result, then the softmax type), the subgraphs run on
// the whole tensor, and the output rounded to the softmax type, then to T.
absl::Status FlexReference(const KernelContext& ctx, const FlexPlan& plan, const Tensor& Q, const Tensor& K,
                           const Tensor& V, float scale, Tensor& Y) {
  const Shape &qs = Q.shape(), &ks = K.shape(), &vs = V.shape();
  const int64_t B = qs[0], Hq = qs[1], L = qs[2], E = qs[3], Hkv = ks[1], S = ks[2], Dv = vs[3];
  const int64_t group = Hq / Hkv, rows = B * Hq * L;
  const DType t = Q.dtype(), sdt = plan.softmax;
  const double ss = RoundAt(t, std::sqrt(scale));
  const int threads = ctx.threads();
  // Every input element is converted (and rounded at its cast point) once;
  // the loops then run on doubles. Tensors, not vectors: a failed allocation
  // is an error status.
  auto widen = [&](const Tensor& x, double mul, DType round) -> absl::StatusOr<Tensor> {
    ASSIGN_OR_RETURN(Tensor d, ctx.NewTensor(DType::kDouble, x.shape()));
    double* out = d.data<double>();
    ParallelFor(threads, x.size(), WorkPerIndex{1}, [&](int64_t i_begin, int64_t i_end) {
      for (int64_t i = i_begin; i < i_end; ++i)
        out[i] = RoundAt(round, GetDouble(x, i) * mul);
    });
    return d;
  };
  ASSIGN_OR_RETURN(Tensor qd, widen(Q, ss, t));   // Q * Cast_T(sqrt(scale)), in T
  ASSIGN_OR_RETURN(Tensor kd, widen(K, ss, t));   // K * Cast_T(sqrt(scale)), in T
  ASSIGN_OR_RETURN(Tensor vd, widen(V, 1, sdt));  // Cast(V) to the softmax type
  ASSIGN_OR_RETURN(Tensor scores, ctx.NewTensor(sdt, {B, Hq, L, S}));
  const double *q = qd.data<double>(), *k = kd.data<double>(), *v = vd.data<double>();
  ParallelFor(threads, rows, WorkPerIndex{double(S * E)},
              [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
    const int64_t h = (r / L) % Hq, b = r / (L * Hq);
    const double* qr = q + r * E;
    for (int64_t j = 0; j < S; ++j) {
      const double* kr = k + ((b * Hkv + h / group) * S + j) * E;
      double dot = 0;
      for (int64_t e = 0; e < E; ++e) dot += qr[e] * kr[e];
      SetDouble(scores, r * S + j, RoundAt(t, dot));  // the MatMul's T result, then the softmax type
    }
  }});
  auto modify = [&](const Subgraph* g, Tensor& x, const char* what) -> absl::Status {
    if (g == nullptr) return absl::OkStatus();
    const Shape shape = x.shape();
    std::vector<Value> out;
    RETURN_IF_ERROR(ctx.RunSubgraph(*g, {x}, &out));
    if (out.size() != 1 || !out[0].is_tensor() || out[0].tensor().dtype() != sdt || out[0].tensor().shape() != shape)
      return ctx.Error(absl::StrCat(what, " must give one ", LowerName(sdt), ShapeToString(shape), " tensor, got ",
                                    out.empty() ? std::string("nothing") : out[0].ToString(), " (FA5)"));
    x = std::move(out[0].tensor());
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(modify(plan.score_mod, scores, "score_mod"));
  // Softmax over the keys in double, rounded to the softmax type; the
  // probabilities stay in `pd` unless prob_mod replaces them.
  Tensor probs;  // only prob_mod reads them
  if (plan.prob_mod) {
    ASSIGN_OR_RETURN(probs, ctx.NewTensor(sdt, {B, Hq, L, S}));
  }
  ASSIGN_OR_RETURN(Tensor pd, ctx.NewTensor(DType::kDouble, {B, Hq, L, S}));
  double* p = pd.data<double>();
  ParallelFor(threads, rows, WorkPerIndex{double(S)},
              [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
    double* row = p + r * S;
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < S; ++j) mx = std::max(mx, row[j] = GetDouble(scores, r * S + j));
    for (int64_t j = 0; j < S; ++j) sum += row[j] = std::exp(row[j] - mx);
    for (int64_t j = 0; j < S; ++j) {
      row[j] = RoundAt(sdt, row[j] / sum);
      if (plan.prob_mod) SetDouble(probs, r * S + j, row[j]);
    }
  }});
  if (plan.prob_mod) {
    RETURN_IF_ERROR(modify(plan.prob_mod, probs, "prob_mod"));
    ASSIGN_OR_RETURN(pd, widen(probs, 1, sdt));
    p = pd.data<double>();
  }
  ParallelFor(threads, rows, WorkPerIndex{double(S * Dv)},
              [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
    const int64_t h = (r / L) % Hq, b = r / (L * Hq);
    const double* vh = v + (b * Hkv + h / group) * S * Dv;
    for (int64_t m = 0; m < Dv; ++m) {
      double acc = 0;
      for (int64_t j = 0; j < S; ++j) acc += p[r * S + j] * vh[j * Dv + m];
      SetDouble(Y, r * Dv + m, RoundAt(sdt, acc));
    }
  }});
  return absl::OkStatus();
}

class FlexAttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::unique_ptr<FlexAttentionOp>(new FlexAttentionOp);
    if (const Attribute* a = node.attr("scale")) {
      if (!std::isfinite(a->f) || a->f < 0)
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": scale ", a->f, " must be finite and not negative (FA4: Q and K are "
                         "multiplied by its square root)"));
      op->scale_ = a->f;
    }
    if (const Attribute* a = node.attr("softmax_precision")) {
      if (a->i != int64_t(DType::kFloat) && a->i != int64_t(DType::kFloat16) && a->i != int64_t(DType::kBFloat16) &&
          a->i != int64_t(DType::kDouble))
        return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": softmax_precision ", a->i,
                                                       " is not float (1), float16 (10), bfloat16 (16) or double (11)"
                                                       " (FA4)"));
      op->softmax_ = static_cast<DType>(a->i);  // validated above
    }
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
    const char* names[] = {"Q", "K", "V"};
    for (size_t i = 0; i < 3; ++i)
      if (ctx.input(i).dims && ctx.input(i).rank() != 4)
        return ctx.Error(absl::StrCat(names[i], " ", ctx.input(i).ToString(), " must have rank 4 (FA1)"));
    auto dims = [](const ValueType& t, int64_t out[4]) {
      for (size_t i = 0; i < 4; ++i) out[i] = t.dims && (*t.dims)[i].known() ? (*t.dims)[i].value : -1;
    };
    int64_t qd[4], kd[4], vd[4];
    dims(q, qd);
    dims(k, kd);
    dims(v, vd);
    const std::string rule = FlexShapeRule(qd, kd, vd);
    if (!rule.empty())
      return ctx.Error(absl::StrCat(rule, ": Q ", q.ToString(), ", K ", k.ToString(), ", V ", v.ToString()));
    auto plan = std::make_shared<FlexPlan>();
    plan->softmax = softmax_ != DType::kUndefined ? softmax_
                    : q.dtype == DType::kDouble   ? DType::kDouble
                                                  : DType::kFloat;
    auto known = [](int64_t d) { return d >= 0 ? Dim::Known(d) : Dim{}; };
    ValueType scores = ValueType::Of(plan->softmax, {});
    scores.dims = std::vector<Dim>{known(qd[0]), known(qd[1]), known(qd[2]), known(kd[2])};
    for (const char* attr : {"score_mod", "prob_mod"}) {
      if (ctx.node().attr(attr) == nullptr) continue;
      ASSIGN_OR_RETURN(const Subgraph* g, ctx.subgraph(attr, {scores}));
      if (g->inputs().size() != 1 || g->outputs().size() != 1)
        return ctx.Error(absl::StrCat(attr, " takes ", g->inputs().size(), " inputs and gives ", g->outputs().size(),
                                      " outputs; it must take the ", LowerName(plan->softmax),
                                      " scores and give one tensor (FA5)"));
      const ValueType& out = g->outputs()[0].type;
      if (!out.is_tensor() || (out.dtype != DType::kUndefined && out.dtype != plan->softmax))
        return ctx.Error(absl::StrCat(attr, " gives ", out.ToString(), "; it must give a ", LowerName(plan->softmax),
                                      " tensor of the scores' shape (FA5)"));
      (std::string(attr) == "score_mod" ? plan->score_mod : plan->prob_mod) = g;
    }
    ValueType y = ValueType::Of(q.dtype, {});
    y.dims = std::vector<Dim>{known(qd[0]), known(qd[1]), known(qd[2]), known(vd[3])};
    ctx.set_output(0, y);
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const FlexPlan& plan = ctx.plan<FlexPlan>();
    const Tensor &Q = *ctx.input(0), &K = *ctx.input(1), &V = *ctx.input(2);
    // The row makes its output, so Infer saw only the planned types: the run's shapes are checked here.
    if (Q.shape().size() != 4 || K.shape().size() != 4 || V.shape().size() != 4)
      return ctx.Error("Q, K and V must have rank 4 (FA1)" + Shapes(Q.shape(), K.shape(), V.shape()));
    const std::string rule = FlexShapeRule(Q.shape().data(), K.shape().data(), V.shape().data());
    if (!rule.empty()) return ctx.Error(rule + Shapes(Q.shape(), K.shape(), V.shape()));
    const Shape &qs = Q.shape(), &ks = K.shape(), &vs = V.shape();
    // The scores tensor the subgraphs see must be addressable.
    if (!CheckedProduct({qs[0], qs[1], qs[2], ks[2]}))
      return ctx.Error("the scores (B, Hq, L, S) are too large" + Shapes(qs, ks, vs));
    ASSIGN_OR_RETURN(Tensor Y, ctx.NewTensor(Q.dtype(), {qs[0], qs[1], qs[2], vs[3]}));
    const float scale = scale_ >= 0 ? scale_ : qs[3] > 0 ? float(1.0 / std::sqrt(double(qs[3]))) : 1.f;

    AttentionProblem p;
    p.batch = qs[0];
    p.q_heads = qs[1];
    p.kv_heads = ks[1];
    p.q_len = qs[2];
    p.kv_len = p.total_len = ks[2];
    p.head_size = qs[3];
    p.v_head_size = vs[3];
    p.dtype = Q.dtype();
    p.q = HeadView::Of4D(p.q_heads, p.q_len, p.head_size);
    p.k = HeadView::Of4D(p.kv_heads, p.kv_len, p.head_size);
    p.v = HeadView::Of4D(p.kv_heads, p.kv_len, p.v_head_size);
    p.y = HeadView::Of4D(p.q_heads, p.q_len, p.v_head_size);
    p.q_data = Q.raw();
    p.k_data = K.raw();
    p.v_data = V.raw();
    p.y_data = Y.raw();
    p.scale = scale;
    p.softmax_dtype = plan.softmax;
    // With Y empty there is nothing to compute (and B * Hq * L may be huge).
    if (Y.size() > 0) {
      if (!plan.score_mod && !plan.prob_mod && UsesFastPath(p)) {
        ASSIGN_OR_RETURN(MemoryReservation workspace, ctx.Reserve(AttentionWorkspaceBytes(p, ctx.threads(), true), 1,
                                                                 "the attention kernel's workspaces"));
        AttentionFast(p, ctx.threads());
      } else {
        RETURN_IF_ERROR(FlexReference(ctx, plan, Q, K, V, scale, Y));
      }
    }
    ctx.set_value(0, std::move(Y));
    return absl::OkStatus();
  }

 private:
  FlexAttentionOp() = default;
  float scale_ = -1;  // -1: 1/sqrt(head_size)
  DType softmax_ = DType::kUndefined;
};

}  // namespace

std::vector<OpDef> FlexAttentionOps() {
  return {{"ai.onnx.preview", "FlexAttention", 1, 0, "T T T", "T", {{"T", kFloatTypes}}, FlexAttentionOp::Create,
           {}, true}};
}

}  // namespace onnx_mini
