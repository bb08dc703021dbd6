// The kernels' own thread pool, for the short parallel loops of a decode
// step. Unlike an OpenMP team it does not split work statically: the caller
// and the workers claim chunks from a shared counter, so a worker that the OS
// has descheduled (other processes on the machine) delays nothing but the
// chunk it holds, and the caller finishes what nobody has claimed. Workers
// spin briefly between loops (a decode step's loops follow each other within
// microseconds), yielding the CPU to anyone else who wants it, and then
// sleep on a futex.
#pragma once

#include <cstdint>
#include <type_traits>

namespace onnx_mini {

namespace detail {
using ChunkFn = void (*)(const void* body, int64_t begin, int64_t end);
void RunParallel(int threads, int64_t n, int64_t grain, ChunkFn fn, const void* body);
}  // namespace detail

// Calls body(begin, end) for consecutive ranges covering [0, n), each at most
// `grain` long, on the calling thread and up to threads - 1 pool workers,
// and returns when all are done. Runs everything on the caller when
// threads <= 1, when there is a single chunk, when called from inside a
// ParallelFor, while another thread's loop holds the pool, or (three loops
// in four) after a run of loops that no worker came in time to help. body must be
// safe to call concurrently on disjoint ranges. If a call throws, the first
// exception is rethrown to the caller once no range is running (other ranges
// may or may not have run).
template <class F>
void ParallelFor(int threads, int64_t n, int64_t grain, const F& body) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (threads <= 1 || n <= grain) {
    for (int64_t begin = 0; begin < n; begin += grain) body(begin, n - begin < grain ? n : begin + grain);
    return;
  }
  detail::RunParallel(
      threads, n, grain,
      [](const void* b, int64_t begin, int64_t end) { (*static_cast<const F*>(b))(begin, end); }, &body);
}

// Counts, since the process started, of the loops the size rule split (a
// loop it runs on the caller is not one), of those that no worker helped
// (the caller ran every chunk: the other cores busy, a wake slower than the
// loop, or another thread's loop holding the pool; after a run of them the
// pool keeps most loops on the caller, see thread_pool.cc), and of the
// oneDNN calls given an OpenMP team of more than one thread: what `onnx-run
// --profile` reports per run, and what tests check to see that small work
// wakes no thread.
struct ParallelCounts {
  int64_t pool_loops = 0;
  int64_t unhelped_loops = 0;
  int64_t omp_teams = 0;
};
ParallelCounts ParallelCountsSoFar();
void CountOmpTeam();

// For work that costs more split than whole on one thread (a conv in parts
// pays a primitive call per part): whether to split it for the pool now,
// that is whether a worker is awake (spinning after a loop, with some of its
// spin left: no wake to wait for) and the pool is not keeping its loops on
// the caller. It wakes nobody.
bool PoolWillHelp(int threads);
// Whether a loop posted now would be handed to the workers, awake or not:
// more than one thread, not inside a loop, and the pool not keeping its loops
// on the caller (a no counts as a loop kept there, as for PoolWillHelp). For
// work worth a wake that costs more split than whole when no worker helps.
bool PoolWillTake(int threads);

// The threads of a session whose options say 0: OMP_NUM_THREADS's first
// value when set (as OpenMP's default, which this was), else the CPUs this
// process may run on.
int DefaultThreads();

// The pool's size rule, which every parallel loop of the project follows
// (oneDNN's calls choose their thread count by it too). A loop states its work
// in units of about one scalar operation on one element: a multiply-add of a
// reference kernel, an element converted, compared or copied. Waking a worker
// (a futex wake, then a wait for the OS to run it) costs several
// microseconds, more when other processes share the cores, so a thread is
// worth it only for at least kMinThreadWork units (~10-30 us); below that the
// loop runs on the caller and no worker is woken.
inline constexpr double kMinThreadWork = 32768;

// The threads a loop of `work` units should use: one per `min_per_thread`
// units, at least 1 and at most `threads`.
inline int ThreadsForWork(int threads, double work, double min_per_thread = kMinThreadWork) {
  if (threads <= 1 || !(work >= 2 * min_per_thread)) return 1;
  const double useful = work / min_per_thread;
  return useful >= double(threads) ? threads : int(useful);
}

// oneDNN's primitives run on an OpenMP team instead, which splits the work
// statically, sleeps between regions and waits for its slowest member (one
// the OS has descheduled holds up the whole region: a 1-D conv audio model ran
// 4x slower on 2 threads than on 1 on a busy machine). Their callers give
// them ThreadsForWork(threads, multiply-adds, kMinOneDnnThreadWork) threads:
// each thread then has some 0.2 ms of vectorized work or more.
inline constexpr double kMinOneDnnThreadWork = double(1 << 24);

// The work of each index of a loop, in the units above.
struct WorkPerIndex {
  double units;
};

// ParallelFor by the size rule: body(begin, end) over ranges covering [0, n)
// on ThreadsForWork(threads, n * work) threads, in chunks of at least
// kMinThreadWork units (the caller and the workers claim them as they go, so
// a worker that comes late holds up at most one chunk). When that is one
// thread, body(0, n) runs once on the caller and no worker is woken.
template <class F>
void ParallelFor(int threads, int64_t n, WorkPerIndex work, const F& body) {
  if (n <= 0) return;
  const double per = work.units > 0 ? work.units : 1;
  const int use = ThreadsForWork(threads, double(n) * per);
  if (use <= 1) {
    body(int64_t{0}, n);
    return;
  }
  const double grain = kMinThreadWork / per;
  ParallelFor(use, n, grain >= double(n) ? n : grain < 1 ? int64_t{1} : int64_t(grain), body);
}

}  // namespace onnx_mini
