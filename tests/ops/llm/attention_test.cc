// Attention: the fast kernel against the reference kernel across dtypes,
// shapes, attributes and masks; opset 25 windows and the rules through the
// op, with expected values computed here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/attention/attention.h"
#include "ops/common.h"
#include "runtime/cpu.h"
#include "runtime/element.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Fast kernel vs reference kernel ----

struct Case {
  int64_t B, Hq, Hkv, Sq, Skv, P, D, Dv;
  bool three_d = false;
  bool causal = false;
  float softcap = 0;
  float scale = 0;  // 0: default
  int64_t left = -1, right = -1;
  int mask_rank = 0;  // 0: none
  bool bool_mask = false;
  int64_t mask_len = -1;  // -1: T
  bool nonpad = false;
  // The mask (rank >= 2) is -inf above the diagonal j = i + T - Sq - 1, as a
  // causal mask built by an exporter (with T = Sq, row 0 sees nothing).
  bool causal_mask = false;
};

Tensor Random(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::Zeros(dtype, shape);
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, normal(rng));
  return t;
}

double Tolerance(DType d) {
  switch (d) {
    case DType::kDouble: return 1e-11;
    case DType::kFloat: return 2e-5;
    case DType::kFloat16: return 4e-3;
    default: return 3e-2;
  }
}

void CompareFastAndReference(const Case& c, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  AttentionProblem p;
  p.batch = c.B, p.q_heads = c.Hq, p.kv_heads = c.Hkv, p.q_len = c.Sq, p.kv_len = c.Skv;
  p.cache.past_len = p.cache.capacity = c.P, p.total_len = c.P + c.Skv, p.head_size = c.D, p.v_head_size = c.Dv, p.dtype = dtype;
  p.softmax_dtype = dtype;
  auto view = [&](int64_t h, int64_t s, int64_t d) { return c.three_d ? HeadView::Of3D(h, s, d) : HeadView::Of4D(h, s, d); };
  p.q = view(c.Hq, c.Sq, c.D), p.k = view(c.Hkv, c.Skv, c.D), p.v = view(c.Hkv, c.Skv, c.Dv), p.y = view(c.Hq, c.Sq, c.Dv);
  Tensor q = Random(dtype, {c.B * c.Hq * c.Sq * c.D}, rng), k = Random(dtype, {c.B * c.Hkv * c.Skv * c.D}, rng);
  Tensor v = Random(dtype, {c.B * c.Hkv * c.Skv * c.Dv}, rng);
  Tensor pk = Random(dtype, {c.B * c.Hkv * c.P * c.D}, rng), pv = Random(dtype, {c.B * c.Hkv * c.P * c.Dv}, rng);
  p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw();
  if (c.P > 0) p.cache.past_key = pk.raw(), p.cache.past_value = pv.raw();
  p.scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(float(c.D));
  p.causal = c.causal, p.softcap = c.softcap, p.left_window = c.left, p.right_window = c.right;
  std::vector<int64_t> nonpad;
  if (c.nonpad) {
    for (int64_t b = 0; b < c.B; ++b) nonpad.push_back(int64_t(rng() % uint32_t(p.total_len + 1)));
    nonpad[0] = 0;  // nothing valid: every row of batch 0 is fully masked
    p.cache.valid_lens = nonpad.data();
  }
  std::vector<double> mask;
  if (c.mask_rank > 0) {
    const int64_t tm = c.mask_len < 0 ? p.total_len : c.mask_len;
    const int64_t full[4] = {c.B, c.Hq, c.Sq, tm};
    int64_t size = 1, stride = 1;
    for (int d = 3; d >= 4 - c.mask_rank; --d) size *= full[d];
    for (int d = 3; d >= 0; --d) {
      const bool present = d >= 4 - c.mask_rank;
      const bool broadcast = !present || (d < 3 && rng() % 3 == 0);  // some dims broadcast
      p.mask_stride[d] = broadcast ? 0 : stride;
      if (present) stride *= full[d];
    }
    std::uniform_real_distribution<double> uniform(-2, 2);
    for (int64_t i = 0; i < size; ++i) {
      const int64_t row = i / tm % c.Sq, key = i % tm;
      if (c.causal_mask && key > row + p.total_len - c.Sq - 1) mask.push_back(-kInf);
      else if (c.causal_mask && c.bool_mask) mask.push_back(0.0);
      else mask.push_back(c.bool_mask ? (rng() % 4 == 0 ? -kInf : 0.0) : uniform(rng));
    }
    p.mask = mask.data();
    p.mask_len = tm;
  }
  const int64_t y_size = c.B * c.Hq * c.Sq * c.Dv;
  Tensor y_ref = Tensor::Zeros(dtype, {y_size}), y_fast = Tensor::Zeros(dtype, {y_size});
  p.y_data = y_ref.raw();
  AttentionReference(p);
  ASSERT_TRUE(UsesFastPath(p));
  // present_key/present_value: the fast kernel writes them too (per task in
  // a decode step), equal to WritePresent's.
  const int64_t present_k = c.B * c.Hkv * (c.P + c.Skv) * c.D, present_v = c.B * c.Hkv * (c.P + c.Skv) * c.Dv;
  Tensor want_pk = Tensor::Zeros(dtype, {present_k}), want_pv = Tensor::Zeros(dtype, {present_v});
  p.cache.present_capacity = p.total_len;
  p.cache.present_key = want_pk.raw(), p.cache.present_value = want_pv.raw();
  WritePresent(p, 1);
  Tensor got_pk = Tensor::Zeros(dtype, {present_k}), got_pv = Tensor::Zeros(dtype, {present_v});
  p.cache.present_key = got_pk.raw(), p.cache.present_value = got_pv.raw();
  p.y_data = y_fast.raw();
  for (int threads : {1, 2, 3, 4}) {  // more threads than tasks: split keys
    std::memset(got_pk.raw(), 0, got_pk.bytes());
    std::memset(got_pv.raw(), 0, got_pv.bytes());
    AttentionFast(p, threads);
    ASSERT_EQ(std::memcmp(got_pk.raw(), want_pk.raw(), got_pk.bytes()), 0) << "present_key, " << threads << " threads";
    ASSERT_EQ(std::memcmp(got_pv.raw(), want_pv.raw(), got_pv.bytes()), 0) << "present_value, " << threads << " threads";
    for (int64_t i = 0; i < y_size; ++i) {
      const double want = GetDouble(y_ref, i), got = GetDouble(y_fast, i);
      ASSERT_FALSE(std::isnan(got)) << i;
      ASSERT_NEAR(got, want, Tolerance(dtype) * (1 + std::fabs(want)))
          << LowerName(dtype) << " element " << i << " seed " << seed;
    }
  }
}

