#include "kernels/quant/panel_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu_dispatch.h"
#include "kernels/gemm/onednn.h"
#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_digits.h"
#include "kernels/quant/panel_gemv.h"
#include "runtime/thread_pool.h"

// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

constexpr int64_t kCols = kQuantPanelCols;
constexpr int64_t kGroup = kQuantPanelGroupBytes;

// What a tile reads besides the codes.
struct TileArgs {
  const QuantPanels* w;
  const int8_t* qa;     // rows of lda int8 values (padded_k, zero-padded)
  int64_t lda;
  const float* ascale;  // float A: m x k_blocks, sa
  const float* azero;   // float A: m x k_blocks, sa * sum qa
  const int32_t* azq;   // float A, zmm, every zero point one integer z: m x k_blocks, z * sum qa (azero unread)
  const int32_t* asum;  // integer A: m x k_blocks, sum qa
  const int16_t* qa16;  // the AVX2 build's 8-bit tiles: qa widened to int16 (rows of lda)
  int32_t a_shift;      // integer A: d with a - za = qa + d
  float a_scale;        // integer A
  const float* bias;
  float* c;             // rows of w->n
  bool stream;          // few rows: prefetch the codes ahead (a pass over memory)
  bool digits;          // float A as kPanelDigits digit arrays a row (qa + r * lda + d * padded_k)
};

// Rows [r0, r0 + rows) x panels [p0, p0 + panels) of C. The SIMD builds'
// tiles take their sizes from the template and ignore rows and panels.
using TileFn = void (*)(const TileArgs&, int64_t r0, int rows, int64_t p0, int panels);

inline int64_t Load64(const int16_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline int32_t Load32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The real k of block b (the last may be short).
inline int32_t BlockLen(const QuantPanels& w, int64_t b) { return int32_t(std::min(w.block, w.k - b * w.block)); }

// Bytes of code ahead a streaming tile prefetches in each panel.
constexpr int64_t kPrefetchBytes = 2048;

// ---- The plain build: integer loops, one (row, panel) at a time ----

// y = float(sum) * s + bias in two roundings (no fused multiply-add: the
// integer reference's and onnxruntime's value).
inline float FinishInt(uint32_t sum, float s, const float* bias, int64_t col) {
  float y = float(int32_t(sum)) * s;
#if defined(__x86_64__)
  asm("" : "+x"(y));
#endif
  return bias ? y + bias[col] : y;
}

template <bool kFloat>
[[gnu::always_inline]] inline void PlainTile(const TileArgs& g, int64_t r0, int rows, int64_t p0, int panels) {
  const QuantPanels& w = *g.w;
  const int64_t kb = w.k_blocks, bb = w.block_bytes();
  for (int64_t p = p0; p < p0 + panels; ++p)
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const int8_t* ar = g.qa + r * g.lda;
      float acc[kCols] = {};
      uint32_t isum[kCols] = {};
      for (int64_t b = 0; b < kb; ++b) {
        const uint8_t* q = w.codes + (p * kb + b) * bb;
        const int8_t* ab = ar + b * w.block;
        int32_t dot[kCols] = {};
        if (w.bits == 8) {
          for (int64_t gi = 0; gi < w.block / 4; ++gi, q += kGroup)
            for (int c = 0; c < kCols; ++c)
              for (int j = 0; j < 4; ++j) dot[c] += int32_t(q[c * 4 + j]) * ab[4 * gi + j];
        } else {
          for (int64_t gi = 0; gi < w.block / 8; ++gi, q += kGroup)
            for (int c = 0; c < kCols; ++c)
              for (int j = 0; j < 4; ++j)
                dot[c] += int32_t(q[c * 4 + j] & 15) * ab[8 * gi + j] + int32_t(q[c * 4 + j] >> 4) * ab[8 * gi + 4 + j];
        }
        const int64_t at = (p * kb + b) * kCols;
        if constexpr (kFloat) {
          const float sa = g.ascale[r * kb + b], az = g.azero[r * kb + b];
          for (int c = 0; c < kCols; ++c)
            acc[c] += float(dot[c]) * (w.scales[at + c] * sa) - w.scales[at + c] * w.zeros[at + c] * az;
        } else {
          const uint32_t as = uint32_t(g.asum[r * kb + b]), len = uint32_t(BlockLen(w, b));
          for (int c = 0; c < kCols; ++c) {
            const uint32_t zu = uint32_t(int32_t(w.zeros[at + c]));
            isum[c] += uint32_t(dot[c]) + uint32_t(g.a_shift) * (uint32_t(w.code_sums[at + c]) - len * zu) - zu * as;
          }
        }
      }
      const int64_t col0 = p * kCols, cols = std::min(kCols, w.n - col0);
      float* y = g.c + r * w.n + col0;
      for (int64_t c = 0; c < cols; ++c) {
        if constexpr (kFloat) y[c] = g.bias ? acc[c] + g.bias[col0 + c] : acc[c];
        else y[c] = FinishInt(isum[c], g.a_scale * w.scales[p * kb * kCols + c], g.bias, col0 + c);
      }
    }
}

template <bool kFloat>
void PlainBaseline(const TileArgs& g, int64_t r0, int rows, int64_t p0, int panels) {
  PlainTile<kFloat>(g, r0, rows, p0, panels);
}

#if defined(__x86_64__)
// ---- AVX-512 VNNI: a panel is one zmm of 16 int32 columns ----

#define ONNX_MINI_PG_ZMM gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")

template <int Bits, int R, int P, bool kFloat>
struct Zmm {
  [[ONNX_MINI_PG_ZMM]] static void Run(const TileArgs& g, int64_t r0, int, int64_t p0, int) {
    const QuantPanels& w = *g.w;
    const int64_t kb = w.k_blocks, bb = w.block_bytes(), groups = bb / kGroup;
    const uint8_t* q[P];
    for (int p = 0; p < P; ++p) q[p] = w.codes + (p0 + p) * kb * bb;
    const int8_t* ar[R];
    for (int r = 0; r < R; ++r) ar[r] = g.qa + (r0 + r) * g.lda;
    const __m512i low = _mm512_set1_epi8(15);
    __m512i dot[R][P];
    __m512 acc[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) {
        dot[r][p] = _mm512_setzero_si512();
        acc[r][p] = _mm512_setzero_ps();
      }
    for (int64_t b = 0; b < kb; ++b) {
      if constexpr (kFloat)
        for (int r = 0; r < R; ++r)
          for (int p = 0; p < P; ++p) dot[r][p] = _mm512_setzero_si512();
      const int64_t k0 = b * w.block;
      for (int64_t gi = 0; gi < groups; ++gi) {
        if (g.stream)
          for (int p = 0; p < P; ++p) _mm_prefetch(reinterpret_cast<const char*>(q[p] + kPrefetchBytes), _MM_HINT_T0);
        if constexpr (Bits == 8) {
          __m512i v[P];
          for (int p = 0; p < P; ++p) {
            v[p] = _mm512_loadu_si512(q[p]);
            q[p] += kGroup;
          }
          for (int r = 0; r < R; ++r) {
            const __m512i x = _mm512_set1_epi32(Load32(ar[r] + k0 + 4 * gi));
            for (int p = 0; p < P; ++p) dot[r][p] = _mm512_dpbusd_epi32(dot[r][p], v[p], x);
          }
        } else {
          __m512i lo[P], hi[P];
          for (int p = 0; p < P; ++p) {
            const __m512i v = _mm512_loadu_si512(q[p]);
            lo[p] = _mm512_and_si512(v, low);
            hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            q[p] += kGroup;
          }
          for (int r = 0; r < R; ++r) {
            const __m512i x0 = _mm512_set1_epi32(Load32(ar[r] + k0 + 8 * gi));
            const __m512i x1 = _mm512_set1_epi32(Load32(ar[r] + k0 + 8 * gi + 4));
            for (int p = 0; p < P; ++p) {
              dot[r][p] = _mm512_dpbusd_epi32(dot[r][p], lo[p], x0);
              dot[r][p] = _mm512_dpbusd_epi32(dot[r][p], hi[p], x1);
            }
          }
        }
      }
      if constexpr (kFloat) {
        for (int p = 0; p < P; ++p) {
          const int64_t at = ((p0 + p) * kb + b) * kCols;
          const __m512 sc = _mm512_loadu_ps(w.scales + at);
          const __m512 zs = _mm512_mul_ps(sc, _mm512_loadu_ps(w.zeros + at));
          for (int r = 0; r < R; ++r) {
            const __m512 sa = _mm512_set1_ps(g.ascale[(r0 + r) * kb + b]);
            if (g.azq) {  // the zero point's term exact in int32: one FP operation fewer a (row, panel, block)
              const __m512i d = _mm512_sub_epi32(dot[r][p], _mm512_set1_epi32(g.azq[(r0 + r) * kb + b]));
              acc[r][p] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, d), _mm512_mul_ps(sc, sa), acc[r][p]);
              continue;
            }
            const __m512 az = _mm512_set1_ps(g.azero[(r0 + r) * kb + b]);
            acc[r][p] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, dot[r][p]), _mm512_mul_ps(sc, sa), acc[r][p]);
            acc[r][p] = _mm512_fnmadd_ps(zs, az, acc[r][p]);
          }
        }
      }
    }
    for (int p = 0; p < P; ++p) {
      const int64_t col0 = (p0 + p) * kCols, cols = std::min(kCols, w.n - col0);
      const __mmask16 mask = __mmask16((1u << cols) - 1);
      const __m512 bias = g.bias ? _mm512_maskz_loadu_ps(mask, g.bias + col0) : _mm512_setzero_ps();
      if constexpr (kFloat) {
        for (int r = 0; r < R; ++r)
          _mm512_mask_storeu_ps(g.c + (r0 + r) * w.n + col0, mask, _mm512_add_ps(acc[r][p], bias));
      } else {
        __m512i corr[R];
        for (int r = 0; r < R; ++r) corr[r] = _mm512_setzero_si512();
        for (int64_t b = 0; b < kb; ++b) {
          const int64_t at = ((p0 + p) * kb + b) * kCols;
          const __m512i zu = _mm512_maskz_cvtps_epi32(0xFFFF, _mm512_loadu_ps(w.zeros + at));
          const __m512i cs = _mm512_loadu_si512(w.code_sums + at);
          const __m512i t = _mm512_mullo_epi32(
              _mm512_set1_epi32(g.a_shift), _mm512_sub_epi32(cs, _mm512_mullo_epi32(_mm512_set1_epi32(BlockLen(w, b)), zu)));
          for (int r = 0; r < R; ++r)
            corr[r] = _mm512_add_epi32(
                corr[r], _mm512_sub_epi32(t, _mm512_mullo_epi32(zu, _mm512_set1_epi32(g.asum[(r0 + r) * kb + b]))));
        }
        const __m512 s = _mm512_mul_ps(_mm512_set1_ps(g.a_scale), _mm512_loadu_ps(w.scales + (p0 + p) * kb * kCols));
        for (int r = 0; r < R; ++r) {
          __m512 y = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_add_epi32(dot[r][p], corr[r])), s);
          asm("" : "+v"(y));  // no fused multiply-add: two roundings, as the reference
          if (g.bias) y = _mm512_add_ps(y, bias);
          _mm512_mask_storeu_ps(g.c + (r0 + r) * w.n + col0, mask, y);
        }
      }
    }
  }
};

