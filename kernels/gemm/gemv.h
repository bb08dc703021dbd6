// Matrix products with few rows (a decode step: one row per sequence) in
// float32. They are bound by reading the weights once, so the kernel streams
// B through registers, all of A's rows at a time, and splits B's columns over
// the kernels' thread pool (runtime/thread_pool.h) rather than OpenMP: a
// decode step runs dozens of them back to back.
#pragma once

#include <cstdint>

namespace onnx_mini {

// The most rows of A the kernel takes; more go to the general GEMM.
constexpr int64_t kGemvMaxRows = 4;

// C (m x n) = A (m x k) x B (+ bias), row-major, with B stored (k, n), or
// (n, k) when trans_b. bias is null or n values. 1 <= m <= kGemvMaxRows.
void GemvF32(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
             bool trans_b, int threads);
// The same with plain loops (double accumulation): the reference in tests.
void GemvF32Reference(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k,
                      int64_t n, bool trans_b);

}  // namespace onnx_mini