TEST(AttentionKernels, FastMatchesReference) {
  const std::vector<Case> cases = {
      {2, 3, 3, 4, 6, 0, 8, 8},                              // MHA
      {1, 8, 2, 1, 200, 0, 16, 16},                          // GQA decode, several key blocks
      {2, 4, 1, 17, 19, 0, 8, 5, true},                      // MQA, 3-D, odd sizes, Dv != D
      {2, 6, 3, 5, 3, 70, 8, 8, false, true},                // causal with past (offset P)
      {1, 2, 2, 40, 130, 0, 4, 4, false, true, 2.0f},        // causal prefill, softcap, query blocks
      {2, 2, 1, 6, 9, 0, 8, 8, false, false, 0, 0.01f, -1, -1, 2},        // scaled, rank-2 float mask
      {2, 4, 2, 3, 8, 0, 4, 6, false, true, 0, 0, -1, -1, 4, true},       // bool mask + causal
      {3, 2, 2, 4, 10, 0, 4, 4, false, true, 0, 0, -1, -1, 0, false, -1, true},  // nonpad + causal
      {2, 2, 2, 4, 10, 0, 4, 4, false, false, 0, 0, -1, -1, 3, false, 7, true},  // nonpad + short mask
      {1, 2, 1, 7, 7, 0, 4, 4, false, true, 0, 0, 2, -1},    // left window with causal
      {2, 2, 2, 5, 12, 4, 4, 4, false, false, 0, 0, 1, 2},   // bidirectional window with past
      {1, 1, 1, 6, 6, 0, 4, 4, false, false, 0, 0, 0, 0},    // window 0: the diagonal only
      {2, 3, 3, 3, 9, 0, 4, 4, false, false, 1.0f, 0, 1, 1, 1, false, -1, true},  // everything
      // Split-KV decode (one task, many keys, odd lengths): past + new,
      // masks, softcap, windows, nonpad, a query block of several rows.
      {1, 4, 1, 1, 3, 1000, 16, 8},
      {1, 2, 1, 1, 777, 0, 8, 8, false, false, 2.0f, 0, -1, -1, 4, true},
      {1, 3, 1, 2, 520, 300, 8, 8, false, true, 0, 0, 100, -1},
      {1, 2, 1, 1, 900, 0, 4, 4, false, false, 0, 0, -1, -1, 2, false, -1, true},
      {1, 2, 1, 1, 600, 0, 4, 4, false, false, 0, 0, -1, -1, 4, false, 300},
      // Causal masks given as tensors (their -inf ends are trimmed, 0/-inf
      // rows run as unmasked ones): prefill (tiled) and decode, bool and
      // float, per head or shared by the heads.
      {1, 8, 2, 40, 40, 0, 16, 16, false, false, 0, 0, -1, -1, 2, true, -1, false, true},
      {2, 4, 2, 33, 33, 0, 8, 8, false, false, 0, 0, -1, -1, 4, true, -1, false, true},
      {1, 4, 2, 20, 20, 0, 8, 8, false, false, 0, 0, -1, -1, 4, false, -1, false, true},
      {1, 8, 2, 1, 300, 0, 16, 16, false, false, 0, 0, -1, -1, 4, true, -1, false, true},
      {1, 2, 2, 5, 9, 0, 4, 4, false, false, 2.0f, 0, -1, -1, 2, true, -1, false, true},  // softcap
  };
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
    for (const Case& c : cases) CompareFastAndReference(c, dtype, seed++);
}

// Each CPU target's build of the fast kernel (baseline, AVX2, AVX-512,
// AVX-512 BF16 for bfloat16, as far as this CPU goes) against the reference: head sizes that fill the vectors,
// the tiled (prefill) and dot-product (decode) paths, odd sizes and a mask.
TEST(AttentionKernels, EveryCpuTargetMatchesReference) {
  const std::vector<Case> cases = {
      {1, 8, 2, 1, 200, 0, 64, 64},                                   // GQA decode
      {1, 4, 2, 40, 130, 0, 64, 64, false, true},                     // causal prefill, tiled
      {2, 2, 1, 6, 9, 0, 20, 12, false, false, 0, 0.01f, -1, -1, 2},  // odd sizes, float mask
      {1, 4, 2, 40, 70, 0, 13, 7, false, true},                       // tiled, odd head size (bf16 pairs)
      // Decode steps through the four-key score tiles (float, D a multiple
      // of 16 on AVX-512): past + 1 new key (513, a last block of one key),
      // groups of 2 (rows padded to 4) and 8 (two row tiles), D 48, key tails
      // of 2 and 3, a 3-D layout and a bool mask.
      {1, 16, 4, 1, 1, 512, 64, 64},
      {2, 4, 2, 1, 66, 0, 48, 48, true},
      {1, 8, 1, 1, 131, 0, 32, 16, false, false, 0, 0, -1, -1, 4, true},
      // The decode sweep (float, AVX-512, no mask): 7 rows (two row tiles,
      // one short), Dv 80 (a pass of four vectors and one of one), a tail of
      // 13 keys; a left window (keys from 200: the past before it copied
      // apart) over two heads per thread.
      {1, 7, 1, 1, 1, 300, 16, 80},
      {2, 8, 2, 1, 1, 300, 32, 32, false, true, 0, 0, 100, -1},
  };
  uint32_t seed = 100;
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);
    SCOPED_TRACE(CpuTargetName(t));
    for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
      for (const Case& c : cases) CompareFastAndReference(c, dtype, seed++);
  }
}