// Float A as base-256 digits (kernels/quant/panel_digits.h): the codes of a
// group loaded and unpacked once for R rows x 3 digits, three int32
// accumulators a (row, panel), per block combined in float:
//   y += scale * (s * ((dot0 * 256 + dot1) * 256 + dot2) - zero * s * sum Q).
template <int Bits, int R, int P, bool = true>
struct ZmmDigits {
  [[ONNX_MINI_PG_ZMM]] static void Run(const TileArgs& g, int64_t r0, int, int64_t p0, int) {
    constexpr int D = kPanelDigits;
    const QuantPanels& w = *g.w;
    const int64_t kb = w.k_blocks, bb = w.block_bytes(), groups = bb / kGroup, kp = w.padded_k();
    const uint8_t* q[P];
    for (int p = 0; p < P; ++p) q[p] = w.codes + (p0 + p) * kb * bb;
    const int8_t* ar[R];
    for (int r = 0; r < R; ++r) ar[r] = g.qa + (r0 + r) * g.lda;
    const __m512i low = _mm512_set1_epi8(15);
    const __m512 base = _mm512_set1_ps(256.f);
    __m512i dot[R][P][D];
    __m512 acc[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; ++b) {
      for (int r = 0; r < R; ++r)
        for (int p = 0; p < P; ++p)
          for (int d = 0; d < D; ++d) dot[r][p][d] = _mm512_setzero_si512();
      const int64_t k0 = b * w.block;
      for (int64_t gi = 0; gi < groups; ++gi) {
        if constexpr (Bits == 8) {
          __m512i v[P];
          for (int p = 0; p < P; ++p) {
            v[p] = _mm512_loadu_si512(q[p]);
            q[p] += kGroup;
          }
          for (int r = 0; r < R; ++r)
            for (int d = 0; d < D; ++d) {
              const __m512i x = _mm512_set1_epi32(Load32(ar[r] + d * kp + k0 + 4 * gi));
              for (int p = 0; p < P; ++p) dot[r][p][d] = _mm512_dpbusd_epi32(dot[r][p][d], v[p], x);
            }
        } else {
          __m512i lo[P], hi[P];
          for (int p = 0; p < P; ++p) {
            const __m512i v = _mm512_loadu_si512(q[p]);
            lo[p] = _mm512_and_si512(v, low);
            hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            q[p] += kGroup;
          }
          for (int r = 0; r < R; ++r)
            for (int d = 0; d < D; ++d) {
              const __m512i x0 = _mm512_set1_epi32(Load32(ar[r] + d * kp + k0 + 8 * gi));
              const __m512i x1 = _mm512_set1_epi32(Load32(ar[r] + d * kp + k0 + 8 * gi + 4));
              for (int p = 0; p < P; ++p) {
                dot[r][p][d] = _mm512_dpbusd_epi32(dot[r][p][d], lo[p], x0);
                dot[r][p][d] = _mm512_dpbusd_epi32(dot[r][p][d], hi[p], x1);
              }
            }
        }
      }
      for (int p = 0; p < P; ++p) {
        const int64_t at = ((p0 + p) * kb + b) * kCols;
        const __m512 sc = _mm512_loadu_ps(w.scales + at);
        const __m512 zs = _mm512_mul_ps(sc, _mm512_loadu_ps(w.zeros + at));
        for (int r = 0; r < R; ++r) {
          __m512 f = _mm512_maskz_cvtepi32_ps(0xFFFF, dot[r][p][0]);
          for (int d = 1; d < D; ++d) f = _mm512_fmadd_ps(f, base, _mm512_maskz_cvtepi32_ps(0xFFFF, dot[r][p][d]));
          const __m512 sa = _mm512_set1_ps(g.ascale[(r0 + r) * kb + b]);
          const __m512 az = _mm512_set1_ps(g.azero[(r0 + r) * kb + b]);
          acc[r][p] = _mm512_fmadd_ps(f, _mm512_mul_ps(sc, sa), acc[r][p]);
          acc[r][p] = _mm512_fnmadd_ps(zs, az, acc[r][p]);
        }
      }
    }
    for (int p = 0; p < P; ++p) {
      const int64_t col0 = (p0 + p) * kCols, cols = std::min(kCols, w.n - col0);
      const __mmask16 mask = __mmask16((1u << cols) - 1);
      const __m512 bias = g.bias ? _mm512_maskz_loadu_ps(mask, g.bias + col0) : _mm512_setzero_ps();
      for (int r = 0; r < R; ++r)
        _mm512_mask_storeu_ps(g.c + (r0 + r) * w.n + col0, mask, _mm512_add_ps(acc[r][p], bias));
    }
  }
};

// ---- AVX-VNNI: a panel is two ymm of 8 int32 columns ----

// acc += VPDPBUSD(u, s), the VEX form (inline assembly: GCC 12 and clang 14
// name the intrinsic differently).
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void DpbusdVex(__m256i& acc, const __m256i& u,
                                                                   const __m256i& s) {
  __m256i x = acc;  // a local operand: an array element bound to the asm kept the array in memory
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(x) : "x"(u), "x"(s));
  acc = x;
}

// Without VNNI (AVX2): codes and A widened to int16 and multiplied by
// VPMADDWD (exact; VPMADDUBSW would saturate 8-bit codes), (column, pair of
// k) sums added in pairs when a pass ends.
// Pair sums (lanes 2c, 2c + 1 of column c of four) to 8 columns in order.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256i AddPairs(const __m256i& x, const __m256i& y) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(x, y), 0xD8);
}

// Integer A: C of panel p from the tile's exact sums (R rows of its 16
// columns, in memory: a register array indexed in the loops below would live
// in memory throughout), B's zero points' and A's shift's corrections added in
// int32 (wrapping as onnxruntime's int32 sums), scaled once.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void FinishIntPanel(const TileArgs& g, int64_t r0, int64_t p,
                                                                         int32_t (&sums)[R][kCols]) {
  const QuantPanels& w = *g.w;
  const int64_t kb = w.k_blocks;
  const int64_t col0 = p * kCols, cols = std::min(kCols, w.n - col0);
  for (int h = 0; h < 2; ++h) {
    __m256i corr[R];
    for (int r = 0; r < R; ++r) corr[r] = _mm256_setzero_si256();
    for (int64_t b = 0; b < kb; ++b) {
      const int64_t at = (p * kb + b) * kCols + 8 * h;
      const __m256i zu = _mm256_cvtps_epi32(_mm256_loadu_ps(w.zeros + at));
      const __m256i cs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.code_sums + at));
      const __m256i t = _mm256_mullo_epi32(
          _mm256_set1_epi32(g.a_shift), _mm256_sub_epi32(cs, _mm256_mullo_epi32(_mm256_set1_epi32(BlockLen(w, b)), zu)));
      for (int r = 0; r < R; ++r)
        corr[r] = _mm256_add_epi32(
            corr[r], _mm256_sub_epi32(t, _mm256_mullo_epi32(zu, _mm256_set1_epi32(g.asum[(r0 + r) * kb + b]))));
    }
    for (int r = 0; r < R; ++r) {
      __m256i* at = reinterpret_cast<__m256i*>(sums[r] + 8 * h);
      _mm256_storeu_si256(at, _mm256_add_epi32(_mm256_loadu_si256(at), corr[r]));
    }
  }
  const float* sc = w.scales + p * kb * kCols;
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c)
      g.c[(r0 + r) * w.n + col0 + c] = FinishInt(uint32_t(sums[r][c]), g.a_scale * sc[c], g.bias, col0 + c);
}

// n groups of 8-bit codes' half panel (q, advanced) times A widened (a, rows
// lda apart, advanced) into the (column, pair of k) sums left (columns
// 8h..8h+3) and right (8h+4..8h+7).
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void WidenedGroups(int64_t n, int64_t lda, const uint8_t*& q,
                                                                        const int16_t*& a, __m256i (&left)[R],
                                                                        __m256i (&right)[R]) {
  for (int64_t gi = 0; gi < n; ++gi, q += kGroup, a += 4) {
    const __m256i v0 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    const __m256i v1 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i x = _mm256_set1_epi64x(Load64(a + r * lda));
      left[r] = _mm256_add_epi32(left[r], _mm256_madd_epi16(v0, x));
      right[r] = _mm256_add_epi32(right[r], _mm256_madd_epi16(v1, x));
      // In this order: GCC 12 otherwise computes every row's products
      // first and spills the accumulators.
      asm volatile("" : "+x"(left[r]), "+x"(right[r]));
    }
  }
}

