// runtime/thread_pool.cc: every index runs exactly once, whatever the
// thread count, grain, nesting or number of concurrent callers.
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <thread>
#include <vector>

namespace onnx_mini {
namespace {

void ExpectEachIndexOnce(int threads, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(size_t(n < 0 ? 0 : n));
  std::atomic<bool> too_long{false};
  ParallelFor(threads, n, grain, [&](int64_t begin, int64_t end) {
    if (end - begin > (grain < 1 ? 1 : grain) || begin >= end) too_long = true;
    for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
  });
  EXPECT_FALSE(too_long) << "threads " << threads << " n " << n << " grain " << grain;
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "index " << i << " of " << n;
}

TEST(ThreadPool, EveryIndexRunsOnce) {
  for (int threads : {1, 2, 3, 8})
    for (int64_t n : {0, 1, 2, 7, 64, 1000, 4097})
      for (int64_t grain : {0, 1, 3, 64, 5000}) ExpectEachIndexOnce(threads, n, grain);
}

TEST(ThreadPool, ManyLoopsInARow) {
  // Back-to-back loops exercise the hand-over between jobs (workers still
  // leaving one job while the next is written).
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 2000; ++round)
    ParallelFor(2, 16, 1, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
  EXPECT_EQ(total.load(), 2000 * 16);
}

TEST(ThreadPool, NestedLoopsRunInline) {
  std::atomic<int64_t> total{0};
  ParallelFor(2, 8, 1, [&](int64_t, int64_t) {
    ParallelFor(2, 100, 10, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
  });
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPool, AThrowingRangeReachesTheCaller) {
  for (int threads : {1, 2, 4}) {
    std::atomic<int64_t> ran{0};
    EXPECT_THROW(ParallelFor(threads, 100, 1,
                             [&](int64_t begin, int64_t) {
                               if (begin == 37) throw std::bad_alloc();
                               ran.fetch_add(1);
                             }),
                 std::bad_alloc);
    EXPECT_LE(ran.load(), 99) << threads << " threads";
  }
  // The pool is still usable.
  ExpectEachIndexOnce(2, 1000, 3);
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirWholeLoop) {
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 6; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        std::atomic<int64_t> sum{0};
        ParallelFor(2, 1000, 7, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) sum.fetch_add(i);
        });
        if (sum.load() != 999 * 1000 / 2) failures.fetch_add(1);
      }
    });
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace onnx_mini
