#include "kernels/gemm/gemm.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu_dispatch.h"
#include "runtime/checked.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

// Rows of A per register tile: 6 x 4 accumulator vectors, 4 vectors of the
// panel's row and a broadcast fit the 32 registers. 24 independent FMA
// chains: Zen 5 needs 8 in flight (latency 4 x 2 pipes), Zen 4 4; per row of
// the panel, 4 loads of B and 6 broadcasts feed 24 FMAs.
constexpr int kTileRows = 6;
// Rows of a panel per block: 128 KiB, which stays in L2 while every tile of
// A passes over it.
constexpr int64_t kBlockDepth = 512;

#if defined(__x86_64__)
#define ONNX_MINI_GEMM_TARGET gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")

// The columns of a panel that exist (the last panel may be partial), as
// masks of the panel's four vectors.
struct PanelMasks {
  __mmask16 v[4];
};

// C's tile (R rows from c, row stride ldc) = [bias or zero if `first`, else
// C] + R rows of A (from a, row stride lda) x `depth` rows of a panel.
// Meanwhile `lines` cache lines from `prefetch` (the next block of B) are
// brought into L2, spread over the loop.
template <int R>
[[ONNX_MINI_GEMM_TARGET, gnu::always_inline]] inline void Tile(const float* a, int64_t lda, const float* panel,
                                                               int64_t depth, float* c, int64_t ldc,
                                                               const PanelMasks& mask, const float* bias, bool first,
                                                               const char* prefetch, int64_t lines) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 4; ++v)
      acc[r][v] = !first ? _mm512_maskz_loadu_ps(mask.v[v], c + r * ldc + 16 * v)
                  : bias ? _mm512_maskz_loadu_ps(mask.v[v], bias + 16 * v)
                         : _mm512_setzero_ps();
  const int64_t stride = lines > 0 ? std::max<int64_t>(1, depth / lines) : depth + 1;
  int64_t issued = 0, countdown = 0;  // a prefetch every `stride` rows
  for (int64_t p = 0; p < depth; ++p) {
    const float* row = panel + p * kGemmPanel;
    const __m512 b0 = _mm512_loadu_ps(row), b1 = _mm512_loadu_ps(row + 16), b2 = _mm512_loadu_ps(row + 32),
                 b3 = _mm512_loadu_ps(row + 48);
    if (issued < lines && countdown-- == 0) {
      _mm_prefetch(prefetch + 64 * issued++, _MM_HINT_T1);
      countdown = stride - 1;
    }
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * lda + p]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 4; ++v) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, mask.v[v], acc[r][v]);
}

// The rows of A's tiles: six at a time, but a last tile of one or two rows
// (a 1-row tile has four FMA chains, too few for the FMA latency on two
// pipes; a 2-row one reads four vectors of B per eight FMAs) joins the tile
// before it and the two split evenly: 128 rows are 20 x 6 + 4 + 4.
struct TileRows {
  int64_t full, tiles, first_split;  // tiles [full, tiles) are the split or short ones
  explicit TileRows(int64_t m) {
    const int64_t rem = m % kTileRows;
    full = m / kTileRows;
    if (full > 0 && rem > 0 && rem <= 2) {
      --full;
      tiles = full + 2;
      first_split = (kTileRows + rem + 1) / 2;
    } else {
      tiles = full + (rem > 0);
      first_split = rem;
    }
  }
  int64_t start(int64_t t) const { return t * kTileRows + (t > full ? first_split - kTileRows : 0); }
};

