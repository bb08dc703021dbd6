// The machine's memory read bandwidth as the benchmarks measure it (the floor
// of a decode step: bytes of weights / this): a vectorized read-only sum over
// buffers far larger than the caches, split over the kernels' pool. One
// implementation for bench-gemm, bench-nbits and bench-bandwidth.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace bench {

#if defined(__x86_64__)
// The sum of x[begin, end) (multiples of 64), four vectors at a time.
[[gnu::target("avx512f")]] inline float SumFloatsAvx512(const float* x, int64_t begin, int64_t end) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = begin; i < end; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  float lanes[16];
  _mm512_storeu_ps(lanes, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}
#endif

// Without AVX-512: 16 independent sums the compiler keeps in vector registers.
inline float SumFloatsPlain(const float* x, int64_t begin, int64_t end) {
  float acc[16] = {};
  for (int64_t i = begin; i < end; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += x[i + j];
  float sum = 0;
  for (float v : acc) sum += v;
  return sum;
}

// GB/s reading `bytes` in order on `threads` threads of the kernels' pool:
// the median of 9 reads, over `buffers` buffers of that size in turn (more
// than one, so that none is still in the caches when it is read again). The
// buffers ask for transparent huge pages, as packed quantized weights do
// (kernels/panel_memory.cc): on 4 KiB pages the TLB misses make the
// floor lower than what those weights are read at.
inline double ReadBandwidthGBs(int64_t bytes, int threads, int buffers = 1) {
  const int64_t n = bytes / 4 / 64 * 64;
  constexpr size_t kHugePage = size_t(2) << 20;
  const size_t size = (size_t(n) * 4 + kHugePage - 1) / kHugePage * kHugePage;
  std::vector<std::unique_ptr<float, decltype(&std::free)>> data;
  for (int b = 0; b < std::max(1, buffers); ++b) {
    float* p = static_cast<float*>(std::aligned_alloc(kHugePage, size));
    if (p == nullptr) return 0;
    madvise(p, size, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
    std::fill(p, p + n, 1.0f);
    data.emplace_back(p, &std::free);
  }
#if defined(__x86_64__)
  const bool avx512 = CpuTargetUsable(CpuTarget::kAvx512, HostCpuFeatures());
#else
  const bool avx512 = false;
#endif
  std::vector<double> times;
  float total = 0;
  for (int round = 0; round < 9; ++round) {
    const float* x = data[size_t(round) % data.size()].get();
    std::vector<float> sums(size_t(threads), 0.0f);
    const int64_t per = (n / 64 + threads - 1) / threads * 64;
    const auto start = std::chrono::steady_clock::now();
    ParallelFor(threads, threads, 1, [&](int64_t t, int64_t) {
      const int64_t begin = std::min(n, t * per), end = std::min(n, (t + 1) * per);
#if defined(__x86_64__)
      if (avx512) {
        sums[size_t(t)] = SumFloatsAvx512(x, begin, end);
        return;
      }
#endif
      sums[size_t(t)] = SumFloatsPlain(x, begin, end);
    });
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (float v : sums) total += v;
  }
  if (total == 12345.f) std::puts("");  // keeps the reads
  std::sort(times.begin(), times.end());
  return double(n) * 4 / times[4] / 1e9;
}

}  // namespace bench
}  // namespace onnx_mini
