#include "runtime/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onnx_mini::detail {
namespace {

// How long an idle worker spins before it sleeps, and how long a caller
// waiting for the last chunks spins before it yields its CPU (to a worker
// that the OS preempted, if that is what it waits for).
constexpr auto kWorkerSpin = std::chrono::microseconds(100);
constexpr int kPauses = 256;  // pause instructions before a waiting worker yields
constexpr auto kCallerSpin = std::chrono::microseconds(20);
constexpr int kMaxWorkers = 255;
constexpr int64_t kSpinNs = std::chrono::nanoseconds(kWorkerSpin).count();
constexpr int64_t kAwakeMargin = 25000;  // ns of spin left for a worker to count as awake

thread_local bool in_parallel_loop = false;

std::atomic<int64_t> pool_loops{0}, unhelped_loops{0}, omp_teams{0};

// Loops in a row that no worker came in time to help. From kGiveUp on (the
// other cores busy with other processes, as a worker that never runs in time
// says), the pool hands over only every kProbe-th loop, and the others run on
// the caller at once: they saved nothing and paid the hand-over and a wake.
// A probe that a worker helps ends the run.
constexpr int kGiveUp = 16, kProbe = 4;
std::atomic<int> unhelped_run{0};

bool KeepOnCaller(int run) { return run >= kGiveUp && (run - kGiveUp) % kProbe != kProbe - 1; }

void FutexWait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void FutexWake(std::atomic<uint32_t>& word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

// One loop at a time. A job is published by bumping `epoch_`; its low bit
// is set while the caller rewrites the job's fields, which it does only once
// no worker is still inside the previous job (`active_` is zero).
class Pool {
 public:
  static Pool& Get() {
    // Never destroyed: its workers live until exit. A forked child has none
    // of them (only the forking thread is copied; the copied counts, locks
    // and spin times are the parent's): it starts a pool of its own.
    static const bool made = [] {
      instance_ = new Pool();
      pthread_atfork(nullptr, nullptr, [] {
        instance_ = new Pool();  // the parent's is leaked, as it is at exit
        unhelped_run.store(0, std::memory_order_relaxed);
      });
      return true;
    }();
    (void)made;
    return *instance_;
  }

  bool TryRun(int threads, int64_t n, int64_t grain, ChunkFn fn, const void* body) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    EnsureWorkers(std::min(threads - 1, kMaxWorkers));
    if (workers_ == 0) return false;

    const uint32_t id = epoch_.load(std::memory_order_relaxed) >> 1;
    epoch_.store((id << 1) | 1);
    WaitUntil([&] { return active_.load() == 0; });
    fn_ = fn;
    body_ = body;
    n_ = n;
    grain_ = grain;
    chunks_ = (n + grain - 1) / grain;
    allowed_ = threads - 1;
    joined_.store(0, std::memory_order_relaxed);
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    epoch_.store((id + 1) << 1);
    // Wake only as many sleepers as the loop may use: the first workers to
    // arrive, spinning or woken, take the places.
    if (sleepers_.load() > 0) FutexWake(epoch_, allowed_);

    // A loop whose every chunk the caller ran paid for the hand-over and got
    // nothing: no worker came in time (another process on its core, or a
    // wake slower than the loop).
    if (Claim() == chunks_) {
      unhelped_loops.fetch_add(1, std::memory_order_relaxed);
      unhelped_run.fetch_add(1, std::memory_order_relaxed);
    } else {
      unhelped_run.store(0, std::memory_order_relaxed);
    }
    WaitUntil([&] { return done_.load(std::memory_order_acquire) >= chunks_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return true;
  }

  // A worker is awake: spinning between loops (or starting), not asleep on
  // the futex, so a loop posted now costs no wake and finds it within
  // microseconds if its core is free. One near the end of its spin counts
  // as asleep: it would be by the time the loop's parts are handed out.
  bool AnyAwake() const {
    return alive_.load() > sleepers_.load() && spin_until_.load(std::memory_order_relaxed) > Now() + kAwakeMargin;
  }

 private:
  static void Relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  template <class Done>
  static void WaitUntil(const Done& done) {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0; !done(); ++spins) {
      if (spins < 64 || std::chrono::steady_clock::now() - start < kCallerSpin) Relax();
      else sched_yield();
    }
  }

  // Runs chunks until none is left; the caller and workers alike. A chunk
  // that throws (std::bad_alloc from a kernel's scratch, say) still counts
  // as done, so the loop ends; the caller rethrows the first exception.
  // Returns the number of chunks this thread ran.
  int64_t Claim() {
    in_parallel_loop = true;
    int64_t ran = 0;
    for (;;) {
      const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks_) break;
      const int64_t begin = c * grain_;
      try {
        fn_(body_, begin, std::min(n_, begin + grain_));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu_);
        if (!error_) error_ = std::current_exception();
      }
      done_.fetch_add(1, std::memory_order_release);
      ++ran;
    }
    in_parallel_loop = false;
    return ran;
  }

