// The attention kernel's head sinks (an extra logit per query head in the
// softmax denominator) and clamped positions (a right-padded prompt's pad
// queries at their row's last key): the reference against a plain double
// computation, and the fast kernel against the reference on every CPU target
// the machine has, with whole and split key ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/attention/attention.h"
#include "runtime/cpu.h"
#include "runtime/element.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

struct SinkCase {
  int64_t B, Hq, Hkv, S, T, D;  // S queries over T keys (no past); T == S for a prompt
  std::vector<int64_t> valid;   // per row: its real keys (right padding)
  int64_t left = -1;
  bool sinks = true;
};

// Y[b, h, i] by the definition: softmax over the visible keys plus the sink.
std::vector<double> Naive(const SinkCase& c, const std::vector<double>& q, const std::vector<double>& k,
                          const std::vector<double>& v, const std::vector<float>& sinks) {
  std::vector<double> y(size_t(c.B * c.Hq * c.S * c.D));
  const double scale = 1 / std::sqrt(double(c.D));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.S; ++i) {
        const int64_t g = h / (c.Hq / c.Hkv), n = c.valid[size_t(b)];
        // Clamped to the row's last key; a decode step's one query is there.
        const int64_t pos = c.S == 1 ? n - 1 : std::min(i, n - 1);
        const int64_t last = pos + 1, first = c.left >= 0 ? std::max<int64_t>(0, pos - c.left) : 0;
        double mx = c.sinks ? sinks[size_t(h)] : -INFINITY;
        std::vector<double> s(size_t(c.T), -INFINITY);
        for (int64_t j = first; j < last; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += q[size_t(((b * c.Hq + h) * c.S + i) * c.D + d)] * k[size_t(((b * c.Hkv + g) * c.T + j) * c.D + d)];
          s[size_t(j)] = dot * scale;
          mx = std::max(mx, s[size_t(j)]);
        }
        double sum = c.sinks ? std::exp(sinks[size_t(h)] - mx) : 0;
        for (int64_t j = first; j < last; ++j) sum += std::exp(s[size_t(j)] - mx);
        for (int64_t d = 0; d < c.D; ++d) {
          double acc = 0;
          for (int64_t j = first; j < last; ++j)
            acc += std::exp(s[size_t(j)] - mx) * v[size_t(((b * c.Hkv + g) * c.T + j) * c.D + d)];
          y[size_t(((b * c.Hq + h) * c.S + i) * c.D + d)] = acc / sum;
        }
      }
  return y;
}

TEST(AttentionSinks, ReferenceAndFastMatchTheDefinition) {
  const std::vector<SinkCase> cases = {
      {2, 4, 2, 7, 7, 8, {7, 4}},                // right-padded prompt, batch 2
      {1, 2, 1, 40, 40, 16, {33}, 5},            // a window from the clamped position
      {1, 4, 1, 1, 700, 8, {650}},               // one query over many keys: split keys at 4 threads
      {2, 8, 2, 1, 90, 8, {90, 41}},             // a ragged decode step
      {1, 2, 2, 3, 3, 8, {3}, -1, false},        // no sinks, clamping alone
  };
  std::mt19937 rng(7);
  for (const SinkCase& c : cases) {
    Tensor q = RandomNormalTensor(DType::kFloat, c.B * c.Hq * c.S * c.D, rng);
    Tensor k = RandomNormalTensor(DType::kFloat, c.B * c.Hkv * c.T * c.D, rng);
    Tensor v = RandomNormalTensor(DType::kFloat, c.B * c.Hkv * c.T * c.D, rng);
    std::vector<float> sinks(size_t(c.Hq));
    for (int64_t h = 0; h < c.Hq; ++h) sinks[size_t(h)] = float(h % 3) - 1.5f;
    std::vector<double> qd, kd, vd;
    for (int64_t e = 0; e < q.size(); ++e) qd.push_back(GetDouble(q, e));
    for (int64_t e = 0; e < k.size(); ++e) kd.push_back(GetDouble(k, e)), vd.push_back(GetDouble(v, e));
    const std::vector<double> want = Naive(c, qd, kd, vd, sinks);
    std::vector<int64_t> zeros(size_t(c.B), 0), valid = c.valid;
    AttentionProblem p;
    p.batch = c.B, p.q_heads = c.Hq, p.kv_heads = c.Hkv, p.q_len = c.S, p.kv_len = c.T, p.total_len = c.T;
    p.head_size = p.v_head_size = c.D, p.dtype = p.softmax_dtype = DType::kFloat;
    p.q = p.y = HeadView::Of4D(c.Hq, c.S, c.D), p.k = p.v = HeadView::Of4D(c.Hkv, c.T, c.D);
    p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw();
    p.scale = 1.0f / std::sqrt(float(c.D));
    p.causal = true, p.left_window = c.left, p.clamp_position = true;
    p.cache.past_lens = zeros.data(), p.cache.valid_lens = valid.data();
    if (c.S == 1) {  // a decode step: every key from the cache, each row its own length
      p.kv_len = 0, p.causal = false;
      p.cache.past_key = k.raw(), p.cache.past_value = v.raw(), p.cache.capacity = c.T;
      p.cache.past_lens = valid.data(), p.cache.valid_lens = nullptr;
    }
    if (c.sinks) p.sinks = sinks.data();
    Tensor y = Tensor::Zeros(DType::kFloat, {c.B * c.Hq * c.S * c.D});
    p.y_data = y.raw();
    {
      AttentionReference(p);
      for (size_t e = 0; e < want.size(); ++e) ASSERT_NEAR(GetDouble(y, int64_t(e)), want[e], 2e-6) << "reference " << e;
    }
    for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
      if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(target);
      for (int threads : {1, 4}) {
        std::fill(static_cast<float*>(y.raw()), static_cast<float*>(y.raw()) + y.size(), -1.f);
        AttentionFast(p, threads);
        for (size_t e = 0; e < want.size(); ++e)
          ASSERT_NEAR(GetDouble(y, int64_t(e)), want[e], 2e-5) << "fast " << int(target) << " element " << e;
      }
    }
  }
}

}  // namespace
}  // namespace onnx_mini