// NaN scores: a NaN score at a visible key makes the whole row NaN, as
// Softmax does (a NaN query row too, where every score is NaN); keys hidden
// by the mask or the causal rule take no part even with NaN keys and values.
// Both kernels agree on every target, on the tiled and the dot-product paths.
// (The fast kernel's exp used to convert NaN to int: undefined behaviour.)
TEST(AttentionKernels, NanScoresAgree) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (CpuTarget t : kCpuTargets)
    for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16})
      for (int64_t sq : {20, 1}) {  // 20: one tiled and one dot-product query block
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        SCOPED_TRACE(std::string(CpuTargetName(t)) + " " + LowerName(dtype) + " Sq " + std::to_string(sq));
        std::mt19937 rng(7);
        const int64_t Hq = 2, P = 50, Skv = 20, T = P + Skv, D = 8;
        AttentionProblem p;
        p.batch = 1, p.q_heads = Hq, p.kv_heads = 1, p.q_len = sq, p.kv_len = Skv, p.cache.past_len = p.cache.capacity = P, p.total_len = T;
        p.head_size = D, p.v_head_size = D, p.dtype = dtype, p.softmax_dtype = dtype;
        p.q = HeadView::Of4D(Hq, sq, D), p.k = HeadView::Of4D(1, Skv, D), p.v = p.k, p.y = HeadView::Of4D(Hq, sq, D);
        Tensor q = Random(dtype, {Hq * sq * D}, rng), k = Random(dtype, {Skv * D}, rng), v = Random(dtype, {Skv * D}, rng);
        Tensor pk = Random(dtype, {P * D}, rng), pv = Random(dtype, {P * D}, rng);
        const int64_t nan_row = std::min<int64_t>(3, sq - 1);
        SetDouble(q, (1 * sq + nan_row) * D + 2, nan);  // head 1: every score of this row is NaN
        SetDouble(k, 5 * D, nan);                        // key 55: NaN score for rows i >= 5 (causal)
        for (int64_t d = 0; d < D; ++d) SetDouble(pk, 10 * D + d, nan), SetDouble(pv, 10 * D + d, nan);  // key 10, masked
        std::vector<double> mask(size_t(T), 0.0);
        mask[10] = -kInf;
        p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw(), p.cache.past_key = pk.raw(), p.cache.past_value = pv.raw();
        p.scale = 1.0f / std::sqrt(float(D));
        p.causal = true;
        p.mask = mask.data(), p.mask_stride[3] = 1, p.mask_len = T;
        Tensor y_ref = Tensor::Zeros(dtype, {Hq * sq * D}), y_fast = *y_ref.Clone();
        p.y_data = y_ref.raw();
        AttentionReference(p);
        ASSERT_TRUE(UsesFastPath(p));
        p.y_data = y_fast.raw();
        AttentionFast(p, 2);
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t i = 0; i < sq; ++i)
            for (int64_t d = 0; d < D; ++d) {
              const int64_t e = (h * sq + i) * D + d;
              const double want = GetDouble(y_ref, e), got = GetDouble(y_fast, e);
              const bool nan_expected = (h == 1 && i == nan_row) || i >= 5;
              EXPECT_EQ(std::isnan(want), nan_expected) << "reference h " << h << " i " << i;
              EXPECT_EQ(std::isnan(got), nan_expected) << "fast h " << h << " i " << i;
              if (!nan_expected) {
                EXPECT_NEAR(got, want, Tolerance(dtype) * (1 + std::fabs(want)));
              }
            }
      }
}

// The decode sweep's NaN rules (float, D a multiple of 16, no mask): a NaN
// key makes every row NaN, a NaN query row only its own; the other rows of
// a second group agree with the reference.
TEST(AttentionKernels, DecodeSweepNanScores) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);
    SCOPED_TRACE(CpuTargetName(t));
    std::mt19937 rng(11);
    const int64_t Hq = 8, Hkv = 2, P = 100, T = P + 1, D = 16;
    AttentionProblem p;
    p.batch = 1, p.q_heads = Hq, p.kv_heads = Hkv, p.q_len = 1, p.kv_len = 1, p.cache.past_len = p.cache.capacity = P;
    p.total_len = T, p.head_size = p.v_head_size = D;
    p.q = HeadView::Of4D(Hq, 1, D), p.k = HeadView::Of4D(Hkv, 1, D), p.v = p.k, p.y = p.q;
    Tensor q = Random(DType::kFloat, {Hq * D}, rng), k = Random(DType::kFloat, {Hkv * D}, rng), v = *k.Clone();
    Tensor pk = Random(DType::kFloat, {Hkv * P * D}, rng), pv = Random(DType::kFloat, {Hkv * P * D}, rng);
    SetDouble(pk, 37 * D + 3, nan);  // kv head 0, key 37: NaN scores for heads 0-3
    SetDouble(q, 6 * D + 1, nan);    // head 6 (kv head 1): every score NaN
    p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw(), p.cache.past_key = pk.raw(), p.cache.past_value = pv.raw();
    p.scale = 0.25f;
    Tensor y_ref = Tensor::Zeros(DType::kFloat, {Hq * D}), y_fast = *y_ref.Clone();
    p.y_data = y_ref.raw();
    AttentionReference(p);
    p.y_data = y_fast.raw();
    AttentionFast(p, 1);
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t d = 0; d < D; ++d) {
        const double want = GetDouble(y_ref, h * D + d), got = GetDouble(y_fast, h * D + d);
        const bool nan_expected = h < 4 || h == 6;
        EXPECT_EQ(std::isnan(want), nan_expected) << "reference h " << h;
        EXPECT_EQ(std::isnan(got), nan_expected) << "fast h " << h;
        if (!nan_expected) {
          EXPECT_NEAR(got, want, 1e-5 * (1 + std::fabs(want))) << "h " << h;
        }
      }
  }
}