  void EnsureWorkers(int count) {
    while (workers_ < count) {
      try {
        std::thread([this] { Work(); }).detach();
      } catch (const std::system_error&) {
        return;  // run with the workers there are
      }
      ++workers_;
      alive_.fetch_add(1);
    }
  }

  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void Work() {
    uint32_t seen = epoch_.load();
    for (;;) {
      uint32_t now = epoch_.load();
      auto start = std::chrono::steady_clock::now();
      spin_until_.store(Now() + kSpinNs, std::memory_order_relaxed);
      for (int spins = 0; now == seen || (now & 1); ++spins, now = epoch_.load()) {
        if (spins < kPauses) {
          Relax();
          continue;
        }
        // Then yield while spinning: an OpenMP thread of the next GEMM, or
        // another process, gets this CPU if it wants it.
        if (std::chrono::steady_clock::now() - start < kWorkerSpin) {
          sched_yield();
          continue;
        }
        sleepers_.fetch_add(1);
        FutexWait(epoch_, now);  // returns at once if the epoch moved on
        sleepers_.fetch_sub(1);
        start = std::chrono::steady_clock::now();  // a spurious wake spins again
        spin_until_.store(Now() + kSpinNs, std::memory_order_relaxed);
      }
      seen = now;
      active_.fetch_add(1);
      // A caller that set the writing bit after our load waits for us to
      // leave; one that did so before is seen here.
      if (epoch_.load() == now && joined_.fetch_add(1) < allowed_) Claim();
      active_.fetch_sub(1);
    }
  }

  static Pool* instance_;  // set once, and in a forked child before it runs anything else

  std::mutex mu_;
  int workers_ = 0;  // guarded by mu_

  std::atomic<uint32_t> epoch_{0};
  std::atomic<int> active_{0}, sleepers_{0}, alive_{0};  // alive_: workers started
  std::atomic<int64_t> spin_until_{0};  // when the last worker to start spinning stops (ns)
  // The job: written by the caller while no worker is active.
  ChunkFn fn_ = nullptr;
  const void* body_ = nullptr;
  int64_t n_ = 0, grain_ = 1, chunks_ = 0;
  int allowed_ = 0;
  std::atomic<int> joined_{0};  // workers that came for the job
  std::atomic<int64_t> next_{0}, done_{0};
  std::mutex error_mu_;
  std::exception_ptr error_;  // the job's first exception
};

Pool* Pool::instance_ = nullptr;

}  // namespace

void RunParallel(int threads, int64_t n, int64_t grain, ChunkFn fn, const void* body) {
  if (!in_parallel_loop) {
    pool_loops.fetch_add(1, std::memory_order_relaxed);
    if (KeepOnCaller(unhelped_run.load(std::memory_order_relaxed))) {
      unhelped_loops.fetch_add(1, std::memory_order_relaxed);
      unhelped_run.fetch_add(1, std::memory_order_relaxed);
    } else if (Pool::Get().TryRun(threads, n, grain, fn, body)) {
      return;
    } else {
      // Another thread's loop holds the pool (or it has no worker): the
      // caller runs every chunk, helped by none.
      unhelped_loops.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const bool outer = in_parallel_loop;
  in_parallel_loop = true;
  try {
    for (int64_t begin = 0; begin < n; begin += grain) fn(body, begin, std::min(n, begin + grain));
  } catch (...) {
    in_parallel_loop = outer;
    throw;
  }
  in_parallel_loop = outer;
}

}  // namespace onnx_mini::detail

namespace onnx_mini {

ParallelCounts ParallelCountsSoFar() {
  ParallelCounts c;
  c.pool_loops = detail::pool_loops.load(std::memory_order_relaxed);
  c.unhelped_loops = detail::unhelped_loops.load(std::memory_order_relaxed);
  c.omp_teams = detail::omp_teams.load(std::memory_order_relaxed);
  return c;
}

void CountOmpTeam() { detail::omp_teams.fetch_add(1, std::memory_order_relaxed); }

bool PoolWillTake(int threads) {
  using namespace detail;
  if (threads <= 1 || in_parallel_loop) return false;
  // Kept on the caller (its workers have not come in time lately): this
  // one counts as a loop kept there, so that the probes still come.
  const int run = unhelped_run.load(std::memory_order_relaxed);
  if (KeepOnCaller(run)) {
    unhelped_run.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool PoolWillHelp(int threads) {
  using namespace detail;
  if (threads <= 1 || in_parallel_loop) return false;
  // No wake for it: here a futex wake cost more than the split saves (silero
  // v4, whose one split a run came long after the worker slept: 1.06x its
  // 1-thread time with a wake a split, 1.01x without).
  if (!Pool::Get().AnyAwake()) return false;
  return PoolWillTake(threads);  // awake, unless the pool keeps its loops on the caller
}

int DefaultThreads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && n > 0) return int(std::min<long>(n, 1024));
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

}  // namespace onnx_mini
