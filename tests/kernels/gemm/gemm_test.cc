// kernels/gemm/gemm.cc: the packed float32 product against the double-accumulating
// reference (GemvF32Reference takes any row count), over tile, panel and
// block edges, both layouts of B, with and without bias, 1 to 3 threads, on
// every build (AVX-512, AVX2) the host runs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemv.h"
#include "kernels/gemm/onednn.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

// The targets with a build of the packed GEMM that this host runs.
std::vector<CpuTarget> PackedTargets() {
  std::vector<CpuTarget> targets;
  for (CpuTarget t : {CpuTarget::kAvx512, CpuTarget::kAvx2})
    if (CpuTargetUsable(t, HostCpuFeatures())) targets.push_back(t);
  return targets;
}

TEST(GemmPacked, MatchesTheReference) {
  if (PackedTargets().empty()) GTEST_SKIP() << "needs AVX2 (host features: " << HostCpuFeatures().name() << ")";
  struct Case { int64_t m, k, n; };
  // Rows around the 6-row tile (and the decode's few), columns around the 64-column panel and its
  // 16-column vectors, depths around the 512-row block; one of everything; M, N, K not multiples of
  // the tile, the panel or the block.
  const std::vector<Case> cases = {{1, 1, 1},     {5, 3, 17},     {6, 64, 64},    {7, 33, 65},
                                   {12, 511, 16}, {13, 512, 130}, {25, 513, 200}, {128, 1030, 129},
                                   {31, 1100, 8}, {64, 7, 1000},
                                   // Decode steps' row counts (1-4) with B of many panels.
                                   {1, 512, 1408}, {2, 1408, 130}, {3, 70, 513}, {4, 513, 64},
                                   // A last tile of 1 or 2 rows split with the one before (7 = 4 + 3,
                                   // 8 = 4 + 4, 127 = 20 x 6 + 4 + 3, 128 = 20 x 6 + 4 + 4), and 9-12, 16.
                                   {7, 40, 70}, {8, 515, 33}, {9, 17, 64}, {10, 1, 130}, {11, 9, 16},
                                   {14, 100, 48}, {16, 64, 200}, {127, 600, 70}, {128, 33, 129},
                                   // K = 1 (one row of every panel), N = 1, one row and a deep K.
                                   {7, 1, 65}, {128, 1, 300}, {20, 70, 1}, {1, 1030, 3},
                                   // around AVX2's 16-column strips (8-column vectors) and 256 rows.
                                   {9, 256, 40}, {13, 257, 24}, {2, 300, 9}, {1, 255, 120}};
  uint32_t seed = 1;
  for (CpuTarget target : PackedTargets())
  for (const Case& c : cases)
    for (bool trans_b : {false, true})
      for (bool with_bias : {false, true})
        for (int threads : {1, 2, 3}) {
          const std::vector<float> a = RandomFloats(c.m * c.k, seed++), b = RandomFloats(c.k * c.n, seed++),
                                   bias = RandomFloats(c.n, seed++);
          const int64_t size = GemmPackedSize(c.k, c.n);
          ASSERT_GE(size, c.k * c.n);
          std::vector<float> packed(static_cast<size_t>(size), NAN);
          GemmPackB(b.data(), c.k, c.n, trans_b, packed.data());
          std::vector<float> got(size_t(c.m * c.n), NAN), want(size_t(c.m * c.n));
          const float* pb = with_bias ? bias.data() : nullptr;
          {
            const ScopedCpuFeaturesForTesting scope(target);
            GemmPackedF32(a.data(), packed.data(), pb, got.data(), c.m, c.k, c.n, threads);
          }
          GemvF32Reference(a.data(), b.data(), pb, want.data(), c.m, c.k, c.n, trans_b);
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-5f * float(c.k + 1))
                << "m=" << c.m << " k=" << c.k << " n=" << c.n << " trans_b=" << trans_b << " bias=" << with_bias
                << " threads=" << threads << " " << CpuTargetName(target) << " at " << i;
        }
}