// Integer A on AVX2 (8-bit codes), R rows x P panels over all of K. A comes
// widened (g.qa16), so a group costs one broadcast load a row; each half
// panel is a pass of its own, so that 6 rows' accumulators (2 each), the codes
// and A fit in 16 registers (the block loop's form kept 2 rows, widening A
// in it: ~8 multiply-adds a cycle, a third of VPMADDWD's rate).
template <int R, int P>
[[gnu::target("avx2,fma"), gnu::noinline]] void IntTileWidenedA(const TileArgs& g, int64_t r0,
                                                                          int64_t p0) {
  const QuantPanels& w = *g.w;
  const int64_t groups = w.padded_k() / 4;  // the blocks' groups lie one after another in a panel
  for (int p = 0; p < P; ++p) {
    int32_t sums[R][kCols];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = w.codes + (p0 + p) * w.k_blocks * w.block_bytes() + 32 * h;
      const int16_t* a = g.qa16 + r0 * g.lda;
      __m256i left[R], right[R];  // columns 8h..8h+3 and 8h+4..8h+7, pairs of k apart
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) left[r] = right[r] = _mm256_setzero_si256();
      WidenedGroups<R>(groups, g.lda, q, a, left, right);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums[r] + 8 * h), AddPairs(left[r], right[r]));
    }
    FinishIntPanel<R>(g, r0, p0 + p, sums);
  }
}

// 4-bit codes, float A on AVX2: G groups (from q, A's row r at a[r] + off)
// into s16, int16 sums of VPMADDUBSW: exact over up to 4 groups (a lane adds
// 2 products a nibble, 2 nibbles a group: 16 products of at most 15 * 128,
// 30720 < 2^15).
template <int R, int G>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void Nib4Groups(const uint8_t* q, const int8_t* const* a,
                                                                     int64_t off, __m256i (&s16)[R][2]) {
  const __m256i low = _mm256_set1_epi8(15);
#pragma GCC unroll 4
  for (int gi = 0; gi < G; ++gi) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + kGroup * gi));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + kGroup * gi + 32));
    const __m256i lo0 = _mm256_and_si256(v0, low), lo1 = _mm256_and_si256(v1, low);
    const __m256i hi0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), low);
    const __m256i hi1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), low);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i x0 = _mm256_set1_epi32(Load32(a[r] + off + 8 * gi));
      const __m256i x1 = _mm256_set1_epi32(Load32(a[r] + off + 8 * gi + 4));
      s16[r][0] = _mm256_add_epi16(
          s16[r][0], _mm256_add_epi16(_mm256_maddubs_epi16(lo0, x0), _mm256_maddubs_epi16(hi0, x1)));
      s16[r][1] = _mm256_add_epi16(
          s16[r][1], _mm256_add_epi16(_mm256_maddubs_epi16(lo1, x0), _mm256_maddubs_epi16(hi1, x1)));
      // Row by row: GCC 12 otherwise computes every row's products first and
      // spills them (140 against 200 GOP/s at 4 rows).
      asm volatile("" : "+x"(s16[r][0]), "+x"(s16[r][1]));
    }
  }
}

// C's R rows x 16 columns of panel p from acc, bias added.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void StoreFloatPanel(const TileArgs& g, int64_t r0, int64_t p,
                                                                          const __m256 (&acc)[R][2]) {
  const QuantPanels& w = *g.w;
  const int64_t col0 = p * kCols, cols = std::min(kCols, w.n - col0);
  float out[R][kCols];
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(out[r] + 8 * h, acc[r][h]);
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c)
      g.c[(r0 + r) * w.n + col0 + c] = g.bias ? out[r][c] + g.bias[col0 + c] : out[r][c];
}

// acc plus a block's float value over 8 columns, for A's row with scale sa
// and sa * sum q az: dot * (scale * sa) - (scale * zero) * az.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 AddBlockValue(__m256 acc, __m256i dot, __m256 scale,
                                                                          __m256 scale_zero, float sa, float az) {
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(scale, _mm256_set1_ps(sa)), acc);
  return _mm256_fnmadd_ps(scale_zero, _mm256_set1_ps(az), acc);
}
// acc += block b's float value (AddBlockValue) over panel p.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void FinishFloatBlock(const TileArgs& g, int64_t r0, int64_t p,
                                                                           int64_t b, const __m256i (&dot)[R][2],
                                                                           __m256 (&acc)[R][2]) {
  const QuantPanels& w = *g.w;
  const int64_t kb = w.k_blocks;
  for (int h = 0; h < 2; ++h) {
    const int64_t at = (p * kb + b) * kCols + 8 * h;
    const __m256 sc = _mm256_loadu_ps(w.scales + at);
    const __m256 zs = _mm256_mul_ps(sc, _mm256_loadu_ps(w.zeros + at));
    for (int r = 0; r < R; ++r)
      acc[r][h] = AddBlockValue(acc[r][h], dot[r][h], sc, zs, g.ascale[(r0 + r) * kb + b], g.azero[(r0 + r) * kb + b]);
  }
}

// 4-bit codes, float A on AVX2: R rows x 1 panel. A block's chunks of 4
// groups (32 k) go through int16 sums, widened to int32 by VPMADDWD with ones.
// A block of 32 (the exporters' usual) is one chunk: no int32 sums kept
// across chunks, which leaves the registers to 4 rows.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void Nib4FloatTile(const TileArgs& g, int64_t r0, int64_t p0) {
  const QuantPanels& w = *g.w;
  const int64_t kb = w.k_blocks, groups = w.block / 8;
  const uint8_t* q = w.codes + p0 * kb * w.block_bytes();
  const int8_t* a[R];
  for (int r = 0; r < R; ++r) a[r] = g.qa + (r0 + r) * g.lda;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  if (groups == 4) {
    for (int64_t b = 0; b < kb; ++b, q += 4 * kGroup) {
      __m256i s16[R][2];
      for (int r = 0; r < R; ++r) s16[r][0] = s16[r][1] = _mm256_setzero_si256();
      Nib4Groups<R, 4>(q, a, b * w.block, s16);
      __m256i dot[R][2];
      for (int r = 0; r < R; ++r)
        for (int h = 0; h < 2; ++h) dot[r][h] = _mm256_madd_epi16(s16[r][h], ones);
      FinishFloatBlock<R>(g, r0, p0, b, dot, acc);
    }
  } else {
    for (int64_t b = 0; b < kb; ++b) {
      __m256i dot[R][2];
      for (int r = 0; r < R; ++r) dot[r][0] = dot[r][1] = _mm256_setzero_si256();
      for (int64_t g0 = 0; g0 < groups; g0 += 4) {
        const int64_t n = std::min<int64_t>(4, groups - g0), off = b * w.block + 8 * g0;
        __m256i s16[R][2];
        for (int r = 0; r < R; ++r) s16[r][0] = s16[r][1] = _mm256_setzero_si256();
        switch (n) {
          case 1: Nib4Groups<R, 1>(q, a, off, s16); break;
          case 2: Nib4Groups<R, 2>(q, a, off, s16); break;
          case 3: Nib4Groups<R, 3>(q, a, off, s16); break;
          default: Nib4Groups<R, 4>(q, a, off, s16); break;
        }
        q += n * kGroup;
        for (int r = 0; r < R; ++r)
          for (int h = 0; h < 2; ++h) dot[r][h] = _mm256_add_epi32(dot[r][h], _mm256_madd_epi16(s16[r][h], ones));
      }
      FinishFloatBlock<R>(g, r0, p0, b, dot, acc);
    }
  }
  StoreFloatPanel<R>(g, r0, p0, acc);
}

// 8-bit codes, float A on AVX2 (A as int8 per block, widened to int16 in
// g.qa16): IntTileWidenedA's half-panel passes (WidenedGroups), each
// block's pair sums then turned into its float value (AddBlockValue). 96
// GOP/s in bench-qgemm (128 x 1024 x 2816, Zen 3; 6 rows no faster), where
// the block loop's form, 2 rows widening A per group, ran at 70.
template <int R>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void Int8FloatTile(const TileArgs& g, int64_t r0, int64_t p0) {
  const QuantPanels& w = *g.w;
  const int64_t kb = w.k_blocks, groups = w.block / 4;
  __m256 acc[R][2];
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = w.codes + p0 * kb * w.block_bytes() + 32 * h;
    const int16_t* a = g.qa16 + r0 * g.lda;
    __m256 sum[R];
    for (int r = 0; r < R; ++r) sum[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < kb; ++b) {
      __m256i left[R], right[R];  // columns 8h..8h+3 and 8h+4..8h+7, pairs of k apart
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) left[r] = right[r] = _mm256_setzero_si256();
      WidenedGroups<R>(groups, g.lda, q, a, left, right);
      const int64_t at = (p0 * kb + b) * kCols + 8 * h;
      const __m256 sc = _mm256_loadu_ps(w.scales + at);
      const __m256 zs = _mm256_mul_ps(sc, _mm256_loadu_ps(w.zeros + at));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        sum[r] = AddBlockValue(sum[r], AddPairs(left[r], right[r]), sc, zs, g.ascale[(r0 + r) * kb + b],
                               g.azero[(r0 + r) * kb + b]);
    }
    for (int r = 0; r < R; ++r) acc[r][h] = sum[r];
  }
  StoreFloatPanel<R>(g, r0, p0, acc);
}