// The decode sweep (float, no mask or one of zeros, every row seeing the
// same keys; on AVX-512 and AVX2) against the reference on every target: 1-5
// rows per kv head (padded to 4 or two row tiles), D 64 and 128 (Dv 72 too: a tail pass
// on AVX2, the block path on AVX-512), 101 keys (a short last chunk) and 48,
// with the past copied to a separate present (its rows aligned: streaming
// stores; unaligned: copied first), shared with it, or not written. Keys
// 0-31 and 48-63 of kv head 0 score -inf for all its rows (chunks of 16 with
// nothing to add, before m is finite and after); a NaN in kv head 1's key 40
// makes that head's rows NaN. With a mask of zeros but for -inf at both
// ends, keys 0-40 and the last 3 (a padding mask, as exporters pass it), the
// rows are trimmed and direct, the sweep too: key 40 masked, kv head 1's rows
// are finite, and the past before and after the visible keys still goes to
// a separate present.
TEST(AttentionKernels, DecodeSweepMatchesReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  enum class Present { kNone, kShared, kAligned, kUnaligned };
  const auto aligned = [](std::vector<float>& buffer, size_t n, bool align) {
    buffer.assign(n + 32, 0.0f);
    float* at = buffer.data();
    while (reinterpret_cast<uintptr_t>(at) % 64 != 0) ++at;
    return align ? at : at + 1;  // 4 bytes past a 64-byte boundary
  };
  uint32_t seed = 500;
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(t);
    for (int64_t group = 1; group <= 5; ++group)
      for (const auto& [D, Dv] : {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {64, 72}})
        for (int64_t P : {100, 47})
          for (Present present : {Present::kNone, Present::kShared, Present::kAligned, Present::kUnaligned})
          for (bool masked : {false, true}) {
            SCOPED_TRACE(std::string(CpuTargetName(t)) + " group " + std::to_string(group) + " D " +
                         std::to_string(D) + " Dv " + std::to_string(Dv) + " past " + std::to_string(P) +
                         " present " + std::to_string(int(present)) + (masked ? " masked" : ""));
            std::mt19937 rng(seed++);
            const int64_t Hkv = 2, Hq = group * Hkv, T = P + 1, C = P + 8;  // C: the past's capacity
            AttentionProblem p;
            p.batch = 1, p.q_heads = Hq, p.kv_heads = Hkv, p.q_len = 1, p.kv_len = 1;
            p.cache.past_len = P, p.cache.capacity = C, p.total_len = T, p.head_size = D, p.v_head_size = Dv;
            p.q = HeadView::Of4D(Hq, 1, D), p.k = HeadView::Of4D(Hkv, 1, D), p.v = HeadView::Of4D(Hkv, 1, Dv);
            p.y = HeadView::Of4D(Hq, 1, Dv);
            Tensor q = Random(DType::kFloat, {Hq * D}, rng), k = Random(DType::kFloat, {Hkv * D}, rng);
            Tensor v = Random(DType::kFloat, {Hkv * Dv}, rng);
            Tensor pk = Random(DType::kFloat, {Hkv * C * D}, rng), pv = Random(DType::kFloat, {Hkv * C * Dv}, rng);
            float* qf = q.data<float>();
            float* pkf = pk.data<float>();
            for (int64_t i = 0; i < group * D; ++i) qf[i] = std::fabs(qf[i]) + 0.1f;  // kv head 0's rows
            for (int64_t j = 0; j < std::min<int64_t>(P, 64); ++j)
              for (int64_t d = 0; d < D && (j < 32 || j >= 48); ++d) pkf[j * D + d] = -3e38f;  // their scores -inf
            pkf[(C + 40) * D + 5] = nan;
            p.q_data = q.raw(), p.k_data = k.raw(), p.v_data = v.raw();
            p.cache.past_key = pk.raw(), p.cache.past_value = pv.raw();
            p.scale = 1.0f / std::sqrt(float(D));
            std::vector<double> mask(size_t(T), 0.0);
            if (masked) {
              for (int64_t j = 0; j < T; ++j)
                if (j <= 40 || j >= T - 3) mask[size_t(j)] = -kInf;
              p.mask = mask.data(), p.mask_stride[3] = 1, p.mask_len = T;
            }
            Tensor y_ref = Tensor::Zeros(DType::kFloat, {Hq * Dv}), y_fast = *y_ref.Clone();
            p.y_data = y_ref.raw();
            AttentionReference(p);
            ASSERT_TRUE(UsesFastPath(p));
            // What a separate present holds (WritePresent's), and the buffers the fast kernel writes.
            std::vector<float> want_k, want_v, got_k, got_v;
            float* want_pk = nullptr;
            float* want_pv = nullptr;
            if (present == Present::kAligned || present == Present::kUnaligned) {
              const bool align = present == Present::kAligned;
              p.cache.present_capacity = T;
              want_pk = aligned(want_k, size_t(Hkv * T * D), align);
              want_pv = aligned(want_v, size_t(Hkv * T * Dv), align);
              p.cache.present_key = want_pk, p.cache.present_value = want_pv;
              WritePresent(p, 1);
              p.cache.present_key = aligned(got_k, size_t(Hkv * T * D), align);
              p.cache.present_value = aligned(got_v, size_t(Hkv * T * Dv), align);
            } else if (present == Present::kShared) {
              p.cache.present_capacity = C;
              p.cache.present_key = pk.raw(), p.cache.present_value = pv.raw();
            }
            p.y_data = y_fast.raw();
            for (int threads : {1, 2, 4}) {  // 4: the keys split
              AttentionFast(p, threads);
              if (present == Present::kAligned || present == Present::kUnaligned) {
                ASSERT_EQ(std::memcmp(want_pk, p.cache.present_key, size_t(Hkv * T * D) * 4), 0) << threads << " threads";
                ASSERT_EQ(std::memcmp(want_pv, p.cache.present_value, size_t(Hkv * T * Dv) * 4), 0) << threads << " threads";
              }
              for (int64_t i = 0; i < Hq * Dv; ++i) {
                const double want = GetDouble(y_ref, i), got = GetDouble(y_fast, i);
                ASSERT_EQ(std::isnan(want), !masked && i >= group * Dv) << i;  // kv head 1's rows: NaN
                ASSERT_EQ(std::isnan(got), std::isnan(want)) << i << ", " << threads << " threads";
                if (!std::isnan(want)) {
                  ASSERT_NEAR(got, want, 2e-5 * (1 + std::fabs(want))) << i << ", " << threads << " threads";
                }
              }
            }
          }
  }
}

