// The recurrent-state ops of linear-attention and state-space layers, the
// counterpart of the KV cache (docs/llm_ops.md): LinearAttention-27 (linear,
// gated, delta and gated-delta rules, GQA) and CausalConvWithState-27 (a
// depthwise causal conv whose carry state holds the last k-1 positions).
// Both declare past_state as the in-place input of present_state, like
// TensorScatter: when the session hands the kernel past_state's own buffer a
// decode step updates the state where it lies.
#include "ops/llm/linear_attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

// Element access for the three types T and S allow (float, float16, bfloat16).
// Beyond float's range a double becomes +-inf (a plain float(v) is undefined there).
float ToFloatSaturated(double v) {
  if (std::fabs(v) > double(std::numeric_limits<float>::max())) return v > 0 ? INFINITY : -INFINITY;
  return float(v);
}
float Load(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::kFloat16: return ToFloat(static_cast<const Float16*>(p)[i]);
    case DType::kBFloat16: return ToFloat(static_cast<const BFloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
void Store(DType t, void* p, int64_t i, double v) {
  switch (t) {
    case DType::kFloat16: static_cast<Float16*>(p)[i] = ToFloat16(v); break;
    case DType::kBFloat16: static_cast<BFloat16*>(p)[i] = ToBFloat16(v); break;
    default: static_cast<float*>(p)[i] = ToFloatSaturated(v); break;
  }
}
double RoundTo(DType t, double v) {
  switch (t) {
    case DType::kFloat16: return ToFloat(ToFloat16(v));
    case DType::kBFloat16: return ToFloat(ToBFloat16(v));
    default: return double(ToFloatSaturated(v));
  }
}
template <class A>
A Sigmoid(A x) {
  if (x >= 0) return A(1) / (A(1) + std::exp(-x));
  const A e = std::exp(x);
  return e / (A(1) + e);
}

// Index helpers of the packed layouts.
struct LinearLayout {
  const LinearAttentionProblem& p;
  int64_t Q(int64_t b, int64_t t, int64_t h, int64_t d) const { return ((b * p.len + t) * p.q_heads + h) * p.dk + d; }
  int64_t K(int64_t b, int64_t t, int64_t h, int64_t d) const { return ((b * p.len + t) * p.kv_heads + h) * p.dk + d; }
  int64_t V(int64_t b, int64_t t, int64_t h, int64_t m) const { return ((b * p.len + t) * p.kv_heads + h) * p.dv + m; }
  int64_t Y(int64_t b, int64_t t, int64_t h, int64_t m) const { return ((b * p.len + t) * p.q_heads + h) * p.dv + m; }
  int64_t State(int64_t b, int64_t h) const { return (b * p.kv_heads + h) * p.dk * p.dv; }
  int64_t Decay(int64_t b, int64_t t, int64_t h, int64_t d) const {
    return p.decay_per_key ? ((b * p.len + t) * p.kv_heads + h) * p.dk + d : (b * p.len + t) * p.kv_heads + h;
  }
  int64_t Beta(int64_t b, int64_t t, int64_t h) const {
    return p.beta_per_head ? (b * p.len + t) * p.kv_heads + h : b * p.len + t;
  }
};

// Shapes with nothing to compute. A state of no elements (d_k or d_v 0) leaves
// every read an empty sum: the output is zeros. Returning here also keeps the
// loops below bounded by real buffers: dims multiplied with an empty one may
// be huge.
bool LinearAttentionTrivial(const LinearAttentionProblem& p) {
  if (p.batch == 0 || p.len == 0 || p.dk == 0 || p.dv == 0) {
    if (p.batch > 0 && p.len > 0 && p.dv > 0)
      std::memset(p.y, 0, size_t(p.batch * p.len * p.q_heads * p.dv) * size_t(Info(p.dtype).bits / 8));
    return p.batch == 0 || p.dk == 0 || p.dv == 0;  // with T = 0 the state still passes through
  }
  return false;
}

}  // namespace

void LinearAttentionReference(const LinearAttentionProblem& p) {
  if (LinearAttentionTrivial(p)) return;
  const LinearLayout at{p};
  const int64_t group = p.q_heads / p.kv_heads, dk = p.dk, dv = p.dv;
  std::vector<double> S(static_cast<size_t>(dk * dv)), u(static_cast<size_t>(dv));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.kv_heads; ++h) {
      const int64_t base = at.State(b, h);
      for (int64_t e = 0; e < dk * dv; ++e) S[size_t(e)] = p.past ? Load(p.state_dtype, p.past, base + e) : 0.0;
      for (int64_t t = 0; t < p.len; ++t) {
        // 1. Decay: S *= exp(g), g per key dim or per head.
        if (p.gated)
          for (int64_t d = 0; d < dk; ++d) {
            const double g = std::exp(double(Load(p.dtype, p.decay, at.Decay(b, t, h, d))));
            for (int64_t m = 0; m < dv; ++m) S[size_t(d * dv + m)] *= g;
          }
        // 2. The value to write: v, or beta * (v - S^T k) under the delta rule.
        for (int64_t m = 0; m < dv; ++m) {
          double v = Load(p.dtype, p.v, at.V(b, t, h, m));
          if (p.delta) {
            double r = 0;
            for (int64_t d = 0; d < dk; ++d) r += S[size_t(d * dv + m)] * Load(p.dtype, p.k, at.K(b, t, h, d));
            v = double(Load(p.dtype, p.beta, at.Beta(b, t, h))) * (v - r);
          }
          u[size_t(m)] = v;
        }
        // 3. Write: S += k (x) u.
        for (int64_t d = 0; d < dk; ++d) {
          const double kd = Load(p.dtype, p.k, at.K(b, t, h, d));
          for (int64_t m = 0; m < dv; ++m) S[size_t(d * dv + m)] += kd * u[size_t(m)];
        }
        // 4. Read, for every query head sharing this KV head: o = scale * q^T S.
        for (int64_t j = 0; j < group; ++j) {
          const int64_t hq = h * group + j;
          for (int64_t m = 0; m < dv; ++m) {
            double o = 0;
            for (int64_t d = 0; d < dk; ++d) o += double(Load(p.dtype, p.q, at.Q(b, t, hq, d))) * S[size_t(d * dv + m)];
            Store(p.dtype, p.y, at.Y(b, t, hq, m), double(p.scale) * o);
          }
        }
      }
      for (int64_t e = 0; e < dk * dv; ++e) Store(p.state_dtype, p.present, base + e, S[size_t(e)]);
    }
}