template <bool kVnni, int Bits, int R, int P, bool kFloat>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void YmmBody(const TileArgs& g, int64_t r0, int64_t p0) {
  if constexpr (!kVnni && Bits == 8 && !kFloat) {
    IntTileWidenedA<R, P>(g, r0, p0);  // g.qa16 is set on this build (QuantPanelsMatMulIntA)
  } else if constexpr (!kVnni && Bits == 8) {
    static_assert(P == 1, "AVX2 8-bit float-A tiles: one panel");
    Int8FloatTile<R>(g, r0, p0);  // g.qa16 is set on this build (QuantPanelsMatMulMany)
  } else if constexpr (!kVnni && Bits == 4) {
    static_assert(kFloat && P == 1, "AVX2 4-bit tiles: float A, one panel");
    Nib4FloatTile<R>(g, r0, p0);
  } else {
    const QuantPanels& w = *g.w;
    const int64_t kb = w.k_blocks, bb = w.block_bytes(), groups = bb / kGroup;
    const uint8_t* q[P];
    for (int p = 0; p < P; ++p) q[p] = w.codes + (p0 + p) * kb * bb;
    const int8_t* ar[R];
    for (int r = 0; r < R; ++r) ar[r] = g.qa + (r0 + r) * g.lda;
    const __m256i low = _mm256_set1_epi8(15);
    __m256i dot[R][P][2];
    __m256 acc[R][P][2];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p)
        for (int h = 0; h < 2; ++h) {
          dot[r][p][h] = _mm256_setzero_si256();
          acc[r][p][h] = _mm256_setzero_ps();
        }
    for (int64_t b = 0; b < kb; ++b) {
      if constexpr (kFloat)
        for (int r = 0; r < R; ++r)
          for (int p = 0; p < P; ++p) dot[r][p][0] = dot[r][p][1] = _mm256_setzero_si256();
      const int64_t k0 = b * w.block;
      for (int64_t gi = 0; gi < groups; ++gi) {
        if (g.stream)
          for (int p = 0; p < P; ++p) _mm_prefetch(reinterpret_cast<const char*>(q[p] + kPrefetchBytes), _MM_HINT_T0);
        if constexpr (Bits == 8) {
          __m256i v[P][2];
          for (int p = 0; p < P; ++p) {
            v[p][0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[p]));
            v[p][1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[p] + 32));
            q[p] += kGroup;
          }
          for (int r = 0; r < R; ++r) {
            const __m256i x = _mm256_set1_epi32(Load32(ar[r] + k0 + 4 * gi));
            for (int p = 0; p < P; ++p)
              for (int h = 0; h < 2; ++h) DpbusdVex(dot[r][p][h], v[p][h], x);
          }
        } else {
          __m256i lo[P][2], hi[P][2];
          for (int p = 0; p < P; ++p) {
            for (int h = 0; h < 2; ++h) {
              const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[p] + 32 * h));
              lo[p][h] = _mm256_and_si256(v, low);
              hi[p][h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            }
            q[p] += kGroup;
          }
          for (int r = 0; r < R; ++r) {
            const __m256i x0 = _mm256_set1_epi32(Load32(ar[r] + k0 + 8 * gi));
            const __m256i x1 = _mm256_set1_epi32(Load32(ar[r] + k0 + 8 * gi + 4));
            for (int p = 0; p < P; ++p)
              for (int h = 0; h < 2; ++h) {
                DpbusdVex(dot[r][p][h], lo[p][h], x0);
                DpbusdVex(dot[r][p][h], hi[p][h], x1);
              }
          }
        }
      }
      if constexpr (kFloat) {
        for (int p = 0; p < P; ++p)
          for (int h = 0; h < 2; ++h) {
            const int64_t at = ((p0 + p) * kb + b) * kCols + 8 * h;
            const __m256 sc = _mm256_loadu_ps(w.scales + at);
            const __m256 zs = _mm256_mul_ps(sc, _mm256_loadu_ps(w.zeros + at));
            for (int r = 0; r < R; ++r)
              acc[r][p][h] = AddBlockValue(acc[r][p][h], dot[r][p][h], sc, zs, g.ascale[(r0 + r) * kb + b],
                                           g.azero[(r0 + r) * kb + b]);
          }
      }
    }
    if constexpr (kFloat) {
      for (int p = 0; p < P; ++p) {
        const int64_t col0 = (p0 + p) * kCols, cols = std::min(kCols, w.n - col0);
        float out[R][kCols];
        for (int r = 0; r < R; ++r)
          for (int h = 0; h < 2; ++h) _mm256_storeu_ps(out[r] + 8 * h, acc[r][p][h]);
        for (int r = 0; r < R; ++r)
          for (int64_t c = 0; c < cols; ++c)
            g.c[(r0 + r) * w.n + col0 + c] = g.bias ? out[r][c] + g.bias[col0 + c] : out[r][c];
      }
    } else {
      for (int p = 0; p < P; ++p) {
        int32_t sums[R][kCols];
        for (int r = 0; r < R; ++r) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums[r]), dot[r][p][0]);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums[r] + 8), dot[r][p][1]);
        }
        FinishIntPanel<R>(g, r0, p0 + p, sums);
      }
    }
  }
}

template <int Bits, int R, int P, bool kFloat>
struct Ymm {
  [[gnu::target("avx2,fma,avxvnni")]] static void Run(const TileArgs& g, int64_t r0, int, int64_t p0, int) {
    YmmBody<true, Bits, R, P, kFloat>(g, r0, p0);
  }
};
template <int Bits, int R, int P, bool kFloat>
struct YmmAvx2 {
  [[gnu::target("avx2,fma")]] static void Run(const TileArgs& g, int64_t r0, int, int64_t p0, int) {
    YmmBody<false, Bits, R, P, kFloat>(g, r0, p0);
  }
};
#undef ONNX_MINI_PG_ZMM
#endif  // __x86_64__

// A tile of r rows (1..kMax) of the build's kernel K.
template <template <int, int, int, bool> class K, int Bits, bool F, int P, int kMax>
TileFn PickRows(int r) {
  static_assert(kMax >= 1 && kMax <= 8, "tile rows");
  switch (std::min(r, kMax)) {
    case 1: return K<Bits, 1, P, F>::Run;
    case 2: if constexpr (kMax >= 2) return K<Bits, 2, P, F>::Run; break;
    case 3: if constexpr (kMax >= 3) return K<Bits, 3, P, F>::Run; break;
    case 4: if constexpr (kMax >= 4) return K<Bits, 4, P, F>::Run; break;
    case 5: if constexpr (kMax >= 5) return K<Bits, 5, P, F>::Run; break;
    case 6: if constexpr (kMax >= 6) return K<Bits, 6, P, F>::Run; break;
    case 7: if constexpr (kMax >= 7) return K<Bits, 7, P, F>::Run; break;
    default: if constexpr (kMax >= 8) return K<Bits, 8, P, F>::Run; break;
  }
  return nullptr;
}

// A tile of r rows x p panels (p = 1 or kPanels); the integer-A form only for
// 8 bits (what PackInt8Panels makes).
template <template <int, int, int, bool> class K, int kRowsFloat, int kRowsInt, int kPanels>
TileFn PickTile(int bits, bool f, int r, int p) {
  const bool wide = p >= kPanels;
  if (f) {
    if (bits == 8) return wide ? PickRows<K, 8, true, kPanels, kRowsFloat>(r) : PickRows<K, 8, true, 1, kRowsFloat>(r);
    return wide ? PickRows<K, 4, true, kPanels, kRowsFloat>(r) : PickRows<K, 4, true, 1, kRowsFloat>(r);
  }
  return wide ? PickRows<K, 8, false, kPanels, kRowsInt>(r) : PickRows<K, 8, false, 1, kRowsInt>(r);
}

struct Kernel {
  TileFn (*pick)(int bits, bool f, int r, int p);  // null: the plain loops (also integer A on 4 bits)
  TileFn plain_float, plain_int;
  int rows_float, rows_int, panels;  // the tile of the build
  bool int_a16 = false;               // the 8-bit tiles read A widened (TileArgs::qa16)
};

const CpuDispatchTable<Kernel>::Build& ActiveKernel() {
  static const CpuDispatchTable<Kernel> table{
#if defined(__x86_64__)
      // zmm: 8 + 8 accumulators of float A's tile, 16 of integer A's, of 32 registers.
      {CpuTarget::kAvx512Vnni, {PickTile<Zmm, 4, 8, 2>, PlainBaseline<true>, PlainBaseline<false>, 4, 8, 2}},
      // ymm: 16 registers.
      {CpuTarget::kAvxVnni, {PickTile<Ymm, 2, 4, 1>, PlainBaseline<true>, PlainBaseline<false>, 2, 4, 1}},
      // Integer A: 6 rows x 2 accumulators a half panel (IntTileWidenedA);
      // float A: 4 rows (Int8FloatTile, Nib4FloatTile).
      {CpuTarget::kAvx2, {PickTile<YmmAvx2, 4, 6, 1>, PlainBaseline<true>, PlainBaseline<false>, 4, 6, 1, true}},
#endif
      {CpuTarget::kBaseline, {nullptr, PlainBaseline<true>, PlainBaseline<false>, 4, 4, 1}},
  };
  return table.ActiveBuild();
}

// The digits tiles (float A through VNNI, ZmmDigits) and A's preparation for them.
struct DigitsKernel {
  TileFn (*pick)(int bits, bool f, int r, int p);  // null: no digits build (the GEMM path)
  PanelDigitsFn prepare;
  int rows, panels;
};

template <template <int, int, int, bool> class K, int kRows, int kPanels>
TileFn PickDigits(int bits, bool, int r, int p) {
  const bool wide = p >= kPanels;
  if (bits == 8) return wide ? PickRows<K, 8, true, kPanels, kRows>(r) : PickRows<K, 8, true, 1, kRows>(r);
  return wide ? PickRows<K, 4, true, kPanels, kRows>(r) : PickRows<K, 4, true, 1, kRows>(r);
}