// ---- Through the op ----

// Attention through a session, with named inputs and outputs for readability
// (built on the shared OpTester).
struct OpCall {
  OpTester tester;
  explicit OpCall(int64_t opset) {
    tester.op = "Attention";
    tester.opset = opset;
  }
  OpCall& In(const std::string& name, const Tensor& t) {
    tester.inputs.push_back(name.empty() ? Tensor() : t);
    return *this;
  }
  OpCall& Absent() {
    tester.inputs.push_back(Tensor());
    return *this;
  }
  absl::StatusOr<std::vector<Tensor>> Go(const std::vector<std::string>& outputs,
                                         const std::function<void(onnx::NodeProto&)>& attrs = {}) {
    tester.output_names = outputs;
    tester.attrs = attrs;
    return tester.Run();
  }
};

Tensor Zeros(const Shape& shape) { return Tensor::Zeros(DType::kFloat, shape); }
Tensor Iota(const Shape& shape) {
  Tensor t = Zeros(shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = float(i);
  return t;
}

std::vector<float> FloatValues(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.size()); }

TEST(Attention25, BidirectionalWindow) {
  // Uniform scores (Q = K = 0), V = key index: each row averages the keys
  // its window sees: L = 1 back, R = 2 ahead.
  absl::StatusOr<std::vector<Tensor>> out =
      OpCall(25).In("Q", Zeros({1, 1, 5, 4})).In("K", Zeros({1, 1, 5, 4})).In("V", Iota({1, 1, 5, 1}))
          .Go({"Y"}, [](onnx::NodeProto& n) {
            SetAttr(n, "left_window_size", int64_t(1));
            SetAttr(n, "right_window_size", int64_t(2));
          });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(FloatValues((*out)[0]), ::testing::Pointwise(::testing::FloatEq(), {1.0f, 1.5f, 2.5f, 3.0f, 3.5f}));
}

TEST(Attention25, WindowOffsetsFollowPastAndNonpad) {
  // With past P = 3 the window centre of row i is i + 3; causal, L = 1.
  absl::StatusOr<std::vector<Tensor>> past =
      OpCall(25).In("Q", Zeros({1, 1, 2, 2})).In("K", Zeros({1, 1, 2, 2})).In("V", Iota({1, 1, 2, 1})).Absent()
          .In("pk", Zeros({1, 1, 3, 2})).In("pv", Iota({1, 1, 3, 1}))
          .Go({"Y", "pk_out", "pv_out"}, [](onnx::NodeProto& n) {
            SetAttr(n, "is_causal", int64_t(1));
            SetAttr(n, "left_window_size", int64_t(1));
          });
  ASSERT_TRUE(past.ok()) << past.status();
  // V' = [0,1,2, 0,1]; row 0 sees keys 2..3 -> (2+0)/2; row 1 sees 3..4 -> (0+1)/2.
  EXPECT_THAT(FloatValues((*past)[0]), ::testing::Pointwise(::testing::FloatEq(), {1.0f, 0.5f}));
  EXPECT_EQ((*past)[2].shape(), Shape({1, 1, 5, 1}));
  // External cache: n = 4, Sq = 2 puts the rows at 2 and 3, even without is_causal.
  Tensor n = Tensor::FromVector<int64_t>({4}, {1});
  absl::StatusOr<std::vector<Tensor>> ext =
      OpCall(25).In("Q", Zeros({1, 1, 2, 2})).In("K", Zeros({1, 1, 6, 2})).In("V", Iota({1, 1, 6, 1}))
          .Absent().Absent().Absent().In("n", n)
          .Go({"Y"}, [](onnx::NodeProto& node) {
            SetAttr(node, "left_window_size", int64_t(0));
            SetAttr(node, "right_window_size", int64_t(5));
          });
  ASSERT_TRUE(ext.ok()) << ext.status();
  // row 0 (pos 2) sees 2..3 (nonpad stops at 4): 2.5; row 1 (pos 3) sees 3: 3.
  EXPECT_THAT(FloatValues((*ext)[0]), ::testing::Pointwise(::testing::FloatEq(), {2.5f, 3.0f}));
}

TEST(Attention25, DefaultWindowsEqualOpset24) {
  std::mt19937 rng(4);
  Tensor q = Random(DType::kFloat, {2, 4, 3, 8}, rng), k = Random(DType::kFloat, {2, 2, 5, 8}, rng);
  Tensor v = Random(DType::kFloat, {2, 2, 5, 8}, rng);
  auto causal = [](onnx::NodeProto& n) { SetAttr(n, "is_causal", int64_t(1)); };
  absl::StatusOr<std::vector<Tensor>> a = OpCall(24).In("Q", q).In("K", k).In("V", v).Go({"Y"}, causal);
  absl::StatusOr<std::vector<Tensor>> b = OpCall(25).In("Q", q).In("K", k).In("V", v).Go({"Y"}, [&](onnx::NodeProto& n) {
    causal(n);
    SetAttr(n, "left_window_size", int64_t(-1));
    SetAttr(n, "right_window_size", int64_t(-1));
  });
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(FloatValues((*a)[0]), FloatValues((*b)[0]));
}

