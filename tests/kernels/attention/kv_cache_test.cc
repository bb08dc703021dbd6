// KvCacheView: ragged rows (each batch row its own past length, the new
// keys written at its own offset) and a shared past/present buffer, against
// each row run alone as a plain contiguous problem through the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/attention/attention.h"
#include "runtime/cpu.h"
#include "runtime/element.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

double Tolerance(DType d) {
  switch (d) {
    case DType::kDouble: return 1e-11;
    case DType::kFloat: return 2e-5;
    case DType::kFloat16: return 4e-3;
    default: return 3e-2;
  }
}

struct RaggedCase {
  int64_t Hq, Hkv, S, D, capacity;  // S: query and new-key length
  std::vector<int64_t> past;        // per row
  bool causal = true;
  int64_t left = -1;
  float softcap = 0;
};

void CheckRagged(const RaggedCase& c, DType dtype, bool shared, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t B = int64_t(c.past.size()), D = c.D, esz = Info(dtype).bits / 8;
  const int64_t row_elems = c.capacity * D;  // one (b, g) row of the cache
  Tensor q = RandomNormalTensor(dtype, B * c.Hq * c.S * D, rng), k = RandomNormalTensor(dtype, B * c.Hkv * c.S * D, rng);
  Tensor v = RandomNormalTensor(dtype, B * c.Hkv * c.S * D, rng);
  Tensor cache_k = RandomNormalTensor(dtype, B * c.Hkv * row_elems, rng), cache_v = RandomNormalTensor(dtype, B * c.Hkv * row_elems, rng);
  int64_t longest = 0;
  for (int64_t len : c.past) longest = std::max(longest, len + c.S);

  AttentionProblem p;
  p.batch = B, p.q_heads = c.Hq, p.kv_heads = c.Hkv, p.q_len = c.S, p.kv_len = c.S, p.total_len = longest;
  p.head_size = p.v_head_size = D, p.dtype = p.softmax_dtype = dtype;
  p.q = HeadView::Of4D(c.Hq, c.S, D), p.k = p.v = HeadView::Of4D(c.Hkv, c.S, D), p.y = HeadView::Of4D(c.Hq, c.S, D);
  p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw();
  p.scale = 1.0f / std::sqrt(float(D));
  p.causal = c.causal, p.left_window = c.left, p.softcap = c.softcap;

  // Each row alone: batch 1, its past copied out contiguously, present a
  // concatenation, through the reference.
  std::vector<Tensor> want_y, want_pk, want_pv;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t P = c.past[size_t(b)], T = P + c.S;
    Tensor pk = Tensor::Zeros(dtype, {c.Hkv * P * D}), pv = Tensor::Zeros(dtype, {c.Hkv * P * D});
    for (int64_t g = 0; g < c.Hkv && P > 0; ++g) {  // (an empty tensor has no memory to copy to)
      std::memcpy(static_cast<char*>(pk.raw()) + g * P * D * esz,
                  static_cast<const char*>(cache_k.raw()) + (b * c.Hkv + g) * row_elems * esz, size_t(P * D * esz));
      std::memcpy(static_cast<char*>(pv.raw()) + g * P * D * esz,
                  static_cast<const char*>(cache_v.raw()) + (b * c.Hkv + g) * row_elems * esz, size_t(P * D * esz));
    }
    AttentionProblem one = p;
    one.batch = 1, one.total_len = T;
    one.q_data = static_cast<const char*>(q.raw()) + b * p.q.stride_b * esz;
    one.k_data = static_cast<const char*>(k.raw()) + b * p.k.stride_b * esz;
    one.v_data = static_cast<const char*>(v.raw()) + b * p.v.stride_b * esz;
    one.cache = KvCacheView{};
    one.cache.past_key = pk.raw(), one.cache.past_value = pv.raw(), one.cache.past_len = one.cache.capacity = P;
    want_y.push_back(Tensor::Zeros(dtype, {c.Hq * c.S * D}));
    want_pk.push_back(Tensor::Zeros(dtype, {c.Hkv * T * D}));
    want_pv.push_back(Tensor::Zeros(dtype, {c.Hkv * T * D}));
    one.y_data = want_y.back().raw();
    one.cache.present_key = want_pk.back().raw(), one.cache.present_value = want_pv.back().raw();
    one.cache.present_capacity = T;
    WritePresent(one, 1);
    AttentionReference(one);
  }

  for (int run = 0; run < 5; ++run) {  // the reference, then the fast kernel at 1 to 4 threads
    const int threads = run;
    SCOPED_TRACE(std::string(LowerName(dtype)) + (shared ? " shared" : " separate") +
                 (run == 0 ? " reference" : " fast, threads " + std::to_string(threads)));
    Tensor buf_k = *cache_k.Clone(), buf_v = *cache_v.Clone();
    Tensor sep_k = Tensor::Zeros(dtype, {B * c.Hkv * row_elems}), sep_v = *sep_k.Clone();
    Tensor y = Tensor::Zeros(dtype, {B * c.Hq * c.S * D});
    AttentionProblem r = p;
    r.cache.past_key = buf_k.raw(), r.cache.past_value = buf_v.raw(), r.cache.capacity = c.capacity;
    r.cache.past_lens = c.past.data();
    r.cache.present_key = shared ? buf_k.raw() : sep_k.raw();
    r.cache.present_value = shared ? buf_v.raw() : sep_v.raw();
    r.cache.present_capacity = c.capacity;
    r.y_data = y.raw();
    if (run == 0) {
      WritePresent(r, 1);
      AttentionReference(r);
    } else {
      ASSERT_TRUE(UsesFastPath(r));
      AttentionFast(r, threads);
    }
    for (int64_t b = 0; b < B; ++b) {
      const int64_t P = c.past[size_t(b)], T = P + c.S;
      for (int64_t e = 0; e < c.Hq * c.S * D; ++e) {
        const double want = GetDouble(want_y[size_t(b)], e), got = GetDouble(y, b * c.Hq * c.S * D + e);
        if (run == 0) ASSERT_EQ(got, want) << "row " << b << " element " << e;  // the same arithmetic
        else ASSERT_NEAR(got, want, Tolerance(dtype) * (1 + std::fabs(want))) << "row " << b << " element " << e;
      }
      // The cache rows: [0, P) the past (untouched when shared), [P, T) the
      // new keys, the rest as before (shared) or never written (zero).
      const Tensor& out_k = shared ? buf_k : sep_k;
      const Tensor& out_v = shared ? buf_v : sep_v;
      for (int64_t g = 0; g < c.Hkv; ++g)
        for (int64_t j = 0; j < c.capacity; ++j)
          for (int64_t d = 0; d < D; ++d) {
            const int64_t at = ((b * c.Hkv + g) * c.capacity + j) * D + d;
            double want_k = shared ? GetDouble(cache_k, at) : 0.0, want_v = shared ? GetDouble(cache_v, at) : 0.0;
            if (j < T) {
              want_k = GetDouble(want_pk[size_t(b)], (g * T + j) * D + d);
              want_v = GetDouble(want_pv[size_t(b)], (g * T + j) * D + d);
            }
            ASSERT_EQ(GetDouble(out_k, at), want_k) << "present_key row " << b << " head " << g << " key " << j;
            ASSERT_EQ(GetDouble(out_v, at), want_v) << "present_value row " << b << " head " << g << " key " << j;
          }
    }
  }
}