// The pool's size rule decides the split: the small products of a wake-word
// head (1 x 128 x 128) hand no loop to the pool at 2 threads, its first
// (1 x 1536 x 128, 768 KiB of B) and larger ones do, and every product gives
// the same bits at 1 and at 2 threads.
TEST(GemmPacked, SmallProductsStayOnTheCallerAndThreadsGiveTheSameValues) {
  if (!GemmPackedAvailable()) GTEST_SKIP() << "needs AVX2 (active features: " << ActiveCpuFeatures().name() << ")";
  struct Case { int64_t m, k, n; bool splits; };
  const std::vector<Case> cases = {{1, 128, 128, false}, {1, 128, 7, false}, {6, 96, 130, false},
                                   {1, 1536, 128, true}, {1, 3264, 128, true}, {64, 300, 517, true}};
  uint32_t seed = 11;
  for (const Case& c : cases) {
    const std::vector<float> a = RandomFloats(c.m * c.k, seed++), b = RandomFloats(c.k * c.n, seed++),
                             bias = RandomFloats(c.n, seed++);
    std::vector<float> packed(static_cast<size_t>(GemmPackedSize(c.k, c.n)));
    GemmPackB(b.data(), c.k, c.n, false, packed.data());
    std::vector<float> one(size_t(c.m * c.n), NAN), two(size_t(c.m * c.n), NAN);
    GemmPackedF32(a.data(), packed.data(), bias.data(), one.data(), c.m, c.k, c.n, 1);
    const int64_t before = ParallelCountsSoFar().pool_loops;
    GemmPackedF32(a.data(), packed.data(), bias.data(), two.data(), c.m, c.k, c.n, 2);
    EXPECT_EQ(ParallelCountsSoFar().pool_loops - before, c.splits ? 1 : 0)
        << "m=" << c.m << " k=" << c.k << " n=" << c.n;
    for (size_t i = 0; i < one.size(); ++i)
      ASSERT_EQ(one[i], two[i]) << "m=" << c.m << " k=" << c.k << " n=" << c.n << " at " << i;
  }
}

TEST(GemmPacked, SizeOverflowIsReported) {
  EXPECT_EQ(GemmPackedSize(int64_t{1} << 40, int64_t{1} << 30), -1);
  EXPECT_EQ(GemmPackedSize(3, 65), 2 * 3 * kGemmPanel);
}

// oneDNN products follow the pool's size rule whatever threads the caller
// asks for: silero VAD's LSTM step (1 x 128 x 512) stays on one thread, a
// prefill-sized product takes them all.
TEST(OneDnnMatMul, ThreadsFollowTheSizeRule) {
  EXPECT_EQ(OneDnnMatMulThreads(2, 1, 1, 128, 512), 1);
  EXPECT_EQ(OneDnnMatMulThreads(8, 4, 64, 64, 64), 1);
  EXPECT_EQ(OneDnnMatMulThreads(2, 1, 256, 256, 512), 2);
  EXPECT_EQ(OneDnnMatMulThreads(2, 1, 128, 1024, 1024), 2);
  EXPECT_EQ(OneDnnMatMulThreads(1, 1, 4096, 4096, 4096), 1);
  // Just under and at two threads' worth.
  const int64_t two = int64_t(2 * kMinOneDnnThreadWork);
  EXPECT_EQ(OneDnnMatMulThreads(4, 1, 1, 1, two - 1), 1);
  EXPECT_EQ(OneDnnMatMulThreads(4, 1, 1, 1, two), 2);
}

// The same product, small and large, gives the same values asked for 1 or 2 threads.
TEST(OneDnnMatMul, SameValuesOnOneAndTwoThreads) {
  for (int64_t m : {1, 3, 256}) {
    const int64_t k = 300, n = 517;
    const std::vector<float> a = RandomFloats(m * k, 7), b = RandomFloats(k * n, 8);
    std::vector<float> c1(size_t(m * n)), c2(size_t(m * n));
    ASSERT_TRUE(OneDnnMatMul(DType::kFloat, a.data(), b.data(), c1.data(), 1, 1, 1, m, k, n, false, false, 1));
    ASSERT_TRUE(OneDnnMatMul(DType::kFloat, a.data(), b.data(), c2.data(), 1, 1, 1, m, k, n, false, false, 2));
    std::vector<double> want(size_t(m * n));
    const float* pa = a.data();
    const float* pb = b.data();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += double(pa[i * k + q]) * double(pb[q * n + j]);
        want[size_t(i * n + j)] = s;
      }
    for (size_t i = 0; i < c1.size(); ++i) {
      ASSERT_NEAR(c1[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "m " << m << " at " << i;
      ASSERT_NEAR(c2[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "m " << m << " at " << i;
    }
  }
}

}  // namespace
}  // namespace onnx_mini