TEST(Attention, QkOutputModesFollowThePipeline) {
  // One head, D = 1: QK is q*k*scale, so every mode can be computed by hand.
  Tensor q = Tensor::FromVector<float>({1, 2}, {1, 1, 2, 1});
  Tensor k = Tensor::FromVector<float>({1, -1, 3}, {1, 1, 3, 1});
  Tensor v = Tensor::FromVector<float>({10, 20, 30}, {1, 1, 3, 1});
  Tensor mask = Tensor::FromVector<float>({0, -1, 0.5f, 0, -INFINITY, 0}, {2, 3});
  const float c = 2.0f;
  for (int mode = 0; mode < 4; ++mode) {
    absl::StatusOr<std::vector<Tensor>> out =
        OpCall(23).In("Q", q).In("K", k).In("V", v).In("M", mask).Go({"Y", "", "", "QK"}, [&](onnx::NodeProto& n) {
          SetAttr(n, "softcap", c);
          SetAttr(n, "qk_matmul_output_mode", int64_t(mode));
        });
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> qk = FloatValues((*out)[1]);
    for (int i = 0; i < 2; ++i) {
      double z[3], sum = 0;
      for (int j = 0; j < 3; ++j) {
        const double raw = double(q.data<float>()[i]) * k.data<float>()[j];  // scale 1/sqrt(1) = 1
        const double capped = c * std::tanh(raw / c);
        z[j] = capped + mask.data<float>()[i * 3 + j];
        const double want = mode == 0 ? raw : mode == 1 ? capped : z[j];
        if (mode < 3 && std::isinf(want)) {
          EXPECT_EQ(qk[size_t(i * 3 + j)], want) << mode << " " << i << j;
        } else if (mode < 3) {
          EXPECT_NEAR(qk[size_t(i * 3 + j)], want, 1e-5) << mode << " " << i << j;
        }
      }
      const double m = std::max({z[0], z[1], z[2]});
      for (double x : z) sum += std::exp(x - m);
      double y = 0;
      for (int j = 0; j < 3; ++j) {
        const double prob = std::exp(z[j] - m) / sum;
        y += prob * v.data<float>()[j];
        if (mode == 3) {
          EXPECT_NEAR(qk[size_t(i * 3 + j)], prob, 1e-6);
        }
      }
      EXPECT_NEAR((*out)[0].data<float>()[i], y, 1e-4);
    }
  }
}

TEST(Attention, NumericMasksOfEveryTypeAreAddedAsValues) {
  std::mt19937 rng(6);
  Tensor q = Random(DType::kFloat, {1, 2, 3, 4}, rng), k = Random(DType::kFloat, {1, 2, 5, 4}, rng);
  Tensor v = Random(DType::kFloat, {1, 2, 5, 4}, rng);
  const std::vector<double> values = {0, -3, 2, 0, -1, 1, 0, 0, -2, 3, 1, 0, 0, -1, 2};
  auto run = [&](DType mask_type) {
    Tensor mask = Tensor::Zeros(mask_type, {3, 5});
    for (int64_t i = 0; i < mask.size(); ++i) SetDouble(mask, i, values[size_t(i)]);
    return OpCall(24).In("Q", q).In("K", k).In("V", v).In("M", mask).Go({"Y"});
  };
  absl::StatusOr<std::vector<Tensor>> want = run(DType::kFloat);
  ASSERT_TRUE(want.ok()) << want.status();
  for (DType t : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kDouble, DType::kFloat16,
                  DType::kBFloat16}) {
    absl::StatusOr<std::vector<Tensor>> got = run(t);
    ASSERT_TRUE(got.ok()) << LowerName(t) << ": " << got.status();
    EXPECT_EQ(FloatValues((*got)[0]), FloatValues((*want)[0])) << LowerName(t);
  }
  // Unsigned masks hold only the non-negative values; compare against float again.
  for (DType t : {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    Tensor mask = Tensor::Zeros(t, {3, 5}), fmask = Tensor::Zeros(DType::kFloat, {3, 5});
    for (int64_t i = 0; i < mask.size(); ++i) {
      SetDouble(mask, i, std::fabs(values[size_t(i)]));
      SetDouble(fmask, i, std::fabs(values[size_t(i)]));
    }
    absl::StatusOr<std::vector<Tensor>> a = OpCall(24).In("Q", q).In("K", k).In("V", v).In("M", mask).Go({"Y"});
    absl::StatusOr<std::vector<Tensor>> b = OpCall(24).In("Q", q).In("K", k).In("V", v).In("M", fmask).Go({"Y"});
    ASSERT_TRUE(a.ok() && b.ok()) << LowerName(t);
    EXPECT_EQ(FloatValues((*a)[0]), FloatValues((*b)[0])) << LowerName(t);
  }
}