void LinearAttentionFast(const LinearAttentionProblem& p, int threads) {
  if (LinearAttentionTrivial(p)) return;
  const LinearLayout at{p};
  const int64_t group = p.q_heads / p.kv_heads, dk = p.dk, dv = p.dv;
  const int64_t tasks = p.batch * p.kv_heads;
  const bool float_state = p.state_dtype == DType::kFloat;
  ParallelFor(threads, tasks, WorkPerIndex{4.0 * double(p.len * dk * dv)}, [&](int64_t task_begin, int64_t task_end) {
    // Per chunk: the state in float when S is 16-bit, and one token's rows.
    std::vector<float> scratch(float_state ? 0 : static_cast<size_t>(dk * dv));
    std::vector<float> kf(static_cast<size_t>(dk)), gf(static_cast<size_t>(dk)), qf(static_cast<size_t>(group * dk)),
        u(static_cast<size_t>(dv)), o(static_cast<size_t>(group * dv));
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t b = task / p.kv_heads, h = task % p.kv_heads;
      const int64_t base = at.State(b, h);
      // The state is updated where it lies: the present buffer itself for a
      // float state (past's own buffer when the session hands it over).
      float* S = float_state ? static_cast<float*>(p.present) + base : scratch.data();
      if (!p.past) {
        std::fill(S, S + dk * dv, 0.f);
      } else if (float_state) {
        const float* past = static_cast<const float*>(p.past) + base;
        if (past != S) std::memcpy(S, past, size_t(dk * dv) * sizeof(float));
      } else {
        for (int64_t e = 0; e < dk * dv; ++e) S[e] = Load(p.state_dtype, p.past, base + e);
      }
      for (int64_t t = 0; t < p.len; ++t) {
        for (int64_t d = 0; d < dk; ++d) kf[size_t(d)] = Load(p.dtype, p.k, at.K(b, t, h, d));
        for (int64_t m = 0; m < dv; ++m) u[size_t(m)] = Load(p.dtype, p.v, at.V(b, t, h, m));
        for (int64_t j = 0; j < group; ++j)
          for (int64_t d = 0; d < dk; ++d) qf[size_t(j * dk + d)] = Load(p.dtype, p.q, at.Q(b, t, h * group + j, d));
        if (p.gated)
          for (int64_t d = 0; d < dk; ++d) gf[size_t(d)] = std::exp(Load(p.dtype, p.decay, at.Decay(b, t, h, d)));
        // Pass 1 (decay and retrieval fused): S *= exp(g); r = S^T k.
        if (p.delta) {
          std::vector<float>& r = o;  // o is free until pass 2
          std::fill(r.begin(), r.begin() + dv, 0.f);
          for (int64_t d = 0; d < dk; ++d) {
            float* row = S + d * dv;
            const float g = p.gated ? gf[size_t(d)] : 1.f, kd = kf[size_t(d)];
            for (int64_t m = 0; m < dv; ++m) {
              row[m] *= g;
              r[size_t(m)] += row[m] * kd;
            }
          }
          const float beta = Load(p.dtype, p.beta, at.Beta(b, t, h));
          for (int64_t m = 0; m < dv; ++m) u[size_t(m)] = beta * (u[size_t(m)] - r[size_t(m)]);
        } else if (p.gated) {
          for (int64_t d = 0; d < dk; ++d)
            for (int64_t m = 0; m < dv; ++m) S[d * dv + m] *= gf[size_t(d)];
        }
        // Pass 2 (write and read fused): S += k (x) u; o_j += q_j[d] * S[d].
        std::fill(o.begin(), o.end(), 0.f);
        for (int64_t d = 0; d < dk; ++d) {
          float* row = S + d * dv;
          const float kd = kf[size_t(d)];
          for (int64_t m = 0; m < dv; ++m) row[m] += kd * u[size_t(m)];
          for (int64_t j = 0; j < group; ++j) {
            const float qd = qf[size_t(j * dk + d)];
            float* oj = o.data() + j * dv;
            for (int64_t m = 0; m < dv; ++m) oj[m] += qd * row[m];
          }
        }
        for (int64_t j = 0; j < group; ++j)
          for (int64_t m = 0; m < dv; ++m)
            Store(p.dtype, p.y, at.Y(b, t, h * group + j, m), double(p.scale * o[size_t(j * dv + m)]));
      }
      if (!float_state)
        for (int64_t e = 0; e < dk * dv; ++e) Store(p.state_dtype, p.present, base + e, S[e]);
    }
  });
}