const CpuDispatchTable<DigitsKernel>::Build& ActiveDigits() {
  static const CpuDispatchTable<DigitsKernel> table{
#if defined(__x86_64__)
      // 3 x 2 x 3 int32 and 3 x 2 float accumulators of 32 registers.
      {CpuTarget::kAvx512Vnni, {PickDigits<ZmmDigits, 3, 2>, PanelDigitsAvx512, 3, 2}},
#endif
      {CpuTarget::kBaseline, {nullptr, PanelDigitsBaseline, 1, 1}},
  };
  return table.ActiveBuild();
}

// Tiles over all of C: items of (a block of rows) x (a chunk of panels), the
// panels of an item outer (their codes stay in cache while its rows pass).
void RunTiles(const TileArgs& g, int64_t m, bool f, int threads) {
  Kernel k = ActiveKernel().entries;
  const QuantPanels& w = *g.w;
  if (!f && w.bits != 8) k.pick = nullptr;  // the SIMD integer-A tiles are built for 8 bits only
  if (g.digits) {
    const DigitsKernel& dk = ActiveDigits().entries;
    k.pick = dk.pick;
    k.rows_float = dk.rows;
    k.panels = dk.panels;
  }
  const int R = f ? k.rows_float : k.rows_int, P = k.panels;
  const int64_t row_block = std::min<int64_t>(m, 24 * int64_t(R));
  const int64_t panel_chunk = 2 * int64_t(P);
  const int64_t row_blocks = (m + row_block - 1) / row_block;
  const int64_t chunks = (w.panels + panel_chunk - 1) / panel_chunk;
  TileArgs args = g;
  args.stream = m <= 4;
  // An item's work: its multiply-adds, 64 a VPDPBUSD.
  const double per = double(row_block) * double(w.padded_k()) * double(panel_chunk * kCols) / 16;
  ParallelFor(threads, row_blocks * chunks, WorkPerIndex{per}, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t rb = i / chunks, pc = i % chunks;
      const int64_t r_begin = rb * row_block, r_end = std::min(m, r_begin + row_block);
      const int64_t p_begin = pc * panel_chunk, p_end = std::min(w.panels, p_begin + panel_chunk);
      for (int64_t p = p_begin; p < p_end;) {
        // A narrower SIMD tile takes one panel; the plain loops take the rest.
        const int np = k.pick ? (p_end - p >= P ? P : 1) : int(p_end - p);
        for (int64_t r = r_begin; r < r_end;) {
          const int nr = int(std::min<int64_t>(R, r_end - r));
          if (k.pick) {
            k.pick(w.bits, f, nr, np)(args, r, nr, p, np);
          } else {
            (f ? k.plain_float : k.plain_int)(args, r, nr, p, np);
          }
          r += nr;
        }
        p += np;
      }
    }
  });
}

// ---- A's preparation ----

// NBitsRoundRowsToInt8's rule for one block (NBitsQuantizeBlockInt8: a
// block holding a NaN gets a NaN scale).
float QuantizeBlock(const float* x, int64_t len, int8_t* q, int32_t* sum) {
  return NBitsQuantizeBlockInt8(x, len, q, sum);
}

int64_t Align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// One row of A by QuantizeBlock's rule, in loops that vectorize (compiled per
// target: std::nearbyint, a libm call on the baseline target, kept the old
// loop scalar, a third of the int8 product's time at 128 rows): dst gets
// padded_k int8 (zero-padded), per block ascale sa, azero sa * sum q and
// qsum sum q (either null: not written).
struct RowInt8 {
  int64_t k, block, kb, kp;
};
[[gnu::always_inline]] inline void QuantizeRowInt8(const RowInt8& g, const float* row, int8_t* dst, float* ascale,
                                                   float* azero, int32_t* qsum) {
  std::memset(dst + g.k, 0, size_t(g.kp - g.k));
  for (int64_t b = 0; b < g.kb; ++b) {
    const int64_t first = b * g.block, len = std::min(g.block, g.k - first);
    const float* x = row + first;
    float part[16] = {};  // running maxima: no serial chain
    int64_t i = 0;
    for (; i + 16 <= len; i += 16)
      for (int j = 0; j < 16; ++j) part[j] = std::max(part[j], std::fabs(x[i + j]));
    for (; i < len; ++i) part[0] = std::max(part[0], std::fabs(x[i]));
    float amax = 0;
    for (float v : part) amax = std::max(amax, v);
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    int8_t* q = dst + first;
    // NBitsQuantizeBlockInt8's NaN rule: a block holding a NaN or an infinity
    // gets values 0 and a NaN scale (a pass of its own: the loops stay
    // branch-free).
    int32_t bad = !(amax < std::numeric_limits<float>::infinity());
    for (int64_t e = 0; e < len; ++e) bad |= int32_t(x[e] != x[e]);
    if (bad) {
      std::memset(q, 0, size_t(len));
      ascale[b] = std::numeric_limits<float>::quiet_NaN();
      if (azero) azero[b] = ascale[b];
      if (qsum) qsum[b] = 0;
      continue;
    }
    int32_t sum = 0;
    for (int64_t e = 0; e < len; ++e) {
      // One instruction (VROUNDPS) on the AVX builds; no addend trick, which
      // FMA contraction would change.
      const int32_t v = int32_t(std::nearbyint(x[e] * inv));
      q[e] = int8_t(v);
      sum += v;
    }
    ascale[b] = amax / 127.0f;
    if (azero) azero[b] = ascale[b] * float(sum);
    if (qsum) qsum[b] = sum;
  }
}
using RowInt8Fn = void (*)(const RowInt8&, const float*, int8_t*, float*, float*, int32_t*);
void RowInt8Baseline(const RowInt8& g, const float* row, int8_t* dst, float* ascale, float* azero, int32_t* qsum) {
  QuantizeRowInt8(g, row, dst, ascale, azero, qsum);
}
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void RowInt8Avx2(const RowInt8& g, const float* row, int8_t* dst, float* ascale,
                                             float* azero, int32_t* qsum) {
  QuantizeRowInt8(g, row, dst, ascale, azero, qsum);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void RowInt8Avx512(const RowInt8& g, const float* row,
                                                                                int8_t* dst, float* ascale,
                                                                                float* azero, int32_t* qsum) {
  QuantizeRowInt8(g, row, dst, ascale, azero, qsum);
}
#endif
RowInt8Fn ActiveRowInt8() {
  static const CpuDispatchTable<RowInt8Fn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, RowInt8Avx512},
      {CpuTarget::kAvx2, RowInt8Avx2},
#endif
      {CpuTarget::kBaseline, RowInt8Baseline},
  };
  return table.Active();
}

// The integer workspace: qa (m x padded_k bytes), then two m x k_blocks
// arrays of 4 bytes.
int64_t IntWorkspace(int64_t m, const QuantPanels& w) {
  const double bytes = double(m) * double(w.padded_k()) + 64 + 8.0 * double(m) * double(w.k_blocks) + 64;
  return bytes < double(std::numeric_limits<int64_t>::max() / 4) ? Align64(int64_t(bytes)) : -1;
}

// Whether float A's int8 tiles read A widened too (the 8-bit tiles of the
// build that wants it).
bool WidenFloatA(const QuantPanels& w) { return w.bits == 8 && ActiveKernel().entries.int_a16; }

// IntWorkspace, then (widened) m x padded_k int16.
int64_t WidenedAWorkspace(int64_t m, const QuantPanels& w, bool widened) {
  const int64_t base = IntWorkspace(m, w);
  if (base < 0 || !widened) return base;
  const double bytes = double(base) + 2.0 * double(m) * double(w.padded_k());
  return bytes < double(std::numeric_limits<int64_t>::max() / 4) ? Align64(int64_t(bytes)) : -1;
}

// ---- The float path ----

constexpr int64_t kFloatChunkPanels = 16;  // 256 columns dequantized at a time

// Panel p dequantized into 16 columns of a row-major K x ld matrix (padding
// columns 0): each group of codes becomes 4 rows of 16 contiguous floats.
void DequantizePanel(const QuantPanels& w, int64_t p, float* out, int64_t ld) {
  const int64_t kb = w.k_blocks, bb = w.block_bytes();
  for (int64_t b = 0; b < kb; ++b) {
    const uint8_t* q = w.codes + (p * kb + b) * bb;
    float sc[kCols], zs[kCols];
    for (int64_t c = 0; c < kCols; ++c) {
      sc[c] = w.scales[(p * kb + b) * kCols + c];
      zs[c] = w.zeros[(p * kb + b) * kCols + c] * sc[c];
    }
    const int64_t per = w.bits == 8 ? 4 : 8, groups = w.block / per;
    for (int64_t gi = 0; gi < groups; ++gi, q += kGroup) {
      const int64_t k0 = b * w.block + gi * per;
      if (k0 >= w.k) break;
      const int64_t rows = std::min(per, w.k - k0);
      for (int64_t j = 0; j < rows; ++j) {
        float* o = out + (k0 + j) * ld;
        if (w.bits == 8) {
          for (int64_t c = 0; c < kCols; ++c) o[c] = float(q[c * 4 + j]) * sc[c] - zs[c];
        } else if (j < 4) {
          for (int64_t c = 0; c < kCols; ++c) o[c] = float(q[c * 4 + j] & 15) * sc[c] - zs[c];
        } else {
          for (int64_t c = 0; c < kCols; ++c) o[c] = float(q[c * 4 + j - 4] >> 4) * sc[c] - zs[c];
        }
      }
    }
  }
}