TEST(Attention, FullyMaskedRowsAreZeroNeverNan) {
  Tensor q = Tensor::FromVector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor kv = Tensor::FromVector<float>({1, 1, 2, 2}, {1, 1, 2, 2});
  Tensor mask = Tensor::FromVector<bool>({true, false, false, false}, {2, 2});
  absl::StatusOr<std::vector<Tensor>> out = OpCall(23).In("Q", q).In("K", kv).In("V", kv).In("M", mask).Go(
      {"Y", "", "", "QK"}, [](onnx::NodeProto& n) { SetAttr(n, "qk_matmul_output_mode", int64_t(3)); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(FloatValues((*out)[0]), ::testing::ElementsAre(1.0f, 1.0f, 0.0f, 0.0f));
  EXPECT_THAT(FloatValues((*out)[1]), ::testing::ElementsAre(1.0f, 0.0f, 0.0f, 0.0f));
  // Causal with nonpad 2 and Sq 4: offset -2 leaves rows 0 and 1 with no key.
  Tensor n = Tensor::FromVector<int64_t>({2}, {1});
  absl::StatusOr<std::vector<Tensor>> off = OpCall(24).In("Q", Zeros({1, 1, 4, 2})).In("K", Zeros({1, 1, 4, 2}))
      .In("V", Iota({1, 1, 4, 1})).Absent().Absent().Absent().In("n", n)
      .Go({"Y"}, [](onnx::NodeProto& node) { SetAttr(node, "is_causal", int64_t(1)); });
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_THAT(FloatValues((*off)[0]), ::testing::ElementsAre(0.0f, 0.0f, 0.0f, 0.5f));
}

TEST(Attention, SoftmaxPrecisionIsHonoured) {
  // float inputs, softmax in float16: the probabilities are float16 values.
  std::mt19937 rng(2);
  Tensor q = Random(DType::kFloat, {1, 1, 1, 4}, rng), k = Random(DType::kFloat, {1, 1, 7, 4}, rng);
  Tensor v = Tensor::Zeros(DType::kFloat, {1, 1, 7, 7});
  for (int j = 0; j < 7; ++j) v.data<float>()[j * 7 + j] = 1;  // Y row = the probabilities
  auto run = [&](int64_t precision) {
    return OpCall(23).In("Q", q).In("K", k).In("V", v).Go({"Y"}, [&](onnx::NodeProto& n) {
      SetAttr(n, "softmax_precision", precision);
    });
  };
  absl::StatusOr<std::vector<Tensor>> f16 = run(10), f32 = run(1);
  ASSERT_TRUE(f16.ok() && f32.ok());
  bool differs = false;
  for (float p : FloatValues((*f16)[0])) {
    EXPECT_EQ(ToFloat(ToFloat16(p)), p) << "not a float16 value";
    differs = differs || std::fabs(p - ToFloat(ToFloat16(p))) > 0;
  }
  for (size_t j = 0; j < 7; ++j) {
    EXPECT_NEAR(FloatValues((*f16)[0])[j], FloatValues((*f32)[0])[j], 2e-3);
    differs = differs || FloatValues((*f16)[0])[j] != FloatValues((*f32)[0])[j];
  }
  EXPECT_TRUE(differs);
}

TEST(Attention, DoubleIsDoubleAccurate) {
  // Uniform attention over V = 1/3, 1/7, 1/11: the mean is exact in double.
  Tensor q = Tensor::Zeros(DType::kDouble, {1, 1, 1, 2}), k = Tensor::Zeros(DType::kDouble, {1, 1, 3, 2});
  Tensor v = Tensor::FromVector<double>({1.0 / 3, 1.0 / 7, 1.0 / 11}, {1, 1, 3, 1});
  absl::StatusOr<std::vector<Tensor>> out = OpCall(23).In("Q", q).In("K", k).In("V", v).Go({"Y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR((*out)[0].data<double>()[0], (1.0 / 3 + 1.0 / 7 + 1.0 / 11) / 3, 1e-15);
}

TEST(Attention, RuleViolationsAreClearErrors) {
  std::mt19937 rng(8);
  auto t = [&](Shape s) { return Random(DType::kFloat, s, rng); };
  auto error = [](absl::StatusOr<std::vector<Tensor>> r) { return r.ok() ? std::string("ok") : std::string(r.status().message()); };
  EXPECT_THAT(error(OpCall(23).In("Q", t({2, 4, 8})).In("K", t({2, 3, 6, 8})).In("V", t({2, 3, 6, 8})).Go({"Y"})),
              HasSubstr("must all be 3-D or all 4-D"));
  EXPECT_THAT(error(OpCall(23).In("Q", t({2, 4, 24})).In("K", t({2, 6, 24})).In("V", t({2, 6, 24})).Go({"Y"})),
              HasSubstr("3-D inputs need q_num_heads and kv_num_heads"));
  EXPECT_THAT(error(OpCall(23).In("Q", t({1, 3, 2, 8})).In("K", t({1, 2, 2, 8})).In("V", t({1, 2, 2, 8})).Go({"Y"})),
              HasSubstr("kv heads 2 must divide q heads 3"));
  EXPECT_THAT(error(OpCall(23).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8})).In("M", t({4, 3, 5})).Go({"Y"})),
              HasSubstr("rank 3 means (heads, q, kv)"));
  EXPECT_THAT(error(OpCall(23).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8})).In("M", t({3, 4})).Go({"Y"})),
              HasSubstr("opset 23 does not pad"));
  EXPECT_THAT(error(OpCall(23).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8})).Absent()
                        .In("pk", t({1, 2, 4, 8})).Go({"Y"})),
              HasSubstr("past_key and past_value must be given together"));
  EXPECT_THAT(error(OpCall(24).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8})).Absent()
                        .In("pk", t({1, 2, 4, 8})).In("pv", t({1, 2, 4, 8}))
                        .In("n", Tensor::FromVector<int64_t>({3}, {1})).Go({"Y"})),
              HasSubstr("nonpad_kv_seqlen cannot be combined with past"));
  EXPECT_THAT(error(OpCall(24).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8})).Absent()
                        .Absent().Absent().In("n", Tensor::FromVector<int64_t>({6}, {1})).Go({"Y"})),
              HasSubstr("nonpad_kv_seqlen[0] = 6 is outside [0, 5]"));
  EXPECT_THAT(error(OpCall(23).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8}))
                        .Go({"Y"}, [](onnx::NodeProto& n) { SetAttr(n, "softmax_precision", int64_t(7)); })),
              HasSubstr("softmax_precision 7 is not one of"));
  EXPECT_THAT(error(OpCall(25).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8}))
                        .Go({"Y"}, [](onnx::NodeProto& n) { SetAttr(n, "left_window_size", int64_t(-2)); })),
              HasSubstr("window sizes must be >= -1"));
  EXPECT_THAT(error(OpCall(25).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8}))
                        .Go({"Y"}, [](onnx::NodeProto& n) { SetAttr(n, "q_num_heads", int64_t(2)); })),
              HasSubstr("must not be set for 4-D inputs"));
  EXPECT_THAT(error(OpCall(25).In("Q", t({1, 2, 3, 8})).In("K", t({1, 2, 5, 8})).In("V", t({1, 2, 5, 8})).Go({"Y", "pk"})),
              HasSubstr("present_key and present_value must be requested together"));
  Tensor i32 = Tensor::Zeros(DType::kInt32, {1, 1, 1, 1});
  EXPECT_THAT(error(OpCall(23).In("Q", i32).In("K", i32).In("V", i32).Go({"Y"})),
              HasSubstr("not implemented: ai.onnx::Attention opset 23 for int32"));
}