// Panels [j0, j1) of C: for each block of a panel, every tile of A's rows.
[[ONNX_MINI_GEMM_TARGET]] void PanelsAvx512(const float* a, const float* packed, const float* bias, float* c,
                                            int64_t m, int64_t k, int64_t n, int64_t j0, int64_t j1) {
  const TileRows rows(m);
  const int64_t tiles = rows.tiles;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kGemmPanel, cols = std::min(kGemmPanel, n - col);
    PanelMasks mask;
    for (int v = 0; v < 4; ++v) {
      const int64_t valid = std::clamp<int64_t>(cols - 16 * v, 0, 16);
      mask.v[v] = __mmask16((1u << valid) - 1);
    }
    const float* panel = packed + j * k * kGemmPanel;
    for (int64_t k0 = 0; k0 < k; k0 += kBlockDepth) {
      const int64_t depth = std::min(kBlockDepth, k - k0);
      const float* block = panel + k0 * kGemmPanel;
      // The next block this thread multiplies: the panel's next rows, or the
      // next panel's first.
      const float* next = k0 + depth < k ? block + depth * kGemmPanel : j + 1 < j1 ? panel + k * kGemmPanel : nullptr;
      const int64_t next_depth = k0 + depth < k ? std::min(kBlockDepth, k - k0 - depth) : std::min(kBlockDepth, k);
      const int64_t next_lines = next ? next_depth * kGemmPanel * int64_t(sizeof(float)) / 64 : 0;
      const int64_t per_tile = (next_lines + tiles - 1) / tiles;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t i = rows.start(t), height = (t + 1 < tiles ? rows.start(t + 1) : m) - i;
        const float* ta = a + i * k + k0;
        float* tc = c + i * n + col;
        const float* tb = bias ? bias + col : nullptr;
        const char* pf = next ? reinterpret_cast<const char*>(next) + 64 * t * per_tile : nullptr;
        const int64_t lines = std::clamp<int64_t>(next_lines - t * per_tile, 0, per_tile);
        switch (height) {
          case 1: Tile<1>(ta, k, block, depth, tc, n, mask, tb, k0 == 0, pf, lines); break;
          case 2: Tile<2>(ta, k, block, depth, tc, n, mask, tb, k0 == 0, pf, lines); break;
          case 3: Tile<3>(ta, k, block, depth, tc, n, mask, tb, k0 == 0, pf, lines); break;
          case 4: Tile<4>(ta, k, block, depth, tc, n, mask, tb, k0 == 0, pf, lines); break;
          case 5: Tile<5>(ta, k, block, depth, tc, n, mask, tb, k0 == 0, pf, lines); break;
          default: Tile<6>(ta, k, block, depth, tc, n, mask, tb, k0 == 0, pf, lines); break;
        }
      }
    }
  }
}

// AVX2 (16 registers): a tile is R rows of A by V vectors (8 floats each) of
// a panel's strip of 8V columns; a block of the panel is multiplied strip by
// strip (the strip, depth x 8V floats, stays in L1 while every tile of A's
// rows passes over it). R x V accumulators, V vectors of B and a broadcast
// fit the registers: 6 x 2 for a prefill (12 FMA chains: two 256-bit pipes
// of latency 4 need 8), 2 x 4 and 1 x 8 for a decode step's few rows (B's
// row read whole, as the GEMV does).
#define ONNX_MINI_GEMM_AVX2_TARGET gnu::target("avx2,fma")
constexpr int64_t kBlockDepthAvx2 = 512;  // a 16-column strip: 32 KiB (a decode step's 64: 128 KiB, in L2)