TEST(KvCacheView, RaggedRowsMatchEachRowAlone) {
  const std::vector<RaggedCase> cases = {
      {8, 2, 1, 16, 40, {0, 17, 39}},                      // GQA decode: empty, middle and full rows
      {4, 2, 20, 8, 64, {3, 44, 0}},                       // several new keys: the tiled path
      {2, 1, 1, 8, 1300, {1000, 300}},                     // long rows, few tasks: split keys
      {4, 1, 3, 8, 50, {10, 40}, true, 4},                 // a left window per row's offset
      {2, 2, 2, 8, 30, {5, 20, 1}, false, -1, 2.0f},       // not causal, softcap
      {16, 4, 1, 64, 600, {512, 67, 0}},                   // a Qwen2-like decode step, ragged rows
  };
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
    for (const RaggedCase& c : cases)
      for (bool shared : {true, false}) CheckRagged(c, dtype, shared, seed++);
}

// A decode step with a separate present: each task copies its past as it
// reads it (on AVX-512, float, from the score tiles with streaming stores
// where present is 64-byte aligned, else block by block). Present buffers
// aligned and one float off give the same present and the same outputs, on
// every CPU target, with a window that leaves keys unread at the start.
TEST(KvCacheView, SeparatePresentIsCopiedWhateverItsAlignment) {
  const int64_t Hq = 8, Hkv = 2, D = 32, P = 150, T = P + 1;
  std::mt19937 rng(7);
  Tensor q = RandomNormalTensor(DType::kFloat, Hq * D, rng), k = RandomNormalTensor(DType::kFloat, Hkv * D, rng);
  Tensor v = RandomNormalTensor(DType::kFloat, Hkv * D, rng);
  Tensor pk = RandomNormalTensor(DType::kFloat, Hkv * P * D, rng);
  Tensor pv = RandomNormalTensor(DType::kFloat, Hkv * P * D, rng);
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);
    for (int64_t left : {int64_t{-1}, int64_t{40}}) {
      std::vector<float> ys[2];
      for (int offset = 0; offset < 2; ++offset) {
        SCOPED_TRACE(std::string(CpuTargetName(t)) + " offset " + std::to_string(offset) + " left " +
                     std::to_string(left));
        // 64-byte aligned storage, then `offset` floats in.
        Tensor store_k = Tensor::Zeros(DType::kFloat, {Hkv * T * D + 16}), store_v = *store_k.Clone();
        float* present_k = static_cast<float*>(store_k.raw()) + offset;
        float* present_v = static_cast<float*>(store_v.raw()) + offset;
        std::vector<float> y(size_t(Hq * D));
        AttentionProblem p;
        p.batch = 1, p.q_heads = Hq, p.kv_heads = Hkv, p.q_len = 1, p.kv_len = 1, p.total_len = T;
        p.head_size = p.v_head_size = D, p.dtype = p.softmax_dtype = DType::kFloat;
        p.q = HeadView::Of4D(Hq, 1, D), p.k = p.v = HeadView::Of4D(Hkv, 1, D), p.y = HeadView::Of4D(Hq, 1, D);
        p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw(), p.y_data = y.data();
        p.cache.past_key = pk.raw(), p.cache.past_value = pv.raw(), p.cache.past_len = p.cache.capacity = P;
        p.cache.present_key = present_k, p.cache.present_value = present_v, p.cache.present_capacity = T;
        p.scale = 0.2f, p.causal = true, p.left_window = left;
        AttentionFast(p, 1);
        for (int64_t g = 0; g < Hkv; ++g)
          for (int64_t j = 0; j < T; ++j)
            for (int64_t d = 0; d < D; ++d) {
              const int64_t at = (g * T + j) * D + d;
              const float* want_k = static_cast<const float*>(j < P ? pk.raw() : k.raw());
              const float* want_v = static_cast<const float*>(j < P ? pv.raw() : v.raw());
              const int64_t from = j < P ? (g * P + j) * D + d : g * D + d;
              ASSERT_EQ(present_k[at], want_k[from]) << "present_key head " << g << " key " << j;
              ASSERT_EQ(present_v[at], want_v[from]) << "present_value head " << g << " key " << j;
            }
        ys[offset] = y;
      }
      for (int64_t i = 0; i < Hq * D; ++i) ASSERT_EQ(ys[0][size_t(i)], ys[1][size_t(i)]) << i;
    }
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Y not asked for (an Attention node whose Y output is omitted: y_data null)
// with present asked for: a decode step (one task per kv head) still writes
// present, past rows and new ones, as every other shape of step does.
TEST(KvCacheView, PresentIsWrittenWithoutY) {
  const int64_t Hq = 4, Hkv = 2, D = 32, P = 70, T = P + 1;
  std::mt19937 rng(11);
  Tensor q = RandomNormalTensor(DType::kFloat, Hq * D, rng), k = RandomNormalTensor(DType::kFloat, Hkv * D, rng);
  Tensor v = RandomNormalTensor(DType::kFloat, Hkv * D, rng);
  Tensor pk = RandomNormalTensor(DType::kFloat, Hkv * P * D, rng);
  Tensor pv = RandomNormalTensor(DType::kFloat, Hkv * P * D, rng);
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    std::vector<float> present_k(size_t(Hkv * T * D), -7.0f), present_v(present_k);
    AttentionProblem p;
    p.batch = 1, p.q_heads = Hq, p.kv_heads = Hkv, p.q_len = 1, p.kv_len = 1, p.total_len = T;
    p.head_size = p.v_head_size = D, p.dtype = p.softmax_dtype = DType::kFloat;
    p.q = HeadView::Of4D(Hq, 1, D), p.k = p.v = HeadView::Of4D(Hkv, 1, D), p.y = HeadView::Of4D(Hq, 1, D);
    p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw(), p.y_data = nullptr;
    p.cache.past_key = pk.raw(), p.cache.past_value = pv.raw(), p.cache.past_len = p.cache.capacity = P;
    p.cache.present_key = present_k.data(), p.cache.present_value = present_v.data(), p.cache.present_capacity = T;
    p.scale = 0.2f, p.causal = true;
    ASSERT_TRUE(UsesFastPath(p));
    AttentionFast(p, threads);
    for (int64_t g = 0; g < Hkv; ++g)
      for (int64_t j = 0; j < T; ++j)
        for (int64_t d = 0; d < D; ++d) {
          const int64_t at = (g * T + j) * D + d;
          const int64_t from = j < P ? (g * P + j) * D + d : g * D + d;
          ASSERT_EQ(present_k[size_t(at)], static_cast<const float*>(j < P ? pk.raw() : k.raw())[from])
              << "present_key head " << g << " key " << j;
          ASSERT_EQ(present_v[size_t(at)], static_cast<const float*>(j < P ? pv.raw() : v.raw())[from])
              << "present_value head " << g << " key " << j;
        }
  }
}

}  // namespace
}  // namespace onnx_mini
