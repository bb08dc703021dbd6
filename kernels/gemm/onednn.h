// oneDNN's engine, its thread-count scope and one-off matrix products on it,
// for the dtypes it runs fast here (float, bfloat16). Callers fall back to
// their reference kernel when it declines. (MatMul and Gemm with a constant B
// go through kernels/gemm/prepared_matmul.h, which routes to oneDNN only
// when our own kernels do not fit.)
#pragma once

#include <omp.h>

#include <cstdint>
#include <memory>

#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"

namespace dnnl {
struct engine;
}

namespace onnx_mini {

// The CPU engine every oneDNN primitive of onnx-mini runs on.
dnnl::engine& OneDnnEngine();

// Sets this thread's OpenMP thread count, which oneDNN uses, and restores it
// on every path out. Enter it before creating a primitive: oneDNN builds a
// primitive for the thread count in force, and one built for more threads
// than it runs with is several times slower.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int threads) : saved_(omp_get_max_threads()) {
    if (threads > 1) CountOmpTeam();
    omp_set_num_threads(threads);
  }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

// The OpenMP threads OneDnnMatMul gives a product of batch x m x k x n
// multiply-adds: the pool's size rule (runtime/thread_pool.h) with oneDNN's
// minimum, whatever the caller asked for, so a small product never wakes a team.
int OneDnnMatMulThreads(int threads, int64_t batch, int64_t m, int64_t k, int64_t n);

// C[i] = op(A[i]) x op(B[i]) for i < batch, row-major, where A holds batch_a
// and B batch_b matrices (each 1 or batch: a single matrix is broadcast).
// op() transposes when asked: A is stored (K, M) instead of (M, K), B (N, K)
// instead of (K, N). Returns false (having written nothing) when oneDNN
// cannot run this dtype or shape. Runs on OneDnnMatMulThreads(threads, ...).
bool OneDnnMatMul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t batch_a,
                  int64_t batch_b, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int threads);

}  // namespace onnx_mini