void CausalConvReference(const CausalConvProblem& p) {
  const int64_t k = p.kernel, L = p.len, carry = k - 1;
  if (L == 0 && carry == 0) return;  // nothing to write (and B * C may be huge)
  std::vector<double> padded(static_cast<size_t>(carry + L));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t c = 0; c < p.channels; ++c) {
      const int64_t row = b * p.channels + c;
      // The padded row: the carry (past_state or zeros), then the input.
      for (int64_t i = 0; i < carry; ++i) padded[size_t(i)] = p.past ? Load(p.dtype, p.past, row * carry + i) : 0.0;
      for (int64_t i = 0; i < L; ++i) padded[size_t(carry + i)] = Load(p.dtype, p.input, row * L + i);
      for (int64_t l = 0; l < L; ++l) {
        double acc = p.bias ? double(Load(p.dtype, p.bias, c)) : 0.0;
        for (int64_t j = 0; j < k; ++j) acc += double(Load(p.dtype, p.weight, c * k + j)) * padded[size_t(l + j)];
        acc = RoundTo(p.dtype, acc);  // the conv's output is a T tensor before the activation
        if (p.silu) acc = acc * Sigmoid(acc);
        Store(p.dtype, p.output, row * L + l, acc);
      }
      // The new carry: the last k-1 positions of the padded row.
      for (int64_t i = 0; i < carry; ++i) Store(p.dtype, p.present, row * carry + i, padded[size_t(L + i)]);
    }
}