void FloatPath(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c, float* ws, int threads) {
  const int64_t chunk = std::min(kFloatChunkPanels, w.panels);
  float* panel = ws;
  float* out = ws + chunk * kCols * w.k;
  for (int64_t p0 = 0; p0 < w.panels; p0 += chunk) {
    const int64_t np = std::min(chunk, w.panels - p0), j0 = p0 * kCols, nc = std::min(np * kCols, w.n - j0);
    const int64_t ld = np * kCols;  // B is K x ld (the last panel's padding columns computed, not copied)
    ParallelFor(threads, np, WorkPerIndex{double(kCols * w.k) * 2},
                [&](int64_t i0, int64_t i1) {
                  for (int64_t i = i0; i < i1; ++i) DequantizePanel(w, p0 + i, panel + i * kCols, ld);
                });
    const int use = ThreadsForWork(threads, double(m) * double(w.k) * double(ld), kMinOneDnnThreadWork);
    if (!OneDnnMatMul(DType::kFloat, a, panel, out, 1, 1, 1, m, w.k, ld, false, false, use)) {
      ParallelFor(threads, m, WorkPerIndex{double(w.k) * double(ld)}, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          float* o = out + r * ld;
          std::fill(o, o + ld, 0.0f);
          for (int64_t kk = 0; kk < w.k; ++kk) {
            const float x = a[r * w.k + kk];
            for (int64_t j = 0; j < ld; ++j) o[j] += x * panel[kk * ld + j];
          }
        }
      });
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < nc; ++j) c[r * w.n + j0 + j] = out[r * ld + j] + (bias ? bias[j0 + j] : 0.0f);
  }
}

// ---- The float path's own tile (AVX-512): KC k of P panels dequantized at a
// time into an L1 buffer (float(code) * scale - zero * scale, the GEMM path's
// values), then tiles of R rows x P panels of float accumulators, one
// broadcast of A a row and one FMA a (row, panel) per k; C accumulates over
// the chunks of K (exactly the float product's sums, in K order) ----

#if defined(__x86_64__)
#define ONNX_MINI_PG_FMA gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")

constexpr int64_t kFmaKc = 128;  // K a chunk: 128 x 4 panels x 64 bytes = 32 KB of buffer
constexpr int kFmaRows = 6, kFmaPanels = 4;

struct FmaArgs {
  const QuantPanels* w;
  const float* a;  // m x k
  int64_t m;
  const float* bias;
  float* c;        // m x n
};

// Panels [p0, p0 + P) at k [k0, k1) (k0 a multiple of 8 and of no block's
// interior group boundary: KC and blocks are multiples of 8) into buf (rows of
// P * 16 floats, from k0).
template <int P>
[[ONNX_MINI_PG_FMA, gnu::always_inline]] inline void FmaDequantize(const QuantPanels& w, int64_t p0, int64_t k0,
                                                                  int64_t k1, float* buf) {
  const int64_t kb = w.k_blocks, bb = w.block_bytes(), ld = P * kCols;
  const int per = w.bits == 8 ? 4 : 8;
  const __m512 table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int p = 0; p < P; ++p)
    for (int64_t kk = k0; kk < k1; kk += per) {
      const int64_t b = kk / w.block, gi = (kk - b * w.block) / per, at = ((p0 + p) * kb + b) * kCols;
      const __m512i v = _mm512_loadu_si512(w.codes + ((p0 + p) * kb + b) * bb + gi * kGroup);
      const __m512 sc = _mm512_loadu_ps(w.scales + at), zs = _mm512_mul_ps(sc, _mm512_loadu_ps(w.zeros + at));
      float* o = buf + (kk - k0) * ld + p * kCols;
      if (w.bits == 4) {
        for (int t = 0; t < 8; ++t) {
          const int sh = t < 4 ? 8 * t : 8 * (t - 4) + 4;
          const __m512 f = _mm512_maskz_permutexvar_ps(0xFFFF, _mm512_maskz_srli_epi32(0xFFFF, v, unsigned(sh)), table);
          _mm512_store_ps(o + t * ld, _mm512_fmsub_ps(f, sc, zs));
        }
      } else {
        for (int t = 0; t < 4; ++t) {
          const __m512i x = _mm512_and_si512(_mm512_maskz_srli_epi32(0xFFFF, v, unsigned(8 * t)), _mm512_set1_epi32(255));
          _mm512_store_ps(o + t * ld, _mm512_fmsub_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, x), sc, zs));
        }
      }
    }
}

// Rows [r0, r0 + R) x the P panels of buf over kcl k from kc0; `first`: C not
// yet written; bias (null or the panels' columns) added with `last`.
template <int R, int P>
[[ONNX_MINI_PG_FMA]] void FmaRows(const FmaArgs& g, int64_t r0, int64_t p0, int64_t kc0, int64_t kcl,
                                  const float* buf, bool first, bool last) {
  const QuantPanels& w = *g.w;
  constexpr int64_t ld = P * kCols;
  __m512 acc[R][P];
  __mmask16 mask[P];
  for (int p = 0; p < P; ++p) {
    const int64_t cols = std::min(kCols, w.n - (p0 + p) * kCols);
    mask[p] = __mmask16((1u << cols) - 1);
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p)
      acc[r][p] = first ? _mm512_setzero_ps()
                        : _mm512_maskz_loadu_ps(mask[p], g.c + (r0 + r) * w.n + (p0 + p) * kCols);
  const float* a = g.a + r0 * w.k + kc0;
  for (int64_t kk = 0; kk < kcl; ++kk) {
    __m512 b[P];
    for (int p = 0; p < P; ++p) b[p] = _mm512_load_ps(buf + kk * ld + p * kCols);
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * w.k + kk]);
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_ps(x, b[p], acc[r][p]);
    }
  }
  for (int p = 0; p < P; ++p) {
    const int64_t col0 = (p0 + p) * kCols;
    const __m512 bias = last && g.bias ? _mm512_maskz_loadu_ps(mask[p], g.bias + col0) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(g.c + (r0 + r) * w.n + col0, mask[p], _mm512_add_ps(acc[r][p], bias));
  }
}

template <int P, int... Rs>
void FmaRowTile(int rows, const FmaArgs& g, int64_t r0, int64_t p0, int64_t kc0, int64_t kcl, const float* buf,
                bool first, bool last, std::integer_sequence<int, Rs...>) {
  using Fn = void (*)(const FmaArgs&, int64_t, int64_t, int64_t, int64_t, const float*, bool, bool);
  static constexpr Fn fns[] = {FmaRows<Rs + 1, P>...};
  fns[rows - 1](g, r0, p0, kc0, kcl, buf, first, last);
}

// All rows of C x panels [p0, p0 + P).
template <int P>
[[ONNX_MINI_PG_FMA]] void FmaPanels(const FmaArgs& g, int64_t p0) {
  const QuantPanels& w = *g.w;
  alignas(64) float buf[kFmaKc * P * kCols];
  for (int64_t kc0 = 0; kc0 < w.k; kc0 += kFmaKc) {
    const int64_t kcl = std::min(kFmaKc, w.k - kc0);
    FmaDequantize<P>(w, p0, kc0, kc0 + (kcl + 7) / 8 * 8, buf);
    for (int64_t r0 = 0; r0 < g.m; r0 += kFmaRows) {
      const int rows = int(std::min<int64_t>(kFmaRows, g.m - r0));
      FmaRowTile<P>(rows, g, r0, p0, kc0, kcl, buf, kc0 == 0, kc0 + kcl >= w.k,
                    std::make_integer_sequence<int, kFmaRows>{});
    }
  }
}

void FmaPath(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c, int threads) {
  const FmaArgs g{&w, a, m, bias, c};
  const int64_t items = (w.panels + kFmaPanels - 1) / kFmaPanels;
  const double per = double(m) * double(w.k) * double(kFmaPanels * kCols);
  ParallelFor(threads, items, WorkPerIndex{per}, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t p0 = i * kFmaPanels;
      if (p0 + kFmaPanels <= w.panels) {
        FmaPanels<kFmaPanels>(g, p0);
      } else {
        for (int64_t p = p0; p < w.panels; ++p) FmaPanels<1>(g, p);
      }
    }
  });
}
#undef ONNX_MINI_PG_FMA

// ---- The float tile on AVX2 (16 registers): a panel's KC x 16 chunk
// dequantized into an L1 buffer (the same values as above), then tiles of up
// to 6 rows x the panel's 2 vectors (12 FMA chains: two pipes of latency 4
// need 8), one broadcast of A a row and two FMAs a row per k, as the packed
// GEMM's AVX2 tile (kernels/gemm/gemm.cc). Panels go 4 at a time (C's m x
// 64 floats stay in L2 over the chunks), in them K chunk by chunk (A's m x KC
// block stays in L2 while each panel's chunk passes under it); C accumulates
// over the chunks in K order ----

#define ONNX_MINI_PG_FMA2 gnu::target("avx2,fma")

constexpr int64_t kFmaKcAvx2 = 256;  // a panel's chunk: 256 x 16 floats = 16 KiB; A's 128 rows: 128 KiB
constexpr int kFmaRowsAvx2 = 6;
constexpr int64_t kFmaRangeAvx2 = 4;  // panels a thread claims at a time

// Panel p at k [k0, k1) (k0 and k1 multiples of 8, within padded_k) into
// buf (rows of 16 floats, from k0).
[[ONNX_MINI_PG_FMA2]] void FmaDequantizeAvx2(const QuantPanels& w, int64_t p, int64_t k0, int64_t k1, float* buf) {
  const int64_t kb = w.k_blocks, bb = w.block_bytes();
  const int per = w.bits == 8 ? 4 : 8;
  const __m256i low = _mm256_set1_epi32(w.bits == 8 ? 255 : 15);
  for (int64_t kk = k0; kk < k1; kk += per) {
    const int64_t b = kk / w.block, gi = (kk - b * w.block) / per, at = (p * kb + b) * kCols;
    const uint8_t* q = w.codes + (p * kb + b) * bb + gi * kGroup;
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32));
    const __m256 sc0 = _mm256_loadu_ps(w.scales + at), sc1 = _mm256_loadu_ps(w.scales + at + 8);
    const __m256 zs0 = _mm256_mul_ps(sc0, _mm256_loadu_ps(w.zeros + at));
    const __m256 zs1 = _mm256_mul_ps(sc1, _mm256_loadu_ps(w.zeros + at + 8));
    float* o = buf + (kk - k0) * kCols;
    for (int t = 0; t < per; ++t) {
      const int sh = w.bits == 8 ? 8 * t : t < 4 ? 8 * t : 8 * (t - 4) + 4;
      const __m256 f0 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(v0, sh), low));
      const __m256 f1 = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(v1, sh), low));
      _mm256_store_ps(o + t * kCols, _mm256_fmsub_ps(f0, sc0, zs0));
      _mm256_store_ps(o + t * kCols + 8, _mm256_fmsub_ps(f1, sc1, zs1));
    }
  }
}

