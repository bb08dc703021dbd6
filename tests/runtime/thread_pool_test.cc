// runtime/thread_pool.cc: every index runs exactly once, whatever the
// thread count, grain, nesting or number of concurrent callers; the size
// rule runs small loops on the caller and splits large ones.
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/sanitizers.h"

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

// The size rule: one thread per kMinThreadWork units, within [1, threads].
TEST(ThreadPool, ThreadsForWork) {
  EXPECT_EQ(ThreadsForWork(4, 0), 1);
  EXPECT_EQ(ThreadsForWork(4, 2 * kMinThreadWork - 1), 1);
  EXPECT_EQ(ThreadsForWork(4, 2 * kMinThreadWork), 2);
  EXPECT_EQ(ThreadsForWork(4, 3.5 * kMinThreadWork), 3);
  EXPECT_EQ(ThreadsForWork(4, 1e12), 4);
  EXPECT_EQ(ThreadsForWork(1, 1e12), 1);
  EXPECT_EQ(ThreadsForWork(0, 1e12), 1);
  EXPECT_EQ(ThreadsForWork(8, 1000, 100), 8);
  EXPECT_EQ(ThreadsForWork(8, 1000, 400), 2);
}

// Small work runs as one call on the calling thread: no worker is woken.
TEST(ThreadPool, SmallWorkRunsInlineOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  for (int threads : {2, 4}) {
    for (double per : {1.0, 100.0}) {
      const int64_t n = int64_t(2 * kMinThreadWork / per) - 1;  // just under two threads' worth
      int calls = 0;
      std::thread::id ran_on;
      ParallelFor(threads, n, WorkPerIndex{per}, [&](int64_t begin, int64_t end) {
        ++calls;  // not atomic: a second thread here would be a race TSan and the count both catch
        ran_on = std::this_thread::get_id();
        EXPECT_EQ(begin, 0);
        EXPECT_EQ(end, n);
      });
      EXPECT_EQ(calls, 1) << threads << " threads, " << per << " units per index";
      EXPECT_EQ(ran_on, caller);
    }
  }
}