void CausalConvFast(const CausalConvProblem& p, int threads) {
  const int64_t k = p.kernel, L = p.len, carry = k - 1, rows = p.batch * p.channels;
  if (L == 0 && carry == 0) return;  // nothing to write (and B * C may be huge)
  const size_t elem = size_t(Info(p.dtype).bits / 8);
  ParallelFor(threads, rows, WorkPerIndex{double(L * k)},
              [&](int64_t row_begin, int64_t row_end) { for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t c = row % p.channels;
    // Position i of the padded row without building it: the carry, then the input.
    auto at = [&](int64_t i) -> float {
      if (i >= carry) return Load(p.dtype, p.input, row * L + i - carry);
      return p.past ? Load(p.dtype, p.past, row * carry + i) : 0.f;
    };
    const float bias = p.bias ? Load(p.dtype, p.bias, c) : 0.f;
    for (int64_t l = 0; l < L; ++l) {
      float acc = bias;
      for (int64_t j = 0; j < k; ++j) acc += Load(p.dtype, p.weight, c * k + j) * at(l + j);
      acc = float(RoundTo(p.dtype, acc));
      if (p.silu) acc = acc * Sigmoid(acc);
      Store(p.dtype, p.output, row * L + l, acc);
    }
    // The carry shifts left by L (the outputs above were read first). In
    // place, carry[i] takes carry[L + i]: ascending i never reads a written slot.
    char* present = static_cast<char*>(p.present) + size_t(row * carry) * elem;
    for (int64_t i = 0; i < carry; ++i) {
      const int64_t src = L + i;
      const void* from = src >= carry ? static_cast<const char*>(p.input) + size_t(row * L + src - carry) * elem
                         : p.past ? static_cast<const char*>(p.past) + size_t(row * carry + src) * elem
                                  : nullptr;
      if (from) std::memmove(present + size_t(i) * elem, from, elem);
      else std::memset(present + size_t(i) * elem, 0, elem);
    }
  }});
}

namespace {

constexpr TypeSet kStateTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16};

// A dim's value, or -1 when unknown (also for a missing rank).
int64_t DimOf(const ValueType& t, size_t i) {
  return t.dims && i < t.dims->size() && (*t.dims)[i].known() ? (*t.dims)[i].value : -1;
}
Dim DimOrUnknown(int64_t v) { return v >= 0 ? Dim::Known(v) : Dim{}; }

struct LinearPlan : OpPlan {
  LinearAttentionProblem problem;  // shapes and flags; pointers filled per run
};

// ---- LinearAttention ----

class LinearAttentionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    if (!node.attr("q_num_heads") || !node.attr("kv_num_heads"))
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": the attributes q_num_heads and kv_num_heads are required (LA1)"));
    const int64_t hq = node.attr_int("q_num_heads", 0), hkv = node.attr_int("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": q_num_heads ", hq,
                                                     " must be a positive multiple of kv_num_heads ", hkv, " (LA1)"));
    const std::string rule = node.attr_string("update_rule", "gated_delta");
    if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
      return absl::InvalidArgumentError(absl::StrCat(
          node.Describe(), ": update_rule '", rule, "' is not one of linear, gated, delta, gated_delta (LA2)"));
    const float scale = node.attr_float("scale", 0.f);
    if (!std::isfinite(scale))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": scale ", scale, " is not finite (LA7)"));
    auto op = std::unique_ptr<LinearAttentionOp>(new LinearAttentionOp);
    op->q_heads_ = hq;
    op->kv_heads_ = hkv;
    op->gated_ = rule == "gated" || rule == "gated_delta";
    op->delta_ = rule == "delta" || rule == "gated_delta";
    op->rule_ = rule;
    op->scale_ = scale;
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    if (gated_ != ctx.has_input(4))
      return ctx.Error(absl::StrCat("update_rule '", rule_, "' ", gated_ ? "requires" : "forbids",
                                    " the decay input (LA2)"));
    if (delta_ != ctx.has_input(5))
      return ctx.Error(absl::StrCat("update_rule '", rule_, "' ", delta_ ? "requires" : "forbids",
                                    " the beta input (LA2)"));
    const char* names[] = {"query", "key", "value", "past_state", "decay", "beta"};
    for (size_t i = 0; i < 6; ++i) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      const int64_t want = i == 3 ? 4 : 3;
      if (ctx.input(i).rank() != want)
        return ctx.Error(absl::StrCat(names[i], " ", ctx.input(i).ToString(), " must have rank ", want, " (LA3)"));
    }
    const ValueType &q = ctx.input(0), &v = ctx.input(2);
    const int64_t B = DimOf(q, 0), T = DimOf(q, 1), qlast = DimOf(q, 2), vlast = DimOf(v, 2);
    if (qlast >= 0 && qlast % q_heads_ != 0)
      return ctx.Error(absl::StrCat("query's last dim ", qlast, " is not divisible by q_num_heads ", q_heads_,
                                    " (LA3)"));
    if (vlast >= 0 && vlast % kv_heads_ != 0)
      return ctx.Error(absl::StrCat("value's last dim ", vlast, " is not divisible by kv_num_heads ", kv_heads_,
                                    " (LA3)"));
    const int64_t dk = qlast >= 0 ? qlast / q_heads_ : -1, dv = vlast >= 0 ? vlast / kv_heads_ : -1;
    const DType state_dtype = ctx.has_input(3) ? ctx.input(3).dtype : q.dtype;
    const std::optional<int64_t> y_last = dv >= 0 ? CheckedMul(q_heads_, dv) : std::optional<int64_t>(-1);
    if (!y_last) return ctx.Error(absl::StrCat("q_num_heads ", q_heads_, " * d_v ", dv, " overflows (LA3)"));
    ValueType y = ValueType::Of(q.dtype, {});
    y.dims = std::vector<Dim>{DimOrUnknown(B), DimOrUnknown(T), DimOrUnknown(*y_last)};
    ValueType present = ValueType::Of(state_dtype, {});
    present.dims = std::vector<Dim>{DimOrUnknown(B), Dim::Known(kv_heads_), DimOrUnknown(dk), DimOrUnknown(dv)};
    ctx.set_output(0, y);
    ctx.set_output(1, present);

    // The full check once every shape is known (at creation, or at run).
    std::vector<Shape> shapes(6);
    for (size_t i = 0; i < 6; ++i) {
      if (!ctx.has_input(i)) continue;
      std::optional<Shape> s = ctx.input(i).concrete_shape();
      if (!s) return absl::OkStatus();
      shapes[i] = *s;
    }
    auto mismatch = [&](size_t i, const std::string& want) {
      return ctx.Error(absl::StrCat(names[i], " ", ShapeToString(shapes[i]), " must be ", want, " (LA3)"));
    };
    const std::string bt = absl::StrCat("(", B, ", ", T, ", ");
    if (shapes[1] != Shape{B, T, kv_heads_ * dk})
      return mismatch(1, absl::StrCat(bt, kv_heads_ * dk, ") = (B, T, kv_num_heads * d_k)"));
    if (shapes[2][0] != B || shapes[2][1] != T) return mismatch(2, absl::StrCat(bt, "kv_num_heads * d_v)"));
    if (ctx.has_input(3) && shapes[3] != Shape{B, kv_heads_, dk, dv})
      return ctx.Error(absl::StrCat("past_state ", ShapeToString(shapes[3]), " must be (", B, ", ", kv_heads_, ", ", dk,
                                    ", ", dv, ") = (B, kv_num_heads, d_k, d_v) (LA4)"));
    auto p = std::make_shared<LinearPlan>();
    LinearAttentionProblem& pr = p->problem;
    if (gated_) {
      const Shape& s = shapes[4];
      if (s[0] != B || s[1] != T || (s[2] != kv_heads_ && s[2] != kv_heads_ * dk))
        return ctx.Error(absl::StrCat("decay ", ShapeToString(s), " must be ", bt, kv_heads_, ") per head or ", bt,
                                      kv_heads_ * dk, ") per key dim (LA5)"));
      pr.decay_per_key = s[2] != kv_heads_;
    }
    if (delta_) {
      const Shape& s = shapes[5];
      if (s[0] != B || s[1] != T || (s[2] != kv_heads_ && s[2] != 1))
        return ctx.Error(absl::StrCat("beta ", ShapeToString(s), " must be ", bt, kv_heads_, ") or ", bt, "1) (LA6)"));
      pr.beta_per_head = s[2] == kv_heads_;
    }
    pr.batch = B;
    pr.len = T;
    pr.q_heads = q_heads_;
    pr.kv_heads = kv_heads_;
    pr.dk = dk;
    pr.dv = dv;
    pr.gated = gated_;
    pr.delta = delta_;
    // LA7: 0 means 1/sqrt(d_k); with d_k = 0 every sum is empty and 1 keeps the output 0.
    pr.scale = scale_ != 0 ? scale_ : dk > 0 ? float(1.0 / std::sqrt(double(dk))) : 1.f;
    pr.dtype = q.dtype;
    pr.state_dtype = state_dtype;
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    LinearAttentionProblem p = ctx.plan<LinearPlan>().problem;
    p.q = ctx.input(0)->raw();
    p.k = ctx.input(1)->raw();
    p.v = ctx.input(2)->raw();
    p.past = ctx.input(3) ? ctx.input(3)->raw() : nullptr;
    p.decay = ctx.num_inputs() > 4 && ctx.input(4) ? ctx.input(4)->raw() : nullptr;
    p.beta = ctx.num_inputs() > 5 && ctx.input(5) ? ctx.input(5)->raw() : nullptr;
    p.y = ctx.output(0).raw();
    // present_state is required by the schema, but a node may leave it unnamed:
    // the session then gives the kernel a scratch buffer.
    p.present = ctx.output(1).raw();
    LinearAttentionFast(p, ctx.threads());
    return absl::OkStatus();
  }

 private:
  LinearAttentionOp() = default;
  int64_t q_heads_ = 0, kv_heads_ = 0;
  bool gated_ = false, delta_ = false;
  std::string rule_;
  float scale_ = 0;
};

