// kernels/gemm/gemv.cc: the few-row float32 product against its double-accumulating
// reference, on every CPU target, both layouts of B, with and without bias.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/gemm/gemv.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"
#include "tests/ops/random_values.h"

namespace onnx_mini {
namespace {

TEST(Gemv, MatchesTheReferenceOnEveryTargetShapeAndLayout) {
  struct Case { int64_t k, n; };
  // Odd sizes around the vector and block widths (16, 64 columns), one
  // column, one row of B, and a size large enough to split over threads.
  const std::vector<Case> cases = {{1, 1}, {1, 100}, {7, 1}, {5, 17}, {33, 63}, {64, 64}, {65, 129},
                                   {130, 200}, {257, 513}, {512, 1408}};
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    uint32_t seed = 1;
    for (const Case& c : cases)
      for (int64_t m = 1; m <= kGemvMaxRows; ++m)
        for (bool trans_b : {false, true})
          for (bool with_bias : {false, true})
            for (int threads : {1, 2, 3}) {
              const std::vector<float> a = RandomFloats(m * c.k, seed++), b = RandomFloats(c.k * c.n, seed++),
                                       bias = RandomFloats(c.n, seed++);
              std::vector<float> got(size_t(m * c.n), NAN), want(size_t(m * c.n));
              const float* pb = with_bias ? bias.data() : nullptr;
              GemvF32(a.data(), b.data(), pb, got.data(), m, c.k, c.n, trans_b, threads);
              GemvF32Reference(a.data(), b.data(), pb, want.data(), m, c.k, c.n, trans_b);
              for (size_t i = 0; i < want.size(); ++i)
                ASSERT_NEAR(got[i], want[i], 1e-5f * float(c.k + 1))
                    << CpuTargetName(target) << " m=" << m << " k=" << c.k << " n=" << c.n
                    << " trans_b=" << trans_b << " bias=" << with_bias << " threads=" << threads << " at " << i;
            }
  }
}

// The split follows the pool's size rule: a few-row product of 64 x 300
// stays on the caller at 2 threads, 4 x 512 x 1408 splits, and both give the
// same bits at 1 and 2 threads.
TEST(Gemv, SmallProductsStayOnTheCallerAndThreadsGiveTheSameValues) {
  struct Case { int64_t m, k, n; bool splits; };
  for (const Case& c : std::vector<Case>{{1, 64, 300, false}, {2, 128, 100, false}, {4, 512, 1408, true}})
    for (bool trans_b : {false, true}) {
      const std::vector<float> a = RandomFloats(c.m * c.k, 3), b = RandomFloats(c.k * c.n, 4);
      std::vector<float> one(size_t(c.m * c.n), NAN), two(size_t(c.m * c.n), NAN);
      GemvF32(a.data(), b.data(), nullptr, one.data(), c.m, c.k, c.n, trans_b, 1);
      const int64_t before = ParallelCountsSoFar().pool_loops;
      GemvF32(a.data(), b.data(), nullptr, two.data(), c.m, c.k, c.n, trans_b, 2);
      EXPECT_EQ(ParallelCountsSoFar().pool_loops - before, c.splits ? 1 : 0) << "m=" << c.m << " n=" << c.n;
      for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], two[i]) << "m=" << c.m << " at " << i;
    }
}

}  // namespace
}  // namespace onnx_mini