// Large work splits into chunks of at least kMinThreadWork units, and
// another thread than the caller takes some when it is free to.
TEST(ThreadPool, LargeWorkSplits) {
  const std::thread::id caller = std::this_thread::get_id();
  const int64_t n = 1 << 20;
  std::vector<std::atomic<int>> hits(size_t{n});
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  int64_t chunks = 0, shortest = n;
  bool other_thread = false;
  // A worker the OS does not run in time leaves everything to the caller,
  // so try a few times (the values are checked every time).
  for (int attempt = 0; attempt < 200 && !other_thread; ++attempt) {
    for (auto& h : hits) h.store(0);
    chunks = 0;
    shortest = n;
    ran_on.clear();
    ParallelFor(2, n, WorkPerIndex{1}, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1, std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(mu);
      ++chunks;
      if (end < n) shortest = std::min(shortest, end - begin);
      ran_on.insert(std::this_thread::get_id());
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "index " << i;
    EXPECT_GE(chunks, 2);
    EXPECT_GE(double(shortest), kMinThreadWork);
    EXPECT_LE(ran_on.size(), 2u);  // threads = 2: the caller and at most one worker
    other_thread = ran_on.size() == 2 || ran_on.count(caller) == 0;
  }
  EXPECT_TRUE(other_thread) << "no worker ever took a chunk of a large loop";
}

// A loop with work for two threads uses at most two, however many it may:
// only one worker joins (the others, woken or spinning, find no place).
TEST(ThreadPool, AtMostTheThreadsTheWorkIsWorth) {
  const int64_t n = int64_t(2.5 * kMinThreadWork);
  for (int round = 0; round < 100; ++round) {
    std::mutex mu;
    std::set<std::thread::id> ran_on;
    std::atomic<int64_t> total{0};
    ParallelFor(8, n, WorkPerIndex{1}, [&](int64_t begin, int64_t end) {
      total.fetch_add(end - begin);
      std::lock_guard<std::mutex> lock(mu);
      ran_on.insert(std::this_thread::get_id());
    });
    ASSERT_EQ(total.load(), n);
    ASSERT_LE(ran_on.size(), 2u) << "round " << round;
  }
}

// The pool's count of loops handed to workers: a small loop, at any thread
// count, hands none (the caller runs it); a large one hands exactly one.
TEST(ThreadPool, SmallLoopsHandNothingToTheWorkers) {
  for (int threads : {2, 8}) {
    const int64_t before = ParallelCountsSoFar().pool_loops;
    int64_t total = 0;
    for (int round = 0; round < 100; ++round) {
      ParallelFor(threads, 1000, WorkPerIndex{32}, [&](int64_t begin, int64_t end) { total += end - begin; });
      ParallelFor(threads, int64_t(2 * kMinThreadWork) - 1, WorkPerIndex{1},
                  [&](int64_t begin, int64_t end) { total += end - begin; });
    }
    EXPECT_EQ(total, 100 * (1000 + int64_t(2 * kMinThreadWork) - 1));
    EXPECT_EQ(ParallelCountsSoFar().pool_loops, before) << threads << " threads";
  }
  const int64_t before = ParallelCountsSoFar().pool_loops;
  std::atomic<int64_t> total{0};
  ParallelFor(2, int64_t(4 * kMinThreadWork), WorkPerIndex{1}, [&](int64_t begin, int64_t end) { total += end - begin; });
  EXPECT_EQ(total.load(), int64_t(4 * kMinThreadWork));
  EXPECT_EQ(ParallelCountsSoFar().pool_loops, before + 1);
  // One thread never hands a loop over, however large.
  ParallelFor(1, int64_t(1) << 22, WorkPerIndex{1}, [&](int64_t, int64_t) {});
  EXPECT_EQ(ParallelCountsSoFar().pool_loops, before + 1);
}

// Sleeps until the pool's workers have spun out and sleep (kWorkerSpin is
// 100 us; a loaded machine may take longer to run them there).
void LetWorkersSleep() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

// PoolWillHelp: one thread never; workers asleep, no, and it wakes none
// (no loop is handed over, and it keeps saying no); right after a loop
// handed to the pool its worker spins, and it says yes.
TEST(ThreadPool, WillHelpOnlyWhileAWorkerIsAwake) {
  EXPECT_FALSE(PoolWillHelp(1));
  EXPECT_FALSE(PoolWillHelp(0));
  auto big_loop = [] {
    std::atomic<int64_t> total{0};
    ParallelFor(2, int64_t(4 * kMinThreadWork), WorkPerIndex{1}, [&](int64_t b, int64_t e) { total += e - b; });
    ASSERT_EQ(total.load(), int64_t(4 * kMinThreadWork));
  };
  big_loop();  // the workers exist
  LetWorkersSleep();
  const ParallelCounts before = ParallelCountsSoFar();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(PoolWillHelp(2)) << i;
  LetWorkersSleep();
  EXPECT_FALSE(PoolWillHelp(2)) << "a call woke a worker";
  EXPECT_EQ(ParallelCountsSoFar().pool_loops, before.pool_loops);
  // After a loop (the pool's wake), awake. Retried for up to 10 s: on a
  // loaded machine the worker may not run within its spin, and the pool may
  // be keeping loops on the caller (then one call in 4 is a probe).
  bool helped = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!helped && std::chrono::steady_clock::now() < deadline) {
    big_loop();
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (!helped && std::chrono::steady_clock::now() < until) helped = PoolWillHelp(2);
  }
  EXPECT_TRUE(helped);
}

// PoolWillTake: one thread never, nor inside a loop; with the workers asleep
// yes (unless the pool keeps its loops on the caller: retried, one call in 4
// is then a probe), and it hands no loop over.
TEST(ThreadPool, WillTakeWithTheWorkersAsleep) {
  EXPECT_FALSE(PoolWillTake(1));
  EXPECT_FALSE(PoolWillTake(0));
  std::atomic<int> inside{0};
  ParallelFor(2, int64_t(4 * kMinThreadWork), WorkPerIndex{1}, [&](int64_t, int64_t) {
    if (PoolWillTake(2)) ++inside;
  });
  EXPECT_EQ(inside.load(), 0);
  LetWorkersSleep();
  const ParallelCounts before = ParallelCountsSoFar();
  bool take = false;
  for (int i = 0; i < 16 && !take; ++i) take = PoolWillTake(2);
  EXPECT_TRUE(take);
  EXPECT_EQ(ParallelCountsSoFar().pool_loops, before.pool_loops);
}

