// Matrix products on oneDNN, for the dtypes it runs fast here (float,
// bfloat16). Callers fall back to their reference kernel when this declines.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace onnx_mini {

// C[i] = op(A[i]) x op(B[i]) for i < batch, row-major, where A holds batch_a
// and B batch_b matrices (each 1 or batch: a single matrix is broadcast).
// op() transposes when asked: A is stored (K, M) instead of (M, K), B (N, K)
// instead of (K, N). Returns false (having written nothing) when oneDNN
// cannot run this dtype or shape.
bool OneDnnMatMul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t batch_a,
                  int64_t batch_b, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int threads);

}  // namespace onnx_mini
