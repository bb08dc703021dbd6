// Matrix products on oneDNN, for the dtypes it runs fast here (float,
// bfloat16). Callers fall back to their reference kernel when this declines.
#pragma once

#include <omp.h>

#include <cstdint>
#include <memory>

#include "runtime/dtype.h"
#include "runtime/tensor.h"

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
  explicit OmpThreadsScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

// C[i] = op(A[i]) x op(B[i]) for i < batch, row-major, where A holds batch_a
// and B batch_b matrices (each 1 or batch: a single matrix is broadcast).
// op() transposes when asked: A is stored (K, M) instead of (M, K), B (N, K)
// instead of (K, N). Returns false (having written nothing) when oneDNN
// cannot run this dtype or shape.
bool OneDnnMatMul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t batch_a,
                  int64_t batch_b, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int threads);

// C = A x B (+ bias) with a constant B, prepared once at session creation.
// float32 on AVX-512 runs kernels/gemm/gemm.h for every row count of A, with B packed
// into its panels here (a decode step's products then read B in order: on
// some CPUs B's rows read 64 columns at a time stream at half the speed),
// unless B has so few columns that the panels' padding would more than
// double it. Other float32 runs the GEMV (kernels/gemm/gemv.h) on B as stored for at
// most kGemvMaxRows rows of A. Otherwise (bfloat16, more rows on other CPUs) B is
// reordered into the layout oneDNN's matmul prefers (pre-packing) and kept,
// and a primitive per row count M of A is made on first use and cached (a
// bounded cache: decode and prefill shapes, not every length). Run may be
// called from several threads at once.
class PackedMatMul {
 public:
  // B is (K, N), or (N, K) with trans_b; bias, if defined, has N elements.
  // Both must outlive this object (it keeps references to their storage).
  // nullptr when oneDNN does not run this dtype or shape. Every copy of B it
  // keeps (packed, reordered) is charged to `budget` (optional) while it
  // lives; one the budget refuses is not made (Run takes another path).
  static std::unique_ptr<PackedMatMul> Make(const Tensor& b, bool trans_b, const Tensor& bias, int threads,
                                            const std::shared_ptr<MemoryBudget>& budget = nullptr);
  ~PackedMatMul();

  int64_t k() const;
  int64_t n() const;
  bool has_bias() const;
  // Whether `b` is the matrix this object packed (the same storage).
  bool packs(const Tensor& b) const;
  // C (M x N, row-major) = A (M x K, row-major) x B (+ bias), with the thread
  // count it was made for. Returns false (having written nothing) when
  // oneDNN declines or `threads` differs.
  bool Run(const void* a, void* c, int64_t m, int threads) const;

  struct Impl;

 private:
  explicit PackedMatMul(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnx_mini