// C's strip tile (R rows from c, row stride ldc; `valid` columns of 8V are
// C's) = [bias or zero if `first`, else C] + R rows of A x `depth` rows of
// the strip (row stride kGemmPanel). `lines` cache lines of `prefetch` are
// brought into L2 meanwhile, spread over the loop.
template <int R, int V>
[[ONNX_MINI_GEMM_AVX2_TARGET, gnu::always_inline]] inline void TileAvx2(const float* a, int64_t lda,
                                                                        const float* strip, int64_t depth, float* c,
                                                                        int64_t ldc, int64_t valid, const float* bias,
                                                                        bool first, const char* prefetch,
                                                                        int64_t lines) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i mask[V];
  for (int v = 0; v < V; ++v) mask[v] = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(valid - 8 * v)), lane);
  const bool whole = valid >= 8 * V;
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      const float* from = !first ? c + r * ldc + 8 * v : bias ? bias + 8 * v : nullptr;
      acc[r][v] = from == nullptr ? _mm256_setzero_ps()
                  : whole         ? _mm256_loadu_ps(from)
                                  : _mm256_maskload_ps(from, mask[v]);
    }
  const int64_t stride = lines > 0 ? std::max<int64_t>(1, depth / lines) : depth + 1;
  int64_t issued = 0, countdown = 0;  // a prefetch every `stride` rows
  for (int64_t p = 0; p < depth; ++p) {
    const float* row = strip + p * kGemmPanel;
    __m256 b[V];
    for (int v = 0; v < V; ++v) b[v] = _mm256_loadu_ps(row + 8 * v);
    if (issued < lines && countdown-- == 0) {
      _mm_prefetch(prefetch + 64 * issued++, _MM_HINT_T1);
      countdown = stride - 1;
    }
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + p);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(x, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      if (whole) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
      else _mm256_maskstore_ps(c + r * ldc + 8 * v, mask[v], acc[r][v]);
    }
}

// The strips of one block for tiles of V vectors: rows of A six at a time
// (as TileRows) when V is 2, all rows in one tile otherwise (m <= 8 / V).
template <int V>
[[ONNX_MINI_GEMM_AVX2_TARGET]] void BlockAvx2(const float* a, const float* block, int64_t depth, const float* bias,
                                              float* c, int64_t m, int64_t k, int64_t n, int64_t cols, bool first,
                                              const char* next, int64_t next_lines) {
  const TileRows rows(V == 2 ? m : 1);
  const int64_t tiles = V == 2 ? rows.tiles : 1;
  constexpr int64_t kStrip = 8 * V;
  const int64_t strips = (cols + kStrip - 1) / kStrip;
  const int64_t per_tile = (next_lines + strips * tiles - 1) / (strips * tiles);
  int64_t step = 0;
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t valid = std::min(kStrip, cols - s * kStrip);
    for (int64_t t = 0; t < tiles; ++t, ++step) {
      const int64_t i = V == 2 ? rows.start(t) : 0;
      const int64_t height = V == 2 ? (t + 1 < tiles ? rows.start(t + 1) : m) - i : m;
      const float* ta = a + i * k;
      float* tc = c + i * n + s * kStrip;
      const float* tb = bias ? bias + s * kStrip : nullptr;
      const float* strip = block + s * kStrip;
      const char* pf = next ? next + 64 * step * per_tile : nullptr;
      const int64_t lines = std::clamp<int64_t>(next_lines - step * per_tile, 0, per_tile);
      if constexpr (V == 2) {
        switch (height) {
          case 1: TileAvx2<1, 2>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines); break;
          case 2: TileAvx2<2, 2>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines); break;
          case 3: TileAvx2<3, 2>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines); break;
          case 4: TileAvx2<4, 2>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines); break;
          case 5: TileAvx2<5, 2>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines); break;
          default: TileAvx2<6, 2>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines); break;
        }
      } else {
        TileAvx2<8 / V, V>(ta, k, strip, depth, tc, n, valid, tb, first, pf, lines);
      }
    }
  }
}

// Panels [j0, j1) of C: for each block of a panel, every strip, and in each
// strip every tile of A's rows.
[[ONNX_MINI_GEMM_AVX2_TARGET]] void PanelsAvx2(const float* a, const float* packed, const float* bias, float* c,
                                               int64_t m, int64_t k, int64_t n, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t col = j * kGemmPanel, cols = std::min(kGemmPanel, n - col);
    const float* panel = packed + j * k * kGemmPanel;
    for (int64_t k0 = 0; k0 < k; k0 += kBlockDepthAvx2) {
      const int64_t depth = std::min(kBlockDepthAvx2, k - k0);
      const float* block = panel + k0 * kGemmPanel;
      const float* next =
          k0 + depth < k ? block + depth * kGemmPanel : j + 1 < j1 ? panel + k * kGemmPanel : nullptr;
      const int64_t next_depth =
          k0 + depth < k ? std::min(kBlockDepthAvx2, k - k0 - depth) : std::min(kBlockDepthAvx2, k);
      const int64_t next_lines = next ? next_depth * kGemmPanel * int64_t(sizeof(float)) / 64 : 0;
      const char* pf = reinterpret_cast<const char*>(next);
      const float* tb = bias ? bias + col : nullptr;
      if (m == 1) BlockAvx2<8>(a + k0, block, depth, tb, c + col, m, k, n, cols, k0 == 0, pf, next_lines);
      else if (m == 2) BlockAvx2<4>(a + k0, block, depth, tb, c + col, m, k, n, cols, k0 == 0, pf, next_lines);
      else BlockAvx2<2>(a + k0, block, depth, tb, c + col, m, k, n, cols, k0 == 0, pf, next_lines);
    }
  }
}
#undef ONNX_MINI_GEMM_AVX2_TARGET
#endif

using PanelsFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t,
                          int64_t);
// The packed GEMM's builds: AVX-512 and AVX2, on the same panels (null below
// them: oneDNN runs those products).
const CpuDispatchTable<PanelsFn>& PanelsTable() {
  static const CpuDispatchTable<PanelsFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, PanelsAvx512},
      {CpuTarget::kAvx2, PanelsAvx2},
#endif
      {CpuTarget::kBaseline, nullptr},
  };
  return table;
}

}  // namespace

bool GemmPackedAvailable() { return PanelsTable().Active() != nullptr; }

int64_t GemmPackedSize(int64_t k, int64_t n) {
  const int64_t panels = (n + kGemmPanel - 1) / kGemmPanel;
  const auto rows = CheckedMul(panels, k);
  const auto size = rows ? CheckedMul(*rows, kGemmPanel) : std::nullopt;
  return size ? *size : -1;
}

void GemmPackB(const float* b, int64_t k, int64_t n, bool trans_b, float* packed) {
  const int64_t panels = (n + kGemmPanel - 1) / kGemmPanel;
  for (int64_t j = 0; j < panels; ++j) {
    float* panel = packed + j * k * kGemmPanel;
    const int64_t col = j * kGemmPanel, cols = std::min(kGemmPanel, n - col);
    if (trans_b) {  // column by column: B's rows (n, k) are read contiguously
      for (int64_t q = 0; q < kGemmPanel; ++q)
        for (int64_t p = 0; p < k; ++p) panel[p * kGemmPanel + q] = q < cols ? b[(col + q) * k + p] : 0.0f;
    } else {  // row by row: a panel's row is a contiguous run of B's row
      for (int64_t p = 0; p < k; ++p) {
        std::copy(b + p * n + col, b + p * n + col + cols, panel + p * kGemmPanel);
        std::fill(panel + p * kGemmPanel + cols, panel + (p + 1) * kGemmPanel, 0.0f);
      }
    }
  }
}

void GemmPackedF32(const float* a, const float* packed, const float* bias, float* c, int64_t m, int64_t k,
                   int64_t n, int threads) {
  // Every build reads the same panels: the active one, or the host's if a
  // test has restricted the features below every build since B was packed.
  PanelsFn run = PanelsTable().Active();
  if (run == nullptr) run = PanelsTable().For(HostCpuFeatures()).entries;
  if (run == nullptr) return;
  const int64_t panels = (n + kGemmPanel - 1) / kGemmPanel;
  // The pool's size rule: a multiply-add a quarter unit (vectorized, as
  // MatMul counts it), plus B read once at half a unit a float (as a copy:
  // a few-row product is bound by that read, which two cores' caches share).
  threads = ThreadsForWork(threads, double(m) * double(k) * double(n) / 4 + double(k) * double(n) / 2);
  // One contiguous range of panels per thread, so each prefetches its own next block.
  const int64_t grain = (panels + threads - 1) / threads;
  ParallelFor(threads, panels, grain,
              [&](int64_t j0, int64_t j1) { run(a, packed, bias, c, m, k, n, j0, j1); });
}

}  // namespace onnx_mini