// A child forked after the pool's workers started (multiprocessing's fork)
// has none of them: it gets workers of its own, and counts none of the
// parent's as awake (no split for a worker that is gone).
TEST(ThreadPool, AForkedChildGetsWorkersOfItsOwn) {
#ifdef ONNX_MINI_TSAN
  // ThreadSanitizer kills a child of a threaded process that starts threads.
  GTEST_SKIP() << "not under ThreadSanitizer: it does not support threads started after a multi-threaded fork";
#endif
  // Chunks of 2 ms, each on the thread that claimed it: a worker that exists
  // takes some of them (it has 14 ms to come, its sleeps give it a CPU).
  const auto helped = [] {
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<int> elsewhere{0};
    ParallelFor(2, 8, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (std::this_thread::get_id() != caller) ++elsewhere;
    });
    return elsewhere.load() > 0;
  };
  bool parent = false;
  for (int attempt = 0; attempt < 20 && !parent; ++attempt) parent = helped();
  ASSERT_TRUE(parent);
  // Forked right after a loop: the parent's worker was spinning.
  ParallelFor(2, 8, 1, [](int64_t, int64_t) {});
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);  // a child stuck waiting for the parent's workers dies
    const bool awake_at_fork = PoolWillHelp(2);
    bool child = false;
    for (int attempt = 0; attempt < 20 && !child; ++attempt) child = helped();
    _exit((child ? 0 : 1) | (awake_at_fork ? 2 : 0));
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed (stuck?), status " << status;
  EXPECT_EQ(WEXITSTATUS(status) & 1, 0) << "no worker helped the child's loops";
  EXPECT_EQ(WEXITSTATUS(status) & 2, 0) << "the child counted its parent's worker awake";
}

// A loop that runs on the caller because another thread's loop holds the
// pool got no worker: it counts as unhelped, as one the pool keeps on the
// caller does (the conv's split learns from these counts).
TEST(ThreadPool, ALoopRunOnTheCallerWhileAnotherHoldsThePoolIsUnhelped) {
  // Loops a worker helps first: the pool hands loops over (no run of unhelped ones).
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::atomic<int> elsewhere{0};
    const std::thread::id caller = std::this_thread::get_id();
    ParallelFor(2, 8, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (std::this_thread::get_id() != caller) ++elsewhere;
    });
    if (elsewhere.load() > 0) break;
  }
  std::atomic<bool> inside{false}, release{false};
  std::thread holder([&] {
    ParallelFor(2, 2, 1, [&](int64_t, int64_t) {
      inside = true;
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  while (!inside.load()) std::this_thread::yield();
  const ParallelCounts before = ParallelCountsSoFar();
  const std::thread::id me = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  ParallelFor(2, 64, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != me) ++elsewhere;
  });
  const ParallelCounts after = ParallelCountsSoFar();
  release = true;
  holder.join();
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_EQ(after.pool_loops - before.pool_loops, 1);
  EXPECT_EQ(after.unhelped_loops - before.unhelped_loops, 1) << "a loop no worker helped counted as helped";
}

// A session's default thread count, now that OpenMP does not give it.
TEST(ThreadPool, DefaultThreads) {
  const char* saved = std::getenv("OMP_NUM_THREADS");
  const std::string before = saved ? saved : "";
  unsetenv("OMP_NUM_THREADS");
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(DefaultThreads(), CPU_COUNT(&set));
  setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(DefaultThreads(), 3);
  setenv("OMP_NUM_THREADS", "5,2", 1);  // OpenMP's list: the outermost level's
  EXPECT_EQ(DefaultThreads(), 5);
  setenv("OMP_NUM_THREADS", "none", 1);
  EXPECT_EQ(DefaultThreads(), CPU_COUNT(&set));
  if (saved) setenv("OMP_NUM_THREADS", before.c_str(), 1);
  else unsetenv("OMP_NUM_THREADS");
}

}  // namespace
}  // namespace onnx_mini
