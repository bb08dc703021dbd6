#include "ops/gemv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/float_vector.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"

// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

using float_vector::Load;
using float_vector::Store;

// Columns [j0, j1) of C for B stored (k, n), summed over B's rows [p0, p1):
// C's slice is set to the bias (or zero) and each group of four rows of B is
// added into it (an axpy over the slice, which stays in L1), so B is read row
// after row, contiguously: walking a narrow column block down the rows
// instead crosses a page every few rows and reads B at ~80% of the
// bandwidth the row order reaches.
template <int kBytes, int M>
[[gnu::always_inline]] inline void ColumnsKN(const float* a, const float* b, const float* bias, float* c,
                                             int64_t k, int64_t n, int64_t j0, int64_t j1, int64_t p0,
                                             int64_t p1) {
  using F = typename float_vector::V<kBytes>::F;
  constexpr int64_t L = kBytes / 4;
  for (int r = 0; r < M; ++r)
    for (int64_t j = j0; j < j1; ++j) c[r * n + j] = bias ? bias[j] : 0.0f;
  int64_t p = p0;
  for (; p + 4 <= p1; p += 4) {
    const float* b0 = b + p * n;
    const float *b1 = b0 + n, *b2 = b1 + n, *b3 = b2 + n;
    float x[M][4];
    for (int r = 0; r < M; ++r)
      for (int q = 0; q < 4; ++q) x[r][q] = a[r * k + p + q];
    int64_t j = j0;
    for (; j + L <= j1; j += L) {
      const F v0 = Load<F>(b0 + j), v1 = Load<F>(b1 + j), v2 = Load<F>(b2 + j), v3 = Load<F>(b3 + j);
      for (int r = 0; r < M; ++r) {
        float* out = c + r * n + j;
        Store(out, Load<F>(out) + ((x[r][0] * v0 + x[r][1] * v1) + (x[r][2] * v2 + x[r][3] * v3)));
      }
    }
    for (; j < j1; ++j)
      for (int r = 0; r < M; ++r)
        c[r * n + j] += (x[r][0] * b0[j] + x[r][1] * b1[j]) + (x[r][2] * b2[j] + x[r][3] * b3[j]);
  }
  for (; p < p1; ++p)
    for (int r = 0; r < M; ++r) {
      const float x = a[r * k + p];
      for (int64_t j = j0; j < j1; ++j) c[r * n + j] += x * b[p * n + j];
    }
}

// Columns [j0, j1) of C for B stored (n, k): dot products of A's rows with
// B's rows, four rows of B at a time for independent accumulators.
template <int kBytes, int M>
[[gnu::always_inline]] inline void ColumnsNK(const float* a, const float* b, const float* bias, float* c,
                                             int64_t k, int64_t n, int64_t j0, int64_t j1) {
  using F = typename float_vector::V<kBytes>::F;
  constexpr int64_t L = kBytes / 4;
  auto sum = [](F v) {
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

// One chunk of the product: columns [j0, j1), and for B stored (k, n) B's
// rows [p0, p1) only (the caller sums the row slices).
template <int kBytes>
[[gnu::always_inline]] inline void Columns(const float* a, const float* b, const float* bias, float* c, int64_t m,
                                           int64_t k, int64_t n, bool trans_b, int64_t j0, int64_t j1, int64_t p0,
                                           int64_t p1) {
  auto run = [&](auto rows) {
    constexpr int M = decltype(rows)::value;
    if (trans_b) ColumnsNK<kBytes, M>(a, b, bias, c, k, n, j0, j1);
    else ColumnsKN<kBytes, M>(a, b, bias, c, k, n, j0, j1, p0, p1);
  };
  switch (m) {
    case 1: return run(std::integral_constant<int, 1>());
    case 2: return run(std::integral_constant<int, 2>());
    case 3: return run(std::integral_constant<int, 3>());
    default: return run(std::integral_constant<int, 4>());
  }
}

void ColumnsBaseline(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
                     bool trans_b, int64_t j0, int64_t j1, int64_t p0, int64_t p1) {
  Columns<16>(a, b, bias, c, m, k, n, trans_b, j0, j1, p0, p1);
}
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void ColumnsAvx2(const float* a, const float* b, const float* bias, float* c, int64_t m,
                                             int64_t k, int64_t n, bool trans_b, int64_t j0, int64_t j1, int64_t p0,
                                             int64_t p1) {
  Columns<32>(a, b, bias, c, m, k, n, trans_b, j0, j1, p0, p1);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void ColumnsAvx512(
    const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n, bool trans_b,
    int64_t j0, int64_t j1, int64_t p0, int64_t p1) {
  Columns<64>(a, b, bias, c, m, k, n, trans_b, j0, j1, p0, p1);
}
#endif

}  // namespace

void GemvF32(const float* a, const float* b, const float* bias, float* c, int64_t m, int64_t k, int64_t n,
             bool trans_b, int threads) {
  auto columns = ColumnsBaseline;
#if defined(__x86_64__)
  switch (ActiveCpuTarget()) {
    case CpuTarget::kAvx512: columns = ColumnsAvx512; break;
    case CpuTarget::kAvx2: columns = ColumnsAvx2; break;
    default: break;
  }
#endif
  if (k * n < (int64_t{1} << 14)) threads = 1;  // small products stay on one thread
  if (trans_b) {  // 64 rows of B per chunk
    ParallelFor(threads, n, 64, [&](int64_t j0, int64_t j1) { columns(a, b, bias, c, m, k, n, true, j0, j1, 0, k); });
    return;
  }
  // B stored (k, n): chunks are (row slice, column block). Column blocks of at
  // most 2048 / m columns keep C's slice in L1 and, with one block per
  // thread, each row of B is read in long runs. B's rows are cut into
  // `slices` of at least 128 rows, summed into separate buffers and added in
  // order afterwards: threads then share narrow products by reading disjoint
  // contiguous parts of B, and the slicing (so the rounding) does not depend
  // on the thread count.
  const int64_t slices = std::clamp<int64_t>(k / 128, 1, 4);
  const int64_t width = std::min(((n * slices + threads - 1) / threads + 15) & ~int64_t{15}, 2048 / m);
  const int64_t blocks = (n + width - 1) / width;
  thread_local std::vector<float> scratch;
  scratch.resize(size_t((slices - 1) * m * n));
  float* const partial = scratch.data();  // slices 1.. of C (the workers have their own `scratch`)
  const int64_t rows = (k + slices - 1) / slices;
  ParallelFor(threads, slices * blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t slice = i / blocks, j0 = i % blocks * width, p0 = slice * rows;
      float* out = slice == 0 ? c : partial + (slice - 1) * m * n;
      columns(a, b, slice == 0 ? bias : nullptr, out, m, k, n, false, j0, std::min(j0 + width, n), p0,
              std::min(p0 + rows, k));
    }
  });
  for (int64_t slice = 1; slice < slices; ++slice) {
    const float* add = partial + (slice - 1) * m * n;
    for (int64_t i = 0; i < m * n; ++i) c[i] += add[i];
  }
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