// Brings panel p's codes, scales and zeros of k [k0, k1) toward L2: the
// weights come from memory (a decoder's are far larger than L3), and the
// tiles of one chunk leave time for the next chunk's lines to arrive.
[[ONNX_MINI_PG_FMA2]] void FmaPrefetchAvx2(const QuantPanels& w, int64_t p, int64_t k0, int64_t k1) {
  const int64_t b0 = k0 / w.block, b1 = (k1 + w.block - 1) / w.block, at = p * w.k_blocks;
  const char* codes = reinterpret_cast<const char*>(w.codes);
  for (int64_t i = (at + b0) * w.block_bytes(); i < (at + b1) * w.block_bytes(); i += 64)
    _mm_prefetch(codes + i, _MM_HINT_T1);
  for (int64_t b = b0; b < b1; ++b) {
    _mm_prefetch(reinterpret_cast<const char*>(w.scales + (at + b) * kCols), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(w.zeros + (at + b) * kCols), _MM_HINT_T1);
  }
}

// C's tile (R rows from c, row stride n; `cols` of the 16 are C's) = [bias
// or zero if `first`, else C] + R rows of A (from a, row stride lda) x
// `depth` rows of buf.
template <int R>
[[ONNX_MINI_PG_FMA2, gnu::always_inline]] inline void FmaTileAvx2(const float* a, int64_t lda, const float* buf,
                                                                   int64_t depth, float* c, int64_t n, int64_t cols,
                                                                   const float* bias, bool first) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask[2] = {_mm256_cmpgt_epi32(_mm256_set1_epi32(int(cols)), lane),
                           _mm256_cmpgt_epi32(_mm256_set1_epi32(int(cols - 8)), lane)};
  const bool whole = cols >= kCols;
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) {
      const float* from = !first ? c + r * n + 8 * v : bias ? bias + 8 * v : nullptr;
      acc[r][v] = from == nullptr ? _mm256_setzero_ps()
                  : whole         ? _mm256_loadu_ps(from)
                                  : _mm256_maskload_ps(from, mask[v]);
    }
  for (int64_t kk = 0; kk < depth; ++kk) {
    const __m256 b0 = _mm256_load_ps(buf + kk * kCols), b1 = _mm256_load_ps(buf + kk * kCols + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + kk);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < 2; ++v) {
      if (whole) _mm256_storeu_ps(c + r * n + 8 * v, acc[r][v]);
      else _mm256_maskstore_ps(c + r * n + 8 * v, mask[v], acc[r][v]);
    }
}

// Panels [p0, p1) of C, all rows: K chunk by chunk, each panel's chunk
// dequantized once and multiplied by every tile of rows. Rows go six at a
// time, but a last tile of one or two rows (too few FMA chains) joins the
// one before and the two split evenly (128 rows: 20 x 6 + 4 + 4).
[[ONNX_MINI_PG_FMA2]] void FmaPanelsAvx2(const FmaArgs& g, int64_t p0, int64_t p1) {
  const QuantPanels& w = *g.w;
  alignas(64) float buf[kFmaKcAvx2 * kCols];
  const int64_t rem = g.m % kFmaRowsAvx2;
  const bool split = g.m > kFmaRowsAvx2 && rem > 0 && rem <= 2;
  const int64_t even = g.m - (split ? kFmaRowsAvx2 + rem : rem);  // rows in whole tiles of 6
  for (int64_t kc0 = 0; kc0 < w.k; kc0 += kFmaKcAvx2) {
    const int64_t kcl = std::min(kFmaKcAvx2, w.k - kc0);
    const bool first = kc0 == 0;
    for (int64_t p = p0; p < p1; ++p) {
      FmaDequantizeAvx2(w, p, kc0, kc0 + (kcl + 7) / 8 * 8, buf);
      // The chunk dequantized next: the next panel's, else the first panel's next, else the next group's first.
      if (p + 1 < p1) FmaPrefetchAvx2(w, p + 1, kc0, kc0 + kcl);
      else if (kc0 + kcl < w.k) FmaPrefetchAvx2(w, p0, kc0 + kcl, std::min(w.k, kc0 + kcl + kFmaKcAvx2));
      else if (p1 < w.panels) FmaPrefetchAvx2(w, p1, 0, std::min(w.k, kFmaKcAvx2));
      const int64_t col = p * kCols, cols = std::min(kCols, w.n - col);
      const float* bias = g.bias ? g.bias + col : nullptr;
      const float* a = g.a + kc0;
      float* c = g.c + col;
      for (int64_t r0 = 0; r0 < even; r0 += kFmaRowsAvx2)
        FmaTileAvx2<6>(a + r0 * w.k, w.k, buf, kcl, c + r0 * w.n, w.n, cols, bias, first);
      const int64_t tail = g.m - even, half = split ? (tail + 1) / 2 : tail;
      for (int64_t r0 = even; r0 < g.m; r0 += half) {
        const int64_t rows = std::min(half, g.m - r0);
        const float* ta = a + r0 * w.k;
        float* tc = c + r0 * w.n;
        switch (rows) {
          case 1: FmaTileAvx2<1>(ta, w.k, buf, kcl, tc, w.n, cols, bias, first); break;
          case 2: FmaTileAvx2<2>(ta, w.k, buf, kcl, tc, w.n, cols, bias, first); break;
          case 3: FmaTileAvx2<3>(ta, w.k, buf, kcl, tc, w.n, cols, bias, first); break;
          case 4: FmaTileAvx2<4>(ta, w.k, buf, kcl, tc, w.n, cols, bias, first); break;
          case 5: FmaTileAvx2<5>(ta, w.k, buf, kcl, tc, w.n, cols, bias, first); break;
          default: FmaTileAvx2<6>(ta, w.k, buf, kcl, tc, w.n, cols, bias, first); break;
        }
      }
    }
  }
}

// Rows in blocks of kFmaRowBlockAvx2, so that A's rows x 256 floats (192 KiB)
// stay in L2 (512 KiB on Zen 3): 1024 rows at once measured slower than
// dequantize + GEMM, 128 faster.
constexpr int64_t kFmaRowBlockAvx2 = 32 * kFmaRowsAvx2;

void FmaPathAvx2(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c, int threads) {
  const int64_t items = (w.panels + kFmaRangeAvx2 - 1) / kFmaRangeAvx2;
  for (int64_t r0 = 0; r0 < m; r0 += kFmaRowBlockAvx2) {
    const int64_t rows = std::min(kFmaRowBlockAvx2, m - r0);
    const FmaArgs g{&w, a + r0 * w.k, rows, bias, c + r0 * w.n};
    const double per = double(rows) * double(w.k) * double(kFmaRangeAvx2 * kCols);
    ParallelFor(threads, items, WorkPerIndex{per}, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        FmaPanelsAvx2(g, i * kFmaRangeAvx2, std::min(w.panels, (i + 1) * kFmaRangeAvx2));
    });
  }
}
#undef ONNX_MINI_PG_FMA2
#endif  // __x86_64__

// Whether every real column's every block has the same integral zero point
// z with |z| * 127 * block < 2^31 (then *z). A pass over the zeros with no
// early exit (the loop vectorizes: ~1/1000 of the product's work at 128 rows).
bool UniformIntegerZero(const QuantPanels& w, int32_t* z) {
  const float first = w.zeros[0];
  if (!(std::fabs(first) < 256) || first != std::nearbyint(first)) return false;
  if (double(std::fabs(first)) * 127.0 * double(w.block) >= 2147483647.0) return false;
  int32_t differ = 0;
  const int64_t full = (w.panels - 1) * w.k_blocks * kCols;  // all but the last panel (its padding columns are 0)
  for (int64_t i = 0; i < full; ++i) differ |= int32_t(w.zeros[i] != first);
  const int64_t last = (w.panels - 1) * kCols, cols = w.n - last;
  for (int64_t b = 0; b < w.k_blocks; ++b)
    for (int64_t c = 0; c < cols; ++c) differ |= int32_t(w.zeros[full + b * kCols + c] != first);
  *z = int32_t(first);
  return !differ;
}

}  // namespace

int64_t QuantPanelsMatMulManyWorkspace(int64_t m, const QuantPanels& w, bool int8, QuantPanelsFloatPath path) {
  if (int8) return WidenedAWorkspace(m, w, WidenFloatA(w));
  const bool tile = QuantPanelsFloatTileTarget() != CpuTarget::kBaseline;
  if (tile && (path == QuantPanelsFloatPath::kAuto || path == QuantPanelsFloatPath::kTile)) return 64;  // none
  const bool digits = path == QuantPanelsFloatPath::kDigits && QuantPanelsDigitsTarget() != CpuTarget::kBaseline;
  double bytes;
  if (digits) {  // kPanelDigits bytes an A value (the integer workspace's layout)
    bytes = double(kPanelDigits) * double(m) * double(w.padded_k()) + 8.0 * double(m) * double(w.k_blocks) + 128;
  } else {
    const double cols = double(std::min(kFloatChunkPanels, w.panels) * kCols);
    bytes = 4 * (cols * double(w.k) + double(m) * cols);
  }
  return bytes < double(std::numeric_limits<int64_t>::max() / 4) ? Align64(int64_t(bytes)) : -1;
}

