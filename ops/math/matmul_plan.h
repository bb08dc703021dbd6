// The shape plan of a NumPy matrix product, shared by MatMul and the ops
// built on it (MatMulInteger, QLinearMatMul, com.microsoft FusedMatMul,
// MatMulIntegerToFloat, DynamicQuantizeMatMul), the plain batched loop, and
// the packed B that MatMul, Gemm and FusedMatMul nodes share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/common.h"

namespace onnx_mini {

struct PackedGemmB;  // kernels/gemm/prepared_matmul.h

// A (..., M, K) x B (..., K, N) with 1-D promotion (A a row, B a column) and
// broadcast batch dims: `batches` products of (M x K) by (K x N).
struct MatMulPlan : OpPlan {
  int64_t M = 0, K = 0, N = 0, batches = 0;
  Shape batch;                              // the broadcast batch dims
  std::vector<int64_t> stride_a, stride_b;  // matrix strides of A and B per batch dim (0: broadcast)
  int64_t count_a = 0, count_b = 0;         // matrices in A and in B
  bool one_call = false;                    // each side's batch is complete or a single matrix
  bool b_matrix = false;                    // B 2-D or 1-D: A's batches are rows of one product
  Shape output;                             // the product's shape (promoted dims dropped)

  // The matrices of A and B that output batch t multiplies.
  void Offsets(int64_t t, int64_t& off_a, int64_t& off_b) const {
    off_a = off_b = 0;
    for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
      const int64_t idx = t % batch[size_t(d)];
      t /= batch[size_t(d)];
      off_a += idx * stride_a[size_t(d)];
      off_b += idx * stride_b[size_t(d)];
    }
  }
};

// Plans A x B for the shapes the product reads. An error where a side has
// rank 0, the inner dims differ ("inner dimensions differ: " + `sides`) or
// the batch dims do not broadcast.
absl::Status PlanMatMul(const InferContext& ctx, Shape sa, Shape sb, const std::string& sides, MatMulPlan& p);

// B (constant input i, a float matrix; transposed with `trans_b`) packed for
// the GEMM once per session, whichever nodes read it; null where the packed
// GEMM does not run.
std::shared_ptr<const PackedGemmB> SharedPackedB(PrepareContext& ctx, size_t i, bool trans_b);

// Y = A x B, the plain loop: a row of one product per index, accumulating in
// Arith<T> (float for the 16-bit types).
template <class T>
void PlainMatMul(const MatMulPlan& p, const T* a, const T* b, T* y, int threads) {
  using A = typename Arith<T>::type;
  const int64_t M = p.M, K = p.K, N = p.N;
  ParallelFor(threads, p.batches * M, WorkPerIndex{double(K) * double(N) / 4},
              [&](int64_t t_begin, int64_t t_end) { for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t bi = t / M, m = t % M;
    int64_t off_a, off_b;
    p.Offsets(bi, off_a, off_b);
    const T* row = a + (off_a * M + m) * K;
    const T* mat = b + off_b * K * N;
    std::vector<A> acc(size_t(N), A(0));
    for (int64_t k = 0; k < K; ++k) {
      const A x = A(Widen(row[k]));
      const T* brow = mat + k * N;
      for (int64_t n = 0; n < N; ++n) acc[size_t(n)] += x * A(Widen(brow[n]));
    }
    for (int64_t n = 0; n < N; ++n) y[t * N + n] = Narrow<T>(acc[size_t(n)]);
  }});
}

}  // namespace onnx_mini
