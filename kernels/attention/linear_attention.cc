// Kernels of the recurrent-state ops (linear_attention.h): LinearAttention-27
// and CausalConvWithState-27, over problems the ops (ops/llm/linear_attention.cc) fill.
#include "kernels/attention/linear_attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/vec/round.h"
#include "kernels/vec/sigmoid.h"
#include "runtime/checked.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

// Element access for the three types T and S allow (float, float16, bfloat16).
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
    default: static_cast<float*>(p)[i] = NarrowToFloat(v); break;
  }
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
        acc = RoundToPrecision(p.dtype, acc);  // the conv's output is a T tensor before the activation
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
      acc = float(RoundToPrecision(p.dtype, acc));
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

}  // namespace onnx_mini