namespace {

using FmaPathFn = void (*)(const float*, int64_t, const QuantPanels&, const float*, float*, int);
// The float tile's builds: AVX-512 (and the targets above it), AVX2.
const CpuDispatchTable<FmaPathFn>::Build& ActiveFmaPath() {
  static const CpuDispatchTable<FmaPathFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, FmaPath},
      {CpuTarget::kAvx2, FmaPathAvx2},
#endif
      {CpuTarget::kBaseline, nullptr},
  };
  return table.ActiveBuild();
}

}  // namespace

CpuTarget QuantPanelsFloatTileTarget() {
  const auto& build = ActiveFmaPath();
  return build.entries ? build.target : CpuTarget::kBaseline;
}

CpuTarget QuantPanelsDigitsTarget() {
  const auto& build = ActiveDigits();
  return build.entries.pick ? build.target : CpuTarget::kBaseline;
}

void QuantPanelsMatMulMany(const float* a, int64_t m, const QuantPanels& w, bool int8, const float* bias, float* c,
                           void* workspace, int threads, QuantPanelsFloatPath path) {
  if (m <= 0 || w.n <= 0) return;
  if (!int8) {
    if (path == QuantPanelsFloatPath::kAuto || path == QuantPanelsFloatPath::kTile) {
      if (const FmaPathFn tile = ActiveFmaPath().entries) return tile(a, m, w, bias, c, threads);
    }
    const DigitsKernel& dk = ActiveDigits().entries;
    const bool digits = dk.pick && path == QuantPanelsFloatPath::kDigits;
    if (!digits) return FloatPath(a, m, w, bias, c, static_cast<float*>(workspace), threads);
    // A as digits (panel_digits.h), then the digits tiles.
    const int64_t kb = w.k_blocks, kp = w.padded_k(), lda = kPanelDigits * kp;
    int8_t* qa = static_cast<int8_t*>(workspace);
    float* ascale = reinterpret_cast<float*>(qa + Align64(m * lda));
    float* azero = ascale + m * kb;
    const PanelDigitsRow row{w.k, w.block, kb, kp, 1.0};
    ParallelFor(threads, m, WorkPerIndex{double(w.k) * 8}, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) dk.prepare(row, a + r * w.k, qa + r * lda, ascale + r * kb, azero + r * kb);
    });
    TileArgs g{};
    g.w = &w;
    g.qa = qa;
    g.lda = lda;
    g.ascale = ascale;
    g.azero = azero;
    g.bias = bias;
    g.c = c;
    g.digits = true;
    return RunTiles(g, m, true, threads);
  }
  const int64_t kb = w.k_blocks, kp = w.padded_k();
  int8_t* qa = static_cast<int8_t*>(workspace);
  float* ascale = reinterpret_cast<float*>(qa + Align64(m * kp));
  float* azero = ascale + m * kb;
  const RowInt8Fn quantize = ActiveRowInt8();
  const RowInt8 row{w.k, w.block, kb, kp};
  // The zmm tiles take every zero point's term in int32 when they are one
  // integer z (|z * sum q| <= |z| * 127 * block < 2^31): z * sum q per (row,
  // block) in azero's place.
  int32_t zint = 0;
  const bool int_zero = ActiveKernel().target == CpuTarget::kAvx512Vnni && UniformIntegerZero(w, &zint);
  int32_t* azq = reinterpret_cast<int32_t*>(azero);
  int16_t* qa16 =
      WidenFloatA(w) ? reinterpret_cast<int16_t*>(static_cast<char*>(workspace) + IntWorkspace(m, w)) : nullptr;
  ParallelFor(threads, m, WorkPerIndex{double(w.k) * 4}, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      // With int_zero azq takes azero's place: sum q first (a NaN block's 0: its sa keeps the NaN), then z * it.
      quantize(row, a + r * w.k, qa + r * kp, ascale + r * kb, int_zero ? nullptr : azero + r * kb,
               int_zero ? azq + r * kb : nullptr);
      if (int_zero)
        for (int64_t b = 0; b < kb; ++b) azq[r * kb + b] *= zint;
      if (qa16)
        for (int64_t i = 0; i < kp; ++i) qa16[r * kp + i] = qa[r * kp + i];
    }
  });
  TileArgs g{};
  g.w = &w;
  g.qa = qa;
  g.lda = kp;
  g.ascale = ascale;
  g.azero = int_zero ? nullptr : azero;
  g.azq = int_zero ? azq : nullptr;
  g.qa16 = qa16;
  g.bias = bias;
  g.c = c;
  RunTiles(g, m, true, threads);
}

// Whether integer A's tiles read A widened (the 8-bit tiles of the build that
// wants it; up to PanelGemvMaxRows rows take the decode passes).
namespace {
bool WidenIntA(int64_t m, const QuantPanels& w) {
  return m > PanelGemvMaxRows(PanelGemvA::kInteger) && w.bits == 8 && ActiveKernel().entries.int_a16;
}
}  // namespace

// IntWorkspace, then A widened to int16 where the build's tiles read it so.
int64_t QuantPanelsMatMulIntAWorkspace(int64_t m, const QuantPanels& w) {
  return WidenedAWorkspace(m, w, WidenIntA(m, w));
}

void QuantPanelsMatMulIntA(const QuantPanelsIntA& x, const QuantPanels& w, const float* bias, float* c,
                           void* workspace, int threads, const float* uniform_zero) {
  const int64_t m = x.m;
  if (m <= 0 || w.n <= 0) return;
  if (m <= PanelGemvMaxRows(PanelGemvA::kInteger)) return PanelGemvIntA(x, w, uniform_zero, bias, c, workspace, threads);
  const int64_t kb = w.k_blocks, kp = w.padded_k();
  int8_t* qa = static_cast<int8_t*>(workspace);
  int32_t* asum = reinterpret_cast<int32_t*>(qa + Align64(m * kp));
  const int shift = x.a_unsigned ? 128 : 0;  // qa = a - shift, so a - za = qa + (shift - za)
  int16_t* qa16 =
      WidenIntA(m, w) ? reinterpret_cast<int16_t*>(static_cast<char*>(workspace) + IntWorkspace(m, w)) : nullptr;
  ParallelFor(threads, m, WorkPerIndex{double(w.k)}, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int8_t* row = qa + r * kp;
      if (x.a_unsigned) {
        const uint8_t* src = static_cast<const uint8_t*>(x.a) + r * w.k;
        for (int64_t i = 0; i < w.k; ++i) row[i] = int8_t(int32_t(src[i]) - 128);
      } else {
        std::memcpy(row, static_cast<const int8_t*>(x.a) + r * w.k, size_t(w.k));
      }
      std::memset(row + w.k, 0, size_t(kp - w.k));
      if (qa16)
        for (int64_t i = 0; i < kp; ++i) qa16[r * kp + i] = row[i];
      for (int64_t b = 0; b < kb; ++b) {
        int32_t s = 0;
        for (int64_t i = b * w.block; i < (b + 1) * w.block; ++i) s += row[i];
        asum[r * kb + b] = s;
      }
    }
  });
  TileArgs g{};
  g.w = &w;
  g.qa = qa;
  g.lda = kp;
  g.asum = asum;
  g.qa16 = qa16;
  g.a_shift = shift - x.a_zero;
  g.a_scale = x.a_scale;
  g.bias = bias;
  g.c = c;
  RunTiles(g, m, false, threads);
}

CpuTarget QuantPanelsInt8Target() { return ActiveKernel().target; }

void QuantPanelsMatMulInt8Reference(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c) {
  std::vector<int8_t> qa(size_t(w.padded_k()));
  std::vector<float> sa(size_t(w.k_blocks));
  std::vector<int32_t> sum(size_t(w.k_blocks));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < w.k_blocks; ++b)
      sa[size_t(b)] = QuantizeBlock(a + r * w.k + b * w.block, BlockLen(w, b), qa.data() + b * w.block, &sum[size_t(b)]);
    for (int64_t col = 0; col < w.n; ++col) {
      const int64_t at = (col / kCols) * w.k_blocks * kCols + col % kCols;
      double y = bias ? bias[col] : 0.0;
      for (int64_t b = 0; b < w.k_blocks; ++b) {
        int64_t dot = 0;
        for (int64_t kk = b * w.block; kk < b * w.block + BlockLen(w, b); ++kk)
          dot += int64_t(w.Code(col, kk)) * qa[size_t(kk)];
        y += double(sa[size_t(b)]) * double(w.scales[at + b * kCols]) *
             (double(dot) - double(w.zeros[at + b * kCols]) * double(sum[size_t(b)]));
      }
      c[r * w.n + col] = float(y);
    }
  }
}

void QuantPanelsMatMulIntAReference(const QuantPanelsIntA& x, const QuantPanels& w, const float* bias, float* c) {
  for (int64_t r = 0; r < x.m; ++r)
    for (int64_t col = 0; col < w.n; ++col) {
      const int64_t at = (col / kCols) * w.k_blocks * kCols + col % kCols;
      int64_t sum = 0;
      for (int64_t kk = 0; kk < w.k; ++kk) {
        const int64_t i = r * w.k + kk;
        const int32_t a = x.a_unsigned ? int32_t(static_cast<const uint8_t*>(x.a)[i])
                                       : int32_t(static_cast<const int8_t*>(x.a)[i]);
        const int32_t zero = int32_t(w.zeros[at + (kk / w.block) * kCols]);
        sum += int64_t(a - x.a_zero) * int64_t(w.Code(col, kk) - zero);
      }
      c[r * w.n + col] = FinishInt(uint32_t(uint64_t(sum)), x.a_scale * w.scales[at], bias, col);
    }
}

}  // namespace onnx_mini
