#include "kernels/gemm/gemv.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "kernels/vec/float_vector.h"
#include "runtime/thread_pool.h"

// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

using float_vector::Load;
using float_vector::Store;

// Columns [j0, j1) of C for B stored (k, n): per row of B, each of A's rows
// adds a[k] * B[k, j] into accumulators that stay in registers for a block
// of 4 vectors of columns; the row of B is read once for all of A's rows.
template <int kBytes, int M>
[[gnu::always_inline]] inline void ColumnsKN(const float* a, const float* b, const float* bias, float* c,
                                             int64_t k, int64_t n, int64_t j0, int64_t j1) {
  using F = typename float_vector::V<kBytes>::F;
  constexpr int64_t L = kBytes / 4;
  int64_t j = j0;
  for (; j + 4 * L <= j1; j += 4 * L) {
    F acc[M][4] = {};
    for (int64_t p = 0; p < k; ++p) {
      const float* row = b + p * n + j;
      const F b0 = Load<F>(row), b1 = Load<F>(row + L), b2 = Load<F>(row + 2 * L), b3 = Load<F>(row + 3 * L);
      for (int r = 0; r < M; ++r) {
        const float x = a[r * k + p];
        acc[r][0] += x * b0;
        acc[r][1] += x * b1;
        acc[r][2] += x * b2;
        acc[r][3] += x * b3;
      }
    }
    for (int r = 0; r < M; ++r)
      for (int v = 0; v < 4; ++v) {
        F out = acc[r][v];
        if (bias) out += Load<F>(bias + j + v * L);
        Store(c + r * n + j + v * L, out);
      }
  }
  for (; j + L <= j1; j += L) {
    F acc[M] = {};
    for (int64_t p = 0; p < k; ++p) {
      const F bv = Load<F>(b + p * n + j);
      for (int r = 0; r < M; ++r) acc[r] += a[r * k + p] * bv;
    }
    for (int r = 0; r < M; ++r) Store(c + r * n + j, bias ? acc[r] + Load<F>(bias + j) : acc[r]);
  }
  for (; j < j1; ++j)
    for (int r = 0; r < M; ++r) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[r * k + p] * b[p * n + j];
      c[r * n + j] = bias ? acc + bias[j] : acc;
    }
}

// Columns [j0, j1) of C for B stored (n, k): dot products of A's rows with
// B's rows, four rows of B at a time for independent accumulators.
template <int kBytes, int M>
[[gnu::always_inline]] inline void ColumnsNK(const float* a, const float* b, const float* bias, float* c,
                                             int64_t k, int64_t n, int64_t j0, int64_t j1) {
  using F = typename float_vector::V<kBytes>::F;
  constexpr int64_t L = kBytes / 4;
  auto sum = [](F v) __attribute__((always_inline)) {  // (see Columns)
    float s = 0;
    for (int64_t l = 0; l < L; ++l) s += v[l];
    return s;
  };
  for (int64_t j = j0; j < j1; j += 4) {
    const int64_t cols = std::min<int64_t>(4, j1 - j);
    F acc[M][4] = {};
    float tail[M][4] = {};
    int64_t p = 0;
    for (; p + L <= k; p += L) {
      F x[M];
      for (int r = 0; r < M; ++r) x[r] = Load<F>(a + r * k + p);
      for (int64_t q = 0; q < cols; ++q) {
        const F bv = Load<F>(b + (j + q) * k + p);
        for (int r = 0; r < M; ++r) acc[r][q] += x[r] * bv;
      }
    }
    for (; p < k; ++p)
      for (int64_t q = 0; q < cols; ++q)
        for (int r = 0; r < M; ++r) tail[r][q] += a[r * k + p] * b[(j + q) * k + p];
    for (int r = 0; r < M; ++r)
      for (int64_t q = 0; q < cols; ++q) {
        const float v = sum(acc[r][q]) + tail[r][q];
        c[r * n + j + q] = bias ? v + bias[j + q] : v;
      }
  }
}

template <int kBytes>
[[gnu::always_inline]] inline void Columns(const float* a, const float* b, const float* bias, float* c, int64_t m,
                                           int64_t k, int64_t n, bool trans_b, int64_t j0, int64_t j1) {
  // always_inline: a lambda not inlined is a function of its own, compiled
  // without the caller's target attribute (baseline SSE2 for the AVX-512
  // build: 2 and more rows ran ~20x slower than one).
  auto run = [&](auto rows) __attribute__((always_inline)) {
    constexpr int M = decltype(rows)::value;
    if (trans_b) ColumnsNK<kBytes, M>(a, b, bias, c, k, n, j0, j1);
    else ColumnsKN<kBytes, M>(a, b, bias, c, k, n, j0, j1);
  };
  switch (m) {
    case 1: return run(std::integral_constant<int, 1>());
    case 2: return run(std::integral_constant<int, 2>());
    case 3: return run(std::integral_constant<int, 3>());
    default: return run(std::integral_constant<int, 4>());
  }
}

void ColumnsBaseline(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
                     bool trans_b, int64_t j0, int64_t j1) {
  Columns<16>(a, b, bias, c, m, k, n, trans_b, j0, j1);
}
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void ColumnsAvx2(const float* a, const float* b, const float* bias, float* c, int64_t m,
                                             int64_t k, int64_t n, bool trans_b, int64_t j0, int64_t j1) {
  Columns<32>(a, b, bias, c, m, k, n, trans_b, j0, j1);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void ColumnsAvx512(
    const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n, bool trans_b,
    int64_t j0, int64_t j1) {
  Columns<64>(a, b, bias, c, m, k, n, trans_b, j0, j1);
}
#endif

}  // namespace

void GemvF32(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
             bool trans_b, int threads) {
  using ColumnsFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, bool,
                             int64_t, int64_t);
  static const CpuDispatchTable<ColumnsFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, ColumnsAvx512},
      {CpuTarget::kAvx2, ColumnsAvx2},
#endif
      {CpuTarget::kBaseline, ColumnsBaseline},
  };
  const ColumnsFn columns = table.Active();
  // 64 columns per chunk: a block of four AVX-512 vectors (for B stored
  // (k, n)), and 64 rows of B (n, k). Small products stay on one thread
  // (the pool's size rule as GemmPackedF32 counts it: a multiply-add a
  // quarter unit, B read once at half a unit a float).
  const int64_t grain = 64;
  threads = ThreadsForWork(threads, double(m) * double(k) * double(n) / 4 + double(k) * double(n) / 2);
  ParallelFor(threads, n, grain,
              [&](int64_t j0, int64_t j1) { columns(a, b, bias, c, m, k, n, trans_b, j0, j1); });
}

void GemvF32Reference(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k,
                      int64_t n, bool trans_b) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p) acc += double(a[r * k + p]) * double(trans_b ? b[j * k + p] : b[p * n + j]);
      c[r * n + j] = float(acc);
    }
}

}  // namespace onnx_mini