TEST(Attention25, AWindowOfInt64MaxIsUnbounded) {
  // pos + right_window + 1 used to overflow (UB) and hide every key: all zeros.
  const auto run = [](int64_t right) {
    return OpCall(25).In("Q", Zeros({1, 1, 5, 4})).In("K", Zeros({1, 1, 5, 4})).In("V", Iota({1, 1, 5, 1}))
        .Go({"Y"}, [right](onnx::NodeProto& n) {
          SetAttr(n, "left_window_size", int64_t(1));
          SetAttr(n, "right_window_size", right);
        });
  };
  absl::StatusOr<std::vector<Tensor>> huge = run(std::numeric_limits<int64_t>::max()), wide = run(1000);
  ASSERT_TRUE(huge.ok()) << huge.status();
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_THAT(FloatValues((*huge)[0]), ::testing::Pointwise(::testing::FloatEq(), {2.0f, 2.0f, 2.5f, 3.0f, 3.5f}));
  EXPECT_EQ(FloatValues((*huge)[0]), FloatValues((*wide)[0]));
}

TEST(Attention, KeysWithoutDataCostNothing) {
  // K and V of shape [1, 1, 2^40, 0] hold no data: Y and present are empty,
  // and nothing loops over the 2^40 keys (this used to run for hours).
  const int64_t kKeys = int64_t(1) << 40;
  for (bool present : {false, true}) {
    OpCall call = OpCall(23).In("Q", Zeros({1, 1, 1, 0})).In("K", Zeros({1, 1, kKeys, 0})).In("V", Zeros({1, 1, kKeys, 0}));
    if (present) call.Absent().In("pk", Zeros({1, 1, 0, 0})).In("pv", Zeros({1, 1, 0, 0}));
    absl::StatusOr<std::vector<Tensor>> out =
        present ? call.Go({"Y", "pk_out", "pv_out"}) : call.Go({"Y"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), Shape({1, 1, 1, 0}));
    if (present) {
      EXPECT_EQ((*out)[1].shape(), Shape({1, 1, kKeys, 0}));
    }
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: the mask widened to a float bias (8 bytes per mask
// element: a bool mask grows eightfold) and the kernel's per-thread
// workspaces count against the session's memory budget.
TEST(Attention, MaskBiasAndWorkspacesCountAgainstTheMemoryLimit) {
  std::mt19937 rng(23);
  const Tensor q = Random(DType::kFloat, {1, 2, 512, 8}, rng), k = Random(DType::kFloat, {1, 2, 512, 8}, rng);
  const Tensor v = Random(DType::kFloat, {1, 2, 512, 8}, rng);
  Tensor mask = Tensor::Zeros(DType::kBool, {512, 512});  // 256 KiB; its bias 2 MiB
  for (int64_t i = 0; i < 512; ++i)
    for (int64_t j = 0; j <= i; ++j) mask.data<bool>()[i * 512 + j] = true;
  const auto run = [&](size_t limit, const Tensor* m) {
    OpCall call(24);
    call.tester.memory_limit = limit;
    call.In("Q", q).In("K", k).In("V", v);
    if (m) call.In("M", *m);
    return call.Go({"Y"});
  };
  const size_t y = 2 * 512 * 8 * sizeof(float);  // 32 KiB
  absl::StatusOr<std::vector<Tensor>> over = run(size_t(1) << 20, &mask);
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_THAT(Message(over.status()), HasSubstr("Attention node 'Attention_1'"));
  EXPECT_THAT(Message(over.status()), HasSubstr("the mask as a float bias"));
  EXPECT_THAT(Message(over.status()), HasSubstr("exceed the session's memory limit of 1048576 bytes"));
  // Without the mask: Y fits, the workspaces (some 30 KiB a thread) do not.
  absl::StatusOr<std::vector<Tensor>> tight = run(y + (8 << 10), nullptr);
  ASSERT_FALSE(tight.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(tight.status())) << tight.status();
  EXPECT_THAT(Message(tight.status()), HasSubstr("the attention kernel's workspaces"));
  // Room for both: a causal mask's answer is is_causal's.
  absl::StatusOr<std::vector<Tensor>> masked = run(size_t(8) << 20, &mask);
  ASSERT_TRUE(masked.ok()) << masked.status();
  OpCall causal(24);
  absl::StatusOr<std::vector<Tensor>> want =
      causal.In("Q", q).In("K", k).In("V", v).Go({"Y"}, [](onnx::NodeProto& n) { SetAttr(n, "is_causal", int64_t(1)); });
  ASSERT_TRUE(want.ok()) << want.status();
  const std::vector<float> a = FloatValues((*masked)[0]), b = FloatValues((*want)[0]);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5) << i;
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// A decode step whose Y is omitted (outputs "", present_key, present_value):
// present is still the past and the new key, as when Y is asked for too.
TEST(Attention, PresentWithoutYIsWritten) {
  const Tensor q = Iota({1, 2, 1, 8}), k = Iota({1, 1, 1, 8}), v = Iota({1, 1, 1, 8});
  Tensor pk = Iota({1, 1, 3, 8}), pv = Iota({1, 1, 3, 8});
  for (int64_t i = 0; i < pv.size(); ++i) pv.data<float>()[i] += 100.0f;
  absl::StatusOr<std::vector<Tensor>> with_y =
      OpCall(23).In("Q", q).In("K", k).In("V", v).Absent().In("pk", pk).In("pv", pv).Go({"Y", "pk_out", "pv_out"});
  absl::StatusOr<std::vector<Tensor>> without_y =
      OpCall(23).In("Q", q).In("K", k).In("V", v).Absent().In("pk", pk).In("pv", pv).Go({"", "pk_out", "pv_out"});
  ASSERT_TRUE(with_y.ok()) << with_y.status();
  ASSERT_TRUE(without_y.ok()) << without_y.status();
  ASSERT_EQ(with_y->size(), 3u);
  const Tensor& want_k = (*with_y)[1];
  const Tensor& want_v = (*with_y)[2];
  const Tensor& got_k = (*without_y)[without_y->size() - 2];
  const Tensor& got_v = (*without_y)[without_y->size() - 1];
  ASSERT_EQ(got_k.shape(), Shape({1, 1, 4, 8}));
  EXPECT_EQ(FloatValues(got_k), FloatValues(want_k));
  EXPECT_EQ(FloatValues(got_v), FloatValues(want_v));
  EXPECT_EQ(FloatValues(want_v)[24], 0.0f);  // the new key's value row after the past's three
  EXPECT_EQ(FloatValues(want_v)[0], 100.0f);
}

}  // namespace
}  // namespace onnx_mini
