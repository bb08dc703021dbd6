// Float32 matrix products with a constant B packed once (a prefill's weight
// products), on AVX-512 or AVX2. B is stored in panels of kGemmPanel columns,
// each panel k rows of kGemmPanel contiguous floats (zero-padded past n), so
// the kernel reads B in the order it multiplies; a register tile of up to six
// rows of A by one panel (AVX2: by a 16-column strip of it) stays in
// registers over a block of k, and the next block of B is prefetched into L2
// while the current one is multiplied (weights come from L3 or memory). On
// Zen 5 (two full-width 512-bit FMA pipes, ~265 GFLOP/s per core) the
// decoders' prefill products (128 and 512 rows, k x n from 1024 x 256 to
// 1024 x 32000) run at 85-96% of that peak on CPU time, cold weights included
// (tools/bench_gemm.cc). The same tile suits Zen 4 (double-pumped 512-bit
// FMAs, half the peak): its 24 independent accumulators cover the FMA latency
// on either. On an AVX2-only Zen 3 (two 256-bit pipes, ~104 GFLOP/s) the
// tiny decoder's products run at 83-90% of the peak (oneDNN's: 36-92%). Both
// builds read the same panels. Panels are split over the kernels' thread
// pool (runtime/thread_pool.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnx_mini {

constexpr int64_t kGemmPanel = 64;

// Whether the active CPU features run GemmPackedF32 (it has an AVX-512 build only).
bool GemmPackedAvailable();
// The number of floats of B packed (k x n), or -1 when it overflows.
int64_t GemmPackedSize(int64_t k, int64_t n);
// Packs B, stored (k, n) or (n, k) when trans_b, into `packed`
// (GemmPackedSize(k, n) floats).
void GemmPackB(const float* b, int64_t k, int64_t n, bool trans_b, float* packed);
// C (m x n, row-major) = A (m x k, row-major) x B (+ bias, n values or null),
// B packed by GemmPackB. Only when GemmPackedAvailable(); m, k, n >= 1.
void GemmPackedF32(const float* a, const float* packed, const float* bias, float* c, int64_t m, int64_t k,
                   int64_t n, int threads);

}  // namespace onnx_mini