// ---- CausalConvWithState ----

struct ConvPlan : OpPlan {
  CausalConvProblem problem;
};

class CausalConvOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string act = node.attr_string("activation", "none");
    if (act != "none" && act != "silu" && act != "swish")
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": activation '", act, "' is not one of none, silu, swish (CC1)"));
    auto op = std::unique_ptr<CausalConvOp>(new CausalConvOp);
    op->silu_ = act != "none";
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const char* names[] = {"input", "weight", "bias", "past_state"};
    for (size_t i = 0; i < 4; ++i) {
      if (!ctx.has_input(i) || !ctx.input(i).dims) continue;
      const int64_t want = i == 2 ? 1 : 3;
      if (ctx.input(i).rank() != want)
        return ctx.Error(absl::StrCat(names[i], " ", ctx.input(i).ToString(), " must have rank ", want, " (CC2)"));
    }
    const ValueType &x = ctx.input(0), &w = ctx.input(1);
    const int64_t B = DimOf(x, 0), C = DimOf(x, 1), K = DimOf(w, 2);
    if (K == 0) return ctx.Error(absl::StrCat("weight ", w.ToString(), " has kernel size 0; it must be at least 1 (CC2)"));
    ctx.set_output(0, x);
    ValueType present = ValueType::Of(x.dtype, {});
    present.dims = std::vector<Dim>{DimOrUnknown(B), DimOrUnknown(C), DimOrUnknown(K > 0 ? K - 1 : -1)};
    ctx.set_output(1, present);

    std::vector<Shape> shapes(4);
    for (size_t i = 0; i < 4; ++i) {
      if (!ctx.has_input(i)) continue;
      std::optional<Shape> s = ctx.input(i).concrete_shape();
      if (!s) return absl::OkStatus();
      shapes[i] = *s;
    }
    const int64_t L = shapes[0][2];
    if (shapes[1] != Shape{C, 1, K})
      return ctx.Error(absl::StrCat("weight ", ShapeToString(shapes[1]), " must be (", C, ", 1, k) for input ",
                                    ShapeToString(shapes[0]), " (CC2: one depthwise kernel per channel)"));
    if (ctx.has_input(2) && shapes[2] != Shape{C})
      return ctx.Error(absl::StrCat("bias ", ShapeToString(shapes[2]), " must be (", C, ") (CC2)"));
    if (ctx.has_input(3) && shapes[3] != Shape{B, C, K - 1})
      return ctx.Error(absl::StrCat("past_state ", ShapeToString(shapes[3]), " must be (", B, ", ", C, ", ", K - 1,
                                    ") = (batch, channels, k - 1) (CC3)"));
    auto p = std::make_shared<ConvPlan>();
    p->problem.batch = B;
    p->problem.channels = C;
    p->problem.len = L;
    p->problem.kernel = K;
    p->problem.silu = silu_;
    p->problem.dtype = x.dtype;
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    CausalConvProblem p = ctx.plan<ConvPlan>().problem;
    p.input = ctx.input(0)->raw();
    p.weight = ctx.input(1)->raw();
    p.bias = ctx.num_inputs() > 2 && ctx.input(2) ? ctx.input(2)->raw() : nullptr;
    p.past = ctx.num_inputs() > 3 && ctx.input(3) ? ctx.input(3)->raw() : nullptr;
    p.output = ctx.output(0).raw();
    p.present = ctx.output(1).raw();
    CausalConvFast(p, ctx.threads());
    return absl::OkStatus();
  }

 private:
  CausalConvOp() = default;
  bool silu_ = false;
};

}  // namespace

std::vector<OpDef> LinearAttentionOps() {
  return {
      {"", "LinearAttention", 27, 0, "T T T S? T? T?", "T S", {{"T", kStateTypes}, {"S", kStateTypes}},
       LinearAttentionOp::Create, {{1, 3, Alias::kInPlace}}},
      {"", "CausalConvWithState", 27, 0, "T T T? T?", "T T", {{"T", kStateTypes}}, CausalConvOp::Create,
       {{1, 3, Alias::kInPlace}}},
  };
}

}  // namespace onnx_mini
