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
// ParallelFor, or while another thread's loop holds the pool. body must be
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

}  // namespace onnx_mini
