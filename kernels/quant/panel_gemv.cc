#include "kernels/quant/panel_gemv.h"

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
#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_digits.h"
#include "runtime/thread_pool.h"

// Loops at 64-byte boundaries (GCC): the int8 decode loop's speed otherwise
// depends on where the linker puts it (Zen 3, an acc 4 decode step's
// products: 3.3-3.4 ms in one layout, 2.9 in another; aligned, 2.9 in both).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("align-loops=64")
#endif

// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

constexpr int kCols = int(kQuantPanelCols);
constexpr int64_t kGroup = kQuantPanelGroupBytes;
// Bytes of codes ahead that a pass prefetches (and the scales of those codes).
constexpr int64_t kPrefetchBytes = 8192;
// Integer A's in the zmm build (8-bit codes, 128 bytes a step): 4 KiB
// measured 2-8% faster than 8 KiB at 1 row (bench-qgemm's q8 decode, K 1024,
// N 2816 and 32000), 16 KiB and more 10-15% slower; the ymm build measured
// no better with it.
constexpr int64_t kIntAPrefetchBytes = 4096;
// Base-256 digits of A the float path's integer products take.
constexpr int kDigits = kPanelDigits;

// One pass: A's rows prepared for the panels, and where the results go.
struct Args {
  const QuantPanels* w;
  const void* a;    // float: m rows of padded_k floats; int8: m rows of padded_k int8 (zero-padded)
  const float* s1;  // m x k_blocks. float: sum of a over the block; int8: the block's scale sa
  const float* s2;  // int8: m x k_blocks, sa * the block's sum of q
  const float* bias;
  float* c;
  int64_t m;
  bool uniform;  // s1 (float) or s2 (int8) already times the uniform zero point: zeros unread
  // Integer A (PanelGemvIntA): a holds qa (int8), a - za = qa + a_shift.
  const int32_t* asum;  // m x k_blocks, sum of qa over the block
  int32_t a_shift;
  int32_t b_zero;       // the uniform zero point (with `uniform`)
  float a_scale;
};

// K values per 64-byte group of codes.
template <int Bits>
constexpr int KPerGroup() {
  return Bits == 4 ? 8 : 4;
}
// Bit offset, within a column's dword of a group, of the t-th k's code.
template <int Bits>
constexpr int Shift(int t) {
  return Bits == 8 ? 8 * t : t < 4 ? 8 * t : 8 * (t - 4) + 4;
}

// Integer A's exact correction for rows [0, M) of panel p: per column, the
// sum over blocks of a_shift * (code_sums - len * zero) - zero * sum qa, so
// that dot + correction = sum (a - za) (code - zero), wrapping in int32 as
// onnxruntime's sums do.
template <int M>
[[gnu::always_inline]] inline void IntACorrection(const Args& d, int64_t p, int32_t (*corr)[kCols]) {
  const QuantPanels& w = *d.w;
  const int64_t kb = w.k_blocks;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < kCols; ++c) corr[r][c] = 0;
  for (int64_t b = 0; b < kb; ++b) {
    const int64_t at = (p * kb + b) * kCols;
    const uint32_t len = uint32_t(std::min(w.block, w.k - b * w.block));
    for (int c = 0; c < kCols; ++c) {
      const uint32_t zu = uint32_t(d.uniform ? d.b_zero : int32_t(w.zeros[at + c]));
      const uint32_t t = uint32_t(d.a_shift) * (uint32_t(w.code_sums[at + c]) - len * zu);
      for (int r = 0; r < M; ++r) corr[r][c] = int32_t(uint32_t(corr[r][c]) + t - zu * uint32_t(d.asum[r * kb + b]));
    }
  }
}

// y = float(sum) * (a_scale * scale) + bias in two roundings (no fused
// multiply-add: the integer reference's and onnxruntime's value), for
// columns [col, col + left) of pass row r; scale: block 0's of the panel.
[[gnu::always_inline]] inline void IntAStore(const Args& d, int r, int64_t col, int64_t left, const int32_t* sum,
                                             const float* scale) {
  for (int64_t i = 0; i < left; ++i) {
    float y = float(sum[i]) * (d.a_scale * scale[i]);
#if defined(__x86_64__)
    asm("" : "+x"(y));
#endif
    d.c[r * d.w->n + col + i] = d.bias ? y + d.bias[col + i] : y;
  }
}

// Integer A with plain loops (the baseline build): a (row, panel) of int32
// dots over the panel's blocks, then the same finish.
template <int M, int Bits>
void IntAPlainPanel(const Args& d, int64_t p) {
  constexpr int kPer = KPerGroup<Bits>();
  const QuantPanels& w = *d.w;
  const int64_t kb = w.k_blocks, kp = w.padded_k(), groups = w.block / kPer;
  const uint8_t* q = w.codes + p * kb * w.block_bytes();
  const int8_t* a = static_cast<const int8_t*>(d.a);
  int32_t sum[M][kCols];
  IntACorrection<M>(d, p, sum);
  for (int64_t b = 0; b < kb; ++b) {
    __builtin_prefetch(w.code_sums + (p * kb + b) * kCols + (kPrefetchBytes / w.block_bytes()) * kCols);
    for (int64_t g = 0; g < groups; ++g, q += kGroup) {
      __builtin_prefetch(q + kPrefetchBytes);
      const int64_t kk = b * w.block + g * kPer;
      for (int r = 0; r < M; ++r)
        for (int c = 0; c < kCols; ++c) {
          uint32_t t = 0;
          for (int j = 0; j < kPer; ++j) {
            const int code = Bits == 8 ? q[c * 4 + j] : j < 4 ? q[c * 4 + j] & 15 : q[c * 4 + j - 4] >> 4;
            t += uint32_t(code * int32_t(a[r * kp + kk + j]));
          }
          sum[r][c] = int32_t(uint32_t(sum[r][c]) + t);
        }
    }
  }
  const int64_t col0 = p * kCols, left = std::min<int64_t>(kCols, w.n - col0);
  for (int r = 0; r < M; ++r) IntAStore(d, r, col0, left, sum[r], w.scales + p * kb * kCols);
}

template <int M>
void IntAPlainPanels(const Args& d, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    if (d.w->bits == 4) IntAPlainPanel<M, 4>(d, p);
    else IntAPlainPanel<M, 8>(d, p);
  }
}

void IntABaseline(const Args& d, int64_t p0, int64_t p1) {
  switch (d.m) {
    case 1: return IntAPlainPanels<1>(d, p0, p1);
    case 2: return IntAPlainPanels<2>(d, p0, p1);
    case 3: return IntAPlainPanels<3>(d, p0, p1);
    default: return IntAPlainPanels<4>(d, p0, p1);
  }
}

// ---- Float: generic vectors of W lanes (AVX2: 8, baseline: 4), 16 / W of them a panel ----

template <int W>
struct GV {
  typedef float F __attribute__((vector_size(W * 4)));
  typedef int32_t I __attribute__((vector_size(W * 4)));
};

template <int W, int M, int Bits>
[[gnu::always_inline]] inline void FloatGenericPanel(const Args& d, int64_t p) {
  using F = typename GV<W>::F;
  using I = typename GV<W>::I;
  constexpr int H = kCols / W, kPer = KPerGroup<Bits>();
  // Independent accumulators a row (k by turns): shorter FMA chains, and
  // sums of a quarter of a block each (rounding error as the AVX-512 build's).
  constexpr int NA = M * H <= 2 ? 4 : M * H <= 4 ? 2 : 1;
  const QuantPanels& w = *d.w;
  const int64_t kb = w.k_blocks, kp = w.padded_k(), bb = w.block_bytes(), groups = w.block / kPer;
  const uint8_t* q = w.codes + p * kb * bb;
  const float* sc = w.scales + p * kb * kCols;
  const float* zp = w.zeros + p * kb * kCols;
  const float* a = static_cast<const float*>(d.a);
  F acc[M][H] = {};
  for (int64_t b = 0; b < kb; ++b) {
    __builtin_prefetch(sc + (b + kPrefetchBytes / bb) * kCols);
    F part[M][NA][H] = {};
    const float* ab = a + b * w.block;
    for (int64_t g = 0; g < groups; ++g, q += kGroup, ab += kPer) {
      __builtin_prefetch(q + kPrefetchBytes);
      I v[H];
      // One load a vector (a copy of the array goes through the stack in
      // halves, and the wide reloads then wait for the stores).
      for (int h = 0; h < H; ++h) std::memcpy(&v[h], q + h * W * 4, sizeof(I));
#pragma GCC unroll 8
      for (int t = 0; t < kPer; ++t) {
        F f[H];
        for (int h = 0; h < H; ++h) f[h] = __builtin_convertvector((v[h] >> Shift<Bits>(t)) & ((1 << Bits) - 1), F);
        for (int r = 0; r < M; ++r) {
          const float x = ab[r * kp + t];
          for (int h = 0; h < H; ++h) part[r][t % NA][h] += f[h] * x;
        }
      }
    }
    for (int r = 0; r < M; ++r) {
      const float zs = d.s1[r * kb + b];
      for (int h = 0; h < H; ++h) {
        F s = part[r][0][h], scale, zero;
        for (int i = 1; i < NA; ++i) s += part[r][i][h];
        std::memcpy(&scale, sc + b * kCols + h * W, sizeof(F));
        if (d.uniform) {
          s -= zs;
        } else {
          std::memcpy(&zero, zp + b * kCols + h * W, sizeof(F));
          s -= zero * zs;
        }
        acc[r][h] += s * scale;
      }
    }
  }
  const int64_t col0 = p * kCols, left = std::min<int64_t>(kCols, w.n - col0);
  for (int r = 0; r < M; ++r) {
    float y[kCols];
    std::memcpy(y, acc[r], sizeof(y));
    for (int64_t i = 0; i < left; ++i) d.c[r * w.n + col0 + i] = d.bias ? y[i] + d.bias[col0 + i] : y[i];
  }
}

template <int W, int M>
[[gnu::always_inline]] inline void FloatGenericPanels(const Args& d, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    if (d.w->bits == 4) FloatGenericPanel<W, M, 4>(d, p);
    else FloatGenericPanel<W, M, 8>(d, p);
  }
}

template <int W>
[[gnu::always_inline]] inline void FloatGeneric(const Args& d, int64_t p0, int64_t p1) {
  switch (d.m) {
    case 1: return FloatGenericPanels<W, 1>(d, p0, p1);
    case 2: return FloatGenericPanels<W, 2>(d, p0, p1);
    case 3: return FloatGenericPanels<W, 3>(d, p0, p1);
    default: return FloatGenericPanels<W, 4>(d, p0, p1);
  }
}

void FloatBaseline(const Args& d, int64_t p0, int64_t p1) { FloatGeneric<4>(d, p0, p1); }

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void FloatAvx2(const Args& d, int64_t p0, int64_t p1) { FloatGeneric<8>(d, p0, p1); }

#define ONNX_MINI_PG512 gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), gnu::always_inline

// ---- Float, AVX-512: a panel's 16 columns one zmm; a 4-bit code picked by
// a shift and a permute of the 16 values 0..15 (its index is the dword's low
// 4 bits: no mask), 8-bit by a shift, a mask and a conversion ----

// acc[t % NA] += code(t) * a[t] for row r, the t-th k of a group.
template <int M, int Bits, int NA, int T>
[[ONNX_MINI_PG512]] inline void Float512Step(__m512i v, __m512 table, const float* ab, int64_t kp,
                                            __m512 (&part)[M][NA]) {
  __m512 f;
  constexpr int s = Shift<Bits>(T);
  const __m512i x = s ? _mm512_maskz_srli_epi32(0xFFFF, v, s) : v;
  if constexpr (Bits == 4) {
    f = _mm512_maskz_permutexvar_ps(0xFFFF, x, table);
  } else {
    f = _mm512_maskz_cvtepi32_ps(0xFFFF, T < 3 ? _mm512_and_si512(x, _mm512_set1_epi32(255)) : x);
  }
  for (int r = 0; r < M; ++r) part[r][T % NA] = _mm512_fmadd_ps(f, _mm512_set1_ps(ab[r * kp + T]), part[r][T % NA]);
}

template <int M, int Bits, int NA, int... T>
[[ONNX_MINI_PG512]] inline void Float512Group(__m512i v, __m512 table, const float* ab, int64_t kp,
                                             __m512 (&part)[M][NA], std::integer_sequence<int, T...>) {
  (Float512Step<M, Bits, NA, T>(v, table, ab, kp, part), ...);
}

template <int M, int Bits>
[[ONNX_MINI_PG512]] inline void Float512Panel(const Args& d, int64_t p) {
  constexpr int kPer = KPerGroup<Bits>();
  // Independent accumulators a row: FMA chains short enough to overlap.
  constexpr int NA = std::min(kPer, M == 1 ? 8 : M == 2 ? 4 : 2);
  const QuantPanels& w = *d.w;
  const int64_t kb = w.k_blocks, kp = w.padded_k(), bb = w.block_bytes(), groups = w.block / kPer;
  const uint8_t* q = w.codes + p * kb * bb;
  const float* sc = w.scales + p * kb * kCols;
  const float* zp = w.zeros + p * kb * kCols;
  const float* a = static_cast<const float*>(d.a);
  const __m512 table = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int64_t ahead = (kPrefetchBytes / bb) * kCols;
  __m512 acc[M];
  for (int r = 0; r < M; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < kb; ++b) {
    _mm_prefetch(reinterpret_cast<const char*>(sc + b * kCols + ahead), _MM_HINT_T0);
    if (!d.uniform) _mm_prefetch(reinterpret_cast<const char*>(zp + b * kCols + ahead), _MM_HINT_T0);
    __m512 part[M][NA];
    for (int r = 0; r < M; ++r)
      for (int i = 0; i < NA; ++i) part[r][i] = _mm512_setzero_ps();
    const float* ab = a + b * w.block;
    for (int64_t g = 0; g < groups; ++g, q += kGroup, ab += kPer) {
      _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchBytes), _MM_HINT_T0);
      Float512Group<M, Bits, NA>(_mm512_loadu_si512(q), table, ab, kp, part,
                                 std::make_integer_sequence<int, kPer>{});
    }
    const __m512 scale = _mm512_loadu_ps(sc + b * kCols);
    for (int r = 0; r < M; ++r) {
      __m512 s = part[r][0];
      for (int i = 1; i < NA; ++i) s = _mm512_add_ps(s, part[r][i]);
      const __m512 zs = _mm512_set1_ps(d.s1[r * kb + b]);
      s = d.uniform ? _mm512_sub_ps(s, zs) : _mm512_fnmadd_ps(_mm512_loadu_ps(zp + b * kCols), zs, s);
      acc[r] = _mm512_fmadd_ps(s, scale, acc[r]);
    }
  }
  const int64_t col0 = p * kCols, left = std::min<int64_t>(kCols, w.n - col0);
  const __mmask16 mask = __mmask16((1u << left) - 1);
  for (int r = 0; r < M; ++r) {
    __m512 y = acc[r];
    if (d.bias) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask, d.bias + col0));
    _mm512_mask_storeu_ps(d.c + r * w.n + col0, mask, y);
  }
}

template <int M>
[[ONNX_MINI_PG512]] inline void Float512Panels(const Args& d, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    if (d.w->bits == 4) Float512Panel<M, 4>(d, p);
    else Float512Panel<M, 8>(d, p);
  }
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void FloatAvx512(const Args& d, int64_t p0,
                                                                              int64_t p1) {
  switch (d.m) {
    case 1: return Float512Panels<1>(d, p0, p1);
    case 2: return Float512Panels<2>(d, p0, p1);
    case 3: return Float512Panels<3>(d, p0, p1);
    default: return Float512Panels<4>(d, p0, p1);
  }
}

// ---- Integer products (VNNI). 4-bit: a group's low nibbles are k 0..3 of
// its 8, the high nibbles k 4..7; each meets one broadcast dword of A (4
// int8). A is P int8 digits a value: P = 1 is accuracy level 4's int8 A; the
// float path takes P = 3, A per (row, block) as an integer Q of 24 bits
// (|Q| <= 127 * 2^16, scale max |a| / (127 * 2^16)) in balanced base-256
// digits, Q = (q0 * 256 + q1) * 256 + q2: each digit's products exact in
// int32, A within 2^-24 of its block's max (float32's own rounding of a) ----

#define ONNX_MINI_PGVNNI512 \
  gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma"), gnu::always_inline

// Digit p of row r of the pass: rows of P digit arrays of padded_k values.
template <int P>
inline const int8_t* Digits(const Args& d, int r, int p) {
  return static_cast<const int8_t*>(d.a) + (int64_t(r) * P + p) * d.w->padded_k();
}

// acc += VPDPBUSD(u, a dword of A broadcast from memory), in assembly: with
// the intrinsic GCC 12 copied each accumulator to another register and back
// around every VPDPBUSD and broadcast A apart (33 instructions a 64-byte
// group of 4-bit codes for 3 digits of A, 15 this way). In cache (bench-nbits
// --copies 1, 1 thread, 1 row, Zen 5): 3 digits 38-40 -> 32-34 us (K 1024,
// N 2816), int8 19.7-20.9 -> 18.0-18.4: the float path's compute was ~85% of
// its memory time at 1 thread, ~70% now.
typedef int32_t __attribute__((may_alias)) ADword;
[[ONNX_MINI_PGVNNI512]] inline void Dpbusd512(__m512i& acc, __m512i u, const int8_t* a4) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const ADword*>(a4)));
}

// y += scale * (sa * dot - zero * sa * sum Q), per block, in float; with
// kInt (integer A, P = 1) the dots summed over blocks in int32 and finished
// once (IntACorrection, IntAStore).
template <int M, int Bits, int P, bool kInt = false>
[[ONNX_MINI_PGVNNI512]] inline void Int8ZmmPanel(const Args& d, int64_t p) {
  constexpr int kPer = KPerGroup<Bits>();
  // Accumulators a (row, digit): two (low and high nibbles, or alternate
  // 8-bit groups) where the registers allow, for shorter chains.
  constexpr int NS = M * P <= 8 ? 2 : 1;
  const QuantPanels& w = *d.w;
  const int64_t kb = w.k_blocks, bb = w.block_bytes(), groups = w.block / kPer;
  const uint8_t* q = w.codes + p * kb * bb;
  const float* sc = w.scales + p * kb * kCols;
  const float* zp = w.zeros + p * kb * kCols;
  const int32_t* cs = w.code_sums + p * kb * kCols;
  const int8_t* a[M][P];
  for (int r = 0; r < M; ++r)
    for (int i = 0; i < P; ++i) a[r][i] = Digits<P>(d, r, i);
  const __m512i low = _mm512_set1_epi8(15);
  const int64_t ahead = (kPrefetchBytes / bb) * kCols;
  __m512 acc[M];
  __m512i isum[M];
  for (int r = 0; r < M; ++r) {
    acc[r] = _mm512_setzero_ps();
    isum[r] = _mm512_setzero_si512();
  }
  for (int64_t b = 0; b < kb; ++b) {
    _mm_prefetch(reinterpret_cast<const char*>(kInt ? static_cast<const void*>(cs + b * kCols + ahead)
                                                    : static_cast<const void*>(sc + b * kCols + ahead)),
                 _MM_HINT_T0);
    if (!d.uniform) _mm_prefetch(reinterpret_cast<const char*>(zp + b * kCols + ahead), _MM_HINT_T0);
    __m512i dot[M][P][NS];
    for (int r = 0; r < M; ++r)
      for (int i = 0; i < P; ++i)
        for (int h = 0; h < NS; ++h) dot[r][i][h] = _mm512_setzero_si512();
    const int64_t k0 = b * w.block;
    // Two 64-byte steps a pass of the loop: the low and high nibbles of one
    // 4-bit group, or two 8-bit groups.
    const int64_t steps = Bits == 4 ? groups : groups / 2;
    for (int64_t g = 0; g < steps; ++g, q += 64 * (Bits == 4 ? 1 : 2)) {
      constexpr int64_t ahead_bytes = kInt ? kIntAPrefetchBytes : kPrefetchBytes;
      _mm_prefetch(reinterpret_cast<const char*>(q + ahead_bytes), _MM_HINT_T0);
      // 8-bit codes: two lines a step, each prefetched.
      if (Bits == 8) _mm_prefetch(reinterpret_cast<const char*>(q + ahead_bytes + kGroup), _MM_HINT_T0);
      __m512i u0, u1;
      if constexpr (Bits == 4) {
        const __m512i v = _mm512_loadu_si512(q);
        u0 = _mm512_and_si512(v, low);
        u1 = _mm512_and_si512(_mm512_maskz_srli_epi16(~__mmask32(0), v, 4), low);
      } else {
        u0 = _mm512_loadu_si512(q);
        u1 = _mm512_loadu_si512(q + kGroup);
      }
      const int64_t kk = k0 + 8 * g;
      for (int r = 0; r < M; ++r)
        for (int i = 0; i < P; ++i) {
          Dpbusd512(dot[r][i][0], u0, a[r][i] + kk);
          Dpbusd512(dot[r][i][NS - 1], u1, a[r][i] + kk + 4);
        }
    }
    if constexpr (kInt) {
      for (int r = 0; r < M; ++r)
        isum[r] = _mm512_add_epi32(isum[r], NS == 2 ? _mm512_add_epi32(dot[r][0][0], dot[r][0][NS - 1]) : dot[r][0][0]);
      continue;
    }
    const __m512 scale = _mm512_loadu_ps(sc + b * kCols);
    for (int r = 0; r < M; ++r) {
      __m512 f = _mm512_setzero_ps();
      for (int i = 0; i < P; ++i) {
        const __m512i di = NS == 2 ? _mm512_add_epi32(dot[r][i][0], dot[r][i][NS - 1]) : dot[r][i][0];
        f = i == 0 ? _mm512_maskz_cvtepi32_ps(0xFFFF, di)
                   : _mm512_fmadd_ps(f, _mm512_set1_ps(256.f), _mm512_maskz_cvtepi32_ps(0xFFFF, di));
      }
      const __m512 sa = _mm512_set1_ps(d.s1[r * kb + b]), zq = _mm512_set1_ps(d.s2[r * kb + b]);
      const __m512 t = d.uniform ? _mm512_fmsub_ps(f, sa, zq)
                                 : _mm512_fnmadd_ps(_mm512_loadu_ps(zp + b * kCols), zq, _mm512_mul_ps(f, sa));
      acc[r] = _mm512_fmadd_ps(t, scale, acc[r]);
    }
  }
  const int64_t col0 = p * kCols, left = std::min<int64_t>(kCols, w.n - col0);
  const __mmask16 mask = __mmask16((1u << left) - 1);
  if constexpr (kInt) {
    // IntACorrection and IntAStore in vectors.
    for (int64_t b = 0; b < kb; ++b) {
      const __m512i zu = d.uniform ? _mm512_set1_epi32(d.b_zero)
                                   : _mm512_maskz_cvtps_epi32(0xFFFF, _mm512_loadu_ps(zp + b * kCols));
      const __m512i len = _mm512_set1_epi32(int32_t(std::min(w.block, w.k - b * w.block)));
      const __m512i t = _mm512_mullo_epi32(_mm512_set1_epi32(d.a_shift),
                                           _mm512_sub_epi32(_mm512_loadu_si512(cs + b * kCols), _mm512_mullo_epi32(len, zu)));
      for (int r = 0; r < M; ++r)
        isum[r] = _mm512_add_epi32(isum[r], _mm512_sub_epi32(t, _mm512_mullo_epi32(zu, _mm512_set1_epi32(d.asum[r * kb + b]))));
    }
    const __m512 s = _mm512_mul_ps(_mm512_set1_ps(d.a_scale), _mm512_loadu_ps(sc));
    for (int r = 0; r < M; ++r) {
      __m512 y = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, isum[r]), s);
      asm("" : "+v"(y));  // no fused multiply-add: two roundings, as the reference
      if (d.bias) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask, d.bias + col0));
      _mm512_mask_storeu_ps(d.c + r * w.n + col0, mask, y);
    }
    return;
  }
  for (int r = 0; r < M; ++r) {
    __m512 y = acc[r];
    if (d.bias) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask, d.bias + col0));
    _mm512_mask_storeu_ps(d.c + r * w.n + col0, mask, y);
  }
}

template <int M, int P, bool kInt = false>
[[ONNX_MINI_PGVNNI512]] inline void Int8ZmmPanels(const Args& d, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    if (d.w->bits == 4) Int8ZmmPanel<M, 4, P, kInt>(d, p);
    else Int8ZmmPanel<M, 8, P, kInt>(d, p);
  }
}

template <int P, bool kInt = false>
[[ONNX_MINI_PGVNNI512]] inline void Int8Zmm(const Args& d, int64_t p0, int64_t p1) {
  switch (d.m) {
    case 1: return Int8ZmmPanels<1, P, kInt>(d, p0, p1);
    case 2: return Int8ZmmPanels<2, P, kInt>(d, p0, p1);
    case 3: return Int8ZmmPanels<3, P, kInt>(d, p0, p1);
    default: return Int8ZmmPanels<4, P, kInt>(d, p0, p1);
  }
}

[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")]] void Int8Avx512Vnni(const Args& d,
                                                                                           int64_t p0, int64_t p1) {
  Int8Zmm<1>(d, p0, p1);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")]] void DigitsAvx512Vnni(const Args& d,
                                                                                             int64_t p0, int64_t p1) {
  Int8Zmm<kDigits>(d, p0, p1);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")]] void IntAAvx512Vnni(const Args& d, int64_t p0,
                                                                                           int64_t p1) {
  Int8Zmm<1, true>(d, p0, p1);
}

// AVX-VNNI (ymm): a panel two halves of 8 columns (the group's first and
// second 32 bytes). The VEX instruction in inline assembly: GCC 12 and clang
// 14 name its intrinsic differently. Without VNNI (AVX2, integer A) the same
// loops with VPDPBUSD made of VPMADDWD: codes and A split into their even
// and odd bytes as int16 (exact: |code * a| <= 255 * 128).
#define ONNX_MINI_PGYMM gnu::target("avx2,fma"), gnu::always_inline

template <bool kVnni>
[[ONNX_MINI_PGYMM]] inline void Dpbusd256(__m256i& acc, __m256i u, __m256i s) {
  if constexpr (kVnni) {
    asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  } else {
    const __m256i ue = _mm256_and_si256(u, _mm256_set1_epi16(255)), uo = _mm256_srli_epi16(u, 8);
    const __m256i se = _mm256_srai_epi16(_mm256_slli_epi16(s, 8), 8), so = _mm256_srai_epi16(s, 8);
    acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(ue, se), _mm256_madd_epi16(uo, so)));
  }
}

// 4-bit codes without VNNI: VPMADDUBSW of codes (0..15) and pairs of A's
// int8 is exact in int16 (2 * 15 * 128 < 2^15), and so is the sum of 8 of
// them (32 k, 4 groups: 16 * 15 * 128 = 30720); VPMADDWD with ones widens
// each such sum to int32. Two multiplies and two adds a (row, digit, half)
// a group where VPDPBUSD made of VPMADDWD (Dpbusd256<false>) takes 14.
// dot[r][i][hh][0] += the block's dots of halves h0 + hh.
template <int M, int P, int HP, int NS>
[[ONNX_MINI_PGYMM]] inline void Int4NoVnniHalves(const uint8_t* q, const int8_t* const (&a)[M][P], int64_t k0,
                                                int64_t groups, int h0, __m256i (&dot)[M][P][HP][NS]) {
  constexpr int64_t kChunk = 4;  // groups summed in int16
  const __m256i low = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
  for (int64_t g0 = 0; g0 < groups; g0 += kChunk) {
    __m256i s16[M][P][HP];
    for (int r = 0; r < M; ++r)
      for (int i = 0; i < P; ++i)
        for (int hh = 0; hh < HP; ++hh) s16[r][i][hh] = _mm256_setzero_si256();
    const int64_t g1 = std::min(groups, g0 + kChunk);
    for (int64_t g = g0; g < g1; ++g) {
      if (h0 == 0) _mm_prefetch(reinterpret_cast<const char*>(q + g * kGroup + kPrefetchBytes), _MM_HINT_T0);
      const int64_t kk = k0 + 8 * g;
      for (int hh = 0; hh < HP; ++hh) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + g * kGroup + 32 * (h0 + hh)));
        const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        for (int r = 0; r < M; ++r)
          for (int i = 0; i < P; ++i) {
            int32_t x0, x1;
            std::memcpy(&x0, a[r][i] + kk, 4);
            std::memcpy(&x1, a[r][i] + kk + 4, 4);
            s16[r][i][hh] = _mm256_add_epi16(s16[r][i][hh], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(x0)));
            s16[r][i][hh] = _mm256_add_epi16(s16[r][i][hh], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(x1)));
          }
      }
    }
    for (int r = 0; r < M; ++r)
      for (int i = 0; i < P; ++i)
        for (int hh = 0; hh < HP; ++hh)
          dot[r][i][hh][0] = _mm256_add_epi32(dot[r][i][hh][0], _mm256_madd_epi16(s16[r][i][hh], ones));
  }
}

// A block's two halves in one pass where their accumulators fit the 16
// registers, else one after the other (the second re-reads the block's codes
// from L1). 8-bit
// codes: two accumulators a (row, digit) where the registers allow (one
// VPDPBUSD chain of 32 bytes would bound a row's pass below the bandwidth).
template <int M, int Bits, int P, bool kInt = false, bool kVnni = true>
[[ONNX_MINI_PGYMM]] inline void Int8YmmPanel(const Args& d, int64_t p) {
  constexpr int kPer = KPerGroup<Bits>();
  constexpr int NS = Bits == 8 && M * P <= 4 ? 2 : 1;
  // Halves a pass over the block: both where their accumulators fit (a
  // single read of the codes), else one after the other.
  constexpr int HP = M * P * NS <= 4 ? 2 : 1;
  const QuantPanels& w = *d.w;
  const int64_t kb = w.k_blocks, bb = w.block_bytes(), groups = w.block / kPer;
  const uint8_t* q = w.codes + p * kb * bb;
  const float* sc = w.scales + p * kb * kCols;
  const float* zp = w.zeros + p * kb * kCols;
  const int32_t* cs = w.code_sums + p * kb * kCols;
  const int8_t* a[M][P];
  for (int r = 0; r < M; ++r)
    for (int i = 0; i < P; ++i) a[r][i] = Digits<P>(d, r, i);
  const __m256i low = _mm256_set1_epi8(15);
  const int64_t ahead = (kPrefetchBytes / bb) * kCols;
  __m256 acc[M][2];
  __m256i isum[M][2];
  for (int r = 0; r < M; ++r) {
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    isum[r][0] = isum[r][1] = _mm256_setzero_si256();
  }
  for (int64_t b = 0; b < kb; ++b, q += bb) {
    _mm_prefetch(reinterpret_cast<const char*>(kInt ? static_cast<const void*>(cs + b * kCols + ahead)
                                                    : static_cast<const void*>(sc + b * kCols + ahead)),
                 _MM_HINT_T0);
    if (!d.uniform) _mm_prefetch(reinterpret_cast<const char*>(zp + b * kCols + ahead), _MM_HINT_T0);
    const int64_t k0 = b * w.block;
    for (int h0 = 0; h0 < 2; h0 += HP) {
      __m256i dot[M][P][HP][NS];
      for (int r = 0; r < M; ++r)
        for (int i = 0; i < P; ++i)
          for (int hh = 0; hh < HP; ++hh)
            for (int j = 0; j < NS; ++j) dot[r][i][hh][j] = _mm256_setzero_si256();
      if constexpr (Bits == 4 && !kVnni) {
        Int4NoVnniHalves<M, P, HP>(q, a, k0, groups, h0, dot);
      } else {
        // 8-bit codes: NS groups a pass (groups is even: block is a multiple of 8).
        for (int64_t g = 0; g < groups; g += (Bits == 8 ? NS : 1)) {
          if (h0 == 0) {
            _mm_prefetch(reinterpret_cast<const char*>(q + g * kGroup + kPrefetchBytes), _MM_HINT_T0);
            if (Bits == 8 && NS == 2)
              _mm_prefetch(reinterpret_cast<const char*>(q + (g + 1) * kGroup + kPrefetchBytes), _MM_HINT_T0);
          }
          const int64_t kk = k0 + kPer * g;
          for (int hh = 0; hh < HP; ++hh) {
            const int h = h0 + hh;
            if constexpr (Bits == 4) {
              const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + g * kGroup + 32 * h));
              const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
              for (int r = 0; r < M; ++r)
                for (int i = 0; i < P; ++i) {
                  int32_t x0, x1;
                  std::memcpy(&x0, a[r][i] + kk, 4);
                  std::memcpy(&x1, a[r][i] + kk + 4, 4);
                  Dpbusd256<kVnni>(dot[r][i][hh][0], lo, _mm256_set1_epi32(x0));
                  Dpbusd256<kVnni>(dot[r][i][hh][0], hi, _mm256_set1_epi32(x1));
                }
            } else {
              __m256i v[NS];
              for (int j = 0; j < NS; ++j)
                v[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + (g + j) * kGroup + 32 * h));
              for (int r = 0; r < M; ++r)
                for (int i = 0; i < P; ++i)
                  for (int j = 0; j < NS; ++j) {
                    int32_t x0;
                    std::memcpy(&x0, a[r][i] + kk + 4 * j, 4);
                    Dpbusd256<kVnni>(dot[r][i][hh][j], v[j], _mm256_set1_epi32(x0));
                  }
            }
          }
        }
      }
      for (int hh = 0; hh < HP; ++hh) {
        const int h = h0 + hh;
        if constexpr (NS == 2)
          for (int r = 0; r < M; ++r)
            for (int i = 0; i < P; ++i) dot[r][i][hh][0] = _mm256_add_epi32(dot[r][i][hh][0], dot[r][i][hh][1]);
        if constexpr (kInt) {
          for (int r = 0; r < M; ++r) isum[r][h] = _mm256_add_epi32(isum[r][h], dot[r][0][hh][0]);
          continue;
        }
        const __m256 scale = _mm256_loadu_ps(sc + b * kCols + 8 * h);
        for (int r = 0; r < M; ++r) {
          __m256 f = _mm256_cvtepi32_ps(dot[r][0][hh][0]);
          for (int i = 1; i < P; ++i)
            f = _mm256_fmadd_ps(f, _mm256_set1_ps(256.f), _mm256_cvtepi32_ps(dot[r][i][hh][0]));
          const __m256 sa = _mm256_set1_ps(d.s1[r * kb + b]), zq = _mm256_set1_ps(d.s2[r * kb + b]);
          const __m256 t = d.uniform
                               ? _mm256_fmsub_ps(f, sa, zq)
                               : _mm256_fnmadd_ps(_mm256_loadu_ps(zp + b * kCols + 8 * h), zq, _mm256_mul_ps(f, sa));
          acc[r][h] = _mm256_fmadd_ps(t, scale, acc[r][h]);
        }
      }
    }
  }
  const int64_t col0 = p * kCols, left = std::min<int64_t>(kCols, w.n - col0);
  if constexpr (kInt) {
    int32_t sum[M][kCols];
    IntACorrection<M>(d, p, sum);
    for (int r = 0; r < M; ++r) {
      for (int h = 0; h < 2; ++h) {
        __m256i* at = reinterpret_cast<__m256i*>(sum[r] + 8 * h);
        _mm256_storeu_si256(at, _mm256_add_epi32(isum[r][h], _mm256_loadu_si256(at)));
      }
      IntAStore(d, r, col0, left, sum[r], sc);
    }
    return;
  }
  for (int r = 0; r < M; ++r) {
    float y[kCols];
    _mm256_storeu_ps(y, acc[r][0]);
    _mm256_storeu_ps(y + 8, acc[r][1]);
    for (int64_t i = 0; i < left; ++i) d.c[r * w.n + col0 + i] = d.bias ? y[i] + d.bias[col0 + i] : y[i];
  }
}

template <int M, int P, bool kInt, bool kVnni>
[[ONNX_MINI_PGYMM]] inline void Int8YmmPanels(const Args& d, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    if (d.w->bits == 4) Int8YmmPanel<M, 4, P, kInt, kVnni>(d, p);
    else Int8YmmPanel<M, 8, P, kInt, kVnni>(d, p);
  }
}

template <int P, bool kInt = false, bool kVnni = true>
[[ONNX_MINI_PGYMM]] inline void Int8Ymm(const Args& d, int64_t p0, int64_t p1) {
  switch (d.m) {
    case 1: return Int8YmmPanels<1, P, kInt, kVnni>(d, p0, p1);
    case 2: return Int8YmmPanels<2, P, kInt, kVnni>(d, p0, p1);
    case 3: return Int8YmmPanels<3, P, kInt, kVnni>(d, p0, p1);
    default: return Int8YmmPanels<4, P, kInt, kVnni>(d, p0, p1);
  }
}

[[gnu::target("avx2,fma,avxvnni")]] void Int8AvxVnni(const Args& d, int64_t p0, int64_t p1) { Int8Ymm<1>(d, p0, p1); }
[[gnu::target("avx2,fma,avxvnni")]] void DigitsAvxVnni(const Args& d, int64_t p0, int64_t p1) {
  Int8Ymm<kDigits>(d, p0, p1);
}
[[gnu::target("avx2,fma,avxvnni")]] void IntAAvxVnni(const Args& d, int64_t p0, int64_t p1) {
  Int8Ymm<1, true>(d, p0, p1);
}
[[gnu::target("avx2,fma")]] void IntAAvx2(const Args& d, int64_t p0, int64_t p1) { Int8Ymm<1, true, false>(d, p0, p1); }
[[gnu::target("avx2,fma")]] void Int8Avx2(const Args& d, int64_t p0, int64_t p1) { Int8Ymm<1, false, false>(d, p0, p1); }
[[gnu::target("avx2,fma")]] void DigitsAvx2(const Args& d, int64_t p0, int64_t p1) {
  Int8Ymm<kDigits, false, false>(d, p0, p1);
}
#undef ONNX_MINI_PGYMM
#undef ONNX_MINI_PG512
#undef ONNX_MINI_PGVNNI512
#endif

using PanelsFn = void (*)(const Args&, int64_t, int64_t);

using DigitsFn = PanelDigitsFn;

// The float product's build: `parts` 0 takes A as floats (FMA), kDigits as
// base-256 digits (integer products); `float_8bit`, where set, takes 8-bit
// codes instead with float A (AVX2: VPDPBUSD made of VPMADDWD costs more than
// the FMA a k for them, VPMADDUBSW's 4-bit form less).
struct FloatEntry {
  PanelsFn fn;
  int parts;
  DigitsFn prepare;  // with parts: A's digits
  PanelsFn float_8bit = nullptr;
};

// AVX2 (bench-nbits, 1 row, K 1024 N 2816 in cache, 1 thread, Zen 3): 4-bit
// codes by digits 121 us, by the FMA 150-175.
const FloatEntry& ActiveFloat() {
  static const CpuDispatchTable<FloatEntry> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512Vnni, {DigitsAvx512Vnni, kDigits, PanelDigitsAvx512}},
      {CpuTarget::kAvxVnni, {DigitsAvxVnni, kDigits, PanelDigitsAvx2}},
      {CpuTarget::kAvx512, {FloatAvx512, 0, nullptr}},
      {CpuTarget::kAvx2, {DigitsAvx2, kDigits, PanelDigitsAvx2, FloatAvx2}},
#endif
      {CpuTarget::kBaseline, {FloatBaseline, 0, nullptr}},
  };
  return table.Active();
}

const CpuDispatchTable<PanelsFn>::Build& ActiveInt8() {
  static const CpuDispatchTable<PanelsFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512Vnni, Int8Avx512Vnni},
      {CpuTarget::kAvxVnni, Int8AvxVnni},
      {CpuTarget::kAvx2, Int8Avx2},
#endif
      {CpuTarget::kBaseline, nullptr},
  };
  return table.ActiveBuild();
}

const CpuDispatchTable<PanelsFn>::Build& ActiveIntA() {
  static const CpuDispatchTable<PanelsFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512Vnni, IntAAvx512Vnni},
      {CpuTarget::kAvxVnni, IntAAvxVnni},
      {CpuTarget::kAvx2, IntAAvx2},
#endif
      {CpuTarget::kBaseline, IntABaseline},
  };
  return table.ActiveBuild();
}

// Passes of up to kPanelGemvRows rows: `prepare(i, r)` fills pass row r's
// part of the workspace from A's row i, then the panels are split over the
// threads.
template <class Prepare>
void Passes(int64_t m, const QuantPanels& w, const float* bias, float* c, int threads, Args d, PanelsFn fn,
            double work_per_weight, const Prepare& prepare) {
  for (int64_t r0 = 0; r0 < m; r0 += kPanelGemvRows) {
    const int64_t rows = std::min(kPanelGemvRows, m - r0);
    for (int64_t r = 0; r < rows; ++r) prepare(r0 + r, r);
    d.bias = bias;
    d.c = c + r0 * w.n;
    d.m = rows;
    // Four contiguous ranges of panels a thread, claimed as the threads go:
    // long runs read front to back, and a thread slowed by another process
    // on its core holds up at most one range.
    const double work = double(w.padded_k()) * kCols * double(rows) * work_per_weight * double(w.panels);
    const int use = ThreadsForWork(threads, work);
    const int64_t ranges = use > 1 ? 4 * int64_t(use) : 1;
    ParallelFor(use, w.panels, (w.panels + ranges - 1) / ranges, [&](int64_t p0, int64_t p1) { fn(d, p0, p1); });
  }
}

// PanelGemvMaxRows per build. VNNI (K 1024, N 2816): the passes 10-25%
// faster than the tiles from 5 to 16 rows, level at 24. AVX2 (Zen 3, 1
// thread, cold weights; tiles against passes): int8 A's tile is faster from
// 3 rows (bench-nbits: 118 against 129 us, 8 rows 258 against 320), float
// A's from 5 (562 against 596, 16 rows 1225 against 1894: the digits' three
// products a code grow with the rows, the tile's dequantization does not),
// integer A's from 3 (bench-qgemm: 1.66 against 1.75x the floor, 4 rows 2.0
// against 2.1x, 16 rows in cache 0.66 against 1.04 ms). AVX-512 without
// VNNI runs AVX2's integer kernels, so their counts; its float passes and
// tile are not measured against each other (16, as before).
struct MaxRows {
  int64_t float_a, int8_a, integer_a;
};
const MaxRows& ActiveMaxRows() {
  static const CpuDispatchTable<MaxRows> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512Vnni, {16, 16, 16}},
      {CpuTarget::kAvxVnni, {16, 16, 16}},
      {CpuTarget::kAvx512, {16, 2, 2}},
      {CpuTarget::kAvx2, {4, 2, 2}},
#endif
      {CpuTarget::kBaseline, {16, 16, 16}},
  };
  return table.Active();
}

}  // namespace

int64_t PanelGemvMaxRows(PanelGemvA a) {
  const MaxRows& rows = ActiveMaxRows();
  return a == PanelGemvA::kFloat ? rows.float_a : a == PanelGemvA::kInt8 ? rows.int8_a : rows.integer_a;
}

int64_t PanelGemvWorkspace(int64_t m, const QuantPanels& w) {
  const double rows = double(std::min(m, kPanelGemvRows));
  const double need = rows * (double(w.padded_k()) + 2 * double(w.k_blocks)) + 16;
  return need < double(std::numeric_limits<int64_t>::max() / 8) ? int64_t(need) : -1;
}

void PanelGemvFloat(const float* a, int64_t m, const QuantPanels& w, const float* uniform_zero, const float* bias,
                    float* c, float* workspace, int threads) {
  if (m <= 0 || w.n <= 0) return;
  const FloatEntry& active = ActiveFloat();
  const FloatEntry entry = w.bits == 8 && active.float_8bit ? FloatEntry{active.float_8bit, 0, nullptr} : active;
  const int64_t kp = w.padded_k(), kb = w.k_blocks, rows = std::min(m, kPanelGemvRows);
  const float zero = uniform_zero ? *uniform_zero : 1.0f;
  if (entry.parts == 0) {
    float* pa = workspace;
    float* sums = workspace + rows * kp;
    Args d{};
    d.w = &w;
    d.a = pa;
    d.s1 = sums;
    d.uniform = uniform_zero != nullptr;
    Passes(m, w, bias, c, threads, d, entry.fn, 0.25, [&](int64_t i, int64_t r) {
      const float* row = a + i * w.k;
      float* dst = pa + r * kp;
      std::memcpy(dst, row, size_t(w.k) * sizeof(float));
      std::fill(dst + w.k, dst + kp, 0.0f);
      for (int64_t b = 0; b < kb; ++b) {
        float s = 0;
        for (int64_t e = b * w.block; e < (b + 1) * w.block; ++e) s += dst[e];
        sums[r * kb + b] = s * zero;
      }
    });
    return;
  }
  // A as digits (kernels/quant/panel_digits.h).
  int8_t* digits = reinterpret_cast<int8_t*>(workspace);
  float* scale = workspace + (rows * kDigits * kp + 3) / 4;
  float* zq = scale + rows * kb;
  Args d{};
  d.w = &w;
  d.a = digits;
  d.s1 = scale;
  d.s2 = zq;
  d.uniform = uniform_zero != nullptr;
  const PanelDigitsRow g{w.k, w.block, kb, kp, double(zero)};
  Passes(m, w, bias, c, threads, d, entry.fn, 1.0 / 16, [&](int64_t i, int64_t r) {
    entry.prepare(g, a + i * w.k, digits + r * kDigits * kp, scale + r * kb, zq + r * kb);
  });
}

CpuTarget PanelGemvInt8Target() {
  const auto& build = ActiveInt8();
  return build.entries ? build.target : CpuTarget::kBaseline;
}

void PanelGemvInt8(const float* a, int64_t m, const QuantPanels& w, const float* uniform_zero, const float* bias,
                   float* c, float* workspace, int threads) {
  if (m <= 0 || w.n <= 0) return;
  const PanelsFn fn = ActiveInt8().entries;
  if (fn == nullptr) return;  // callers ask PanelGemvInt8Target first
  const int64_t kp = w.padded_k(), kb = w.k_blocks, rows = std::min(m, kPanelGemvRows);
  int8_t* qa = reinterpret_cast<int8_t*>(workspace);
  float* sa = workspace + (rows * kp + 3) / 4;
  float* sq = sa + rows * kb;
  const float zero = uniform_zero ? *uniform_zero : 1.0f;
  Args d{};
  d.w = &w;
  d.a = qa;
  d.s1 = sa;
  d.s2 = sq;
  d.uniform = uniform_zero != nullptr;
  Passes(m, w, bias, c, threads, d, fn, 1.0 / 16, [&](int64_t i, int64_t r) {
    const float* row = a + i * w.k;
    int8_t* dst = qa + r * kp;
    std::memset(dst, 0, size_t(kp));
    for (int64_t b = 0; b < kb; ++b) {
      const int64_t first = b * w.block, len = std::min(w.block, w.k - first);
      int32_t sum = 0;
      sa[r * kb + b] = NBitsQuantizeBlockInt8(row + first, len, dst + first, &sum);
      sq[r * kb + b] = sa[r * kb + b] * float(sum) * zero;
    }
  });
}

CpuTarget PanelGemvIntATarget() { return ActiveIntA().target; }

int64_t PanelGemvIntAWorkspace(int64_t m, const QuantPanels& w) {
  const double rows = double(std::min(m, kPanelGemvRows));
  const double bytes = rows * (double(w.padded_k()) + 4 * double(w.k_blocks)) + 64;
  return bytes < double(std::numeric_limits<int64_t>::max() / 8) ? int64_t(bytes) : -1;
}

void PanelGemvIntA(const QuantPanelsIntA& x, const QuantPanels& w, const float* uniform_zero, const float* bias,
                   float* c, void* workspace, int threads) {
  if (x.m <= 0 || w.n <= 0) return;
  const int64_t kp = w.padded_k(), kb = w.k_blocks, rows = std::min(x.m, kPanelGemvRows);
  int8_t* qa = static_cast<int8_t*>(workspace);
  int32_t* asum = reinterpret_cast<int32_t*>(qa + (rows * kp + 3) / 4 * 4);
  const int shift = x.a_unsigned ? 128 : 0;  // qa = a - shift, so a - za = qa + (shift - za)
  Args d{};
  d.w = &w;
  d.a = qa;
  d.asum = asum;
  d.a_shift = shift - x.a_zero;
  d.a_scale = x.a_scale;
  d.uniform = uniform_zero != nullptr;
  d.b_zero = uniform_zero ? int32_t(*uniform_zero) : 0;
  Passes(x.m, w, bias, c, threads, d, ActiveIntA().entries, 1.0 / 16, [&](int64_t i, int64_t r) {
    int8_t* dst = qa + r * kp;
    if (x.a_unsigned) {
      const uint8_t* src = static_cast<const uint8_t*>(x.a) + i * w.k;
      for (int64_t e = 0; e < w.k; ++e) dst[e] = int8_t(int32_t(src[e]) - 128);
    } else {
      std::memcpy(dst, static_cast<const int8_t*>(x.a) + i * w.k, size_t(w.k));
    }
    std::memset(dst + w.k, 0, size_t(kp - w.k));
    for (int64_t b = 0; b < kb; ++b) {
      int32_t s = 0;
      for (int64_t e = b * w.block; e < (b + 1) * w.block; ++e) s += dst[e];
      asum[r * kb + b] = s;
    }
  });
}

void PanelGemvInt8Reference(const float* a, int64_t m, const QuantPanels& w, const float* bias, float* c) {
  std::vector<int8_t> qa(size_t(w.k));
  std::vector<double> sa(size_t(w.k_blocks));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const int64_t first = b * w.block, len = std::min(w.block, w.k - first);
      int32_t sum;
      sa[size_t(b)] = NBitsQuantizeBlockInt8(a + r * w.k + first, len, qa.data() + first, &sum);
    }
    for (int64_t col = 0; col < w.n; ++col) {
      const int64_t at = (col / kCols) * w.k_blocks * kCols + col % kCols;
      double y = bias ? bias[col] : 0.0;
      for (int64_t b = 0; b < w.k_blocks; ++b) {
        int64_t dot = 0, sum = 0;
        for (int64_t kk = b * w.block; kk < std::min(w.k, (b + 1) * w.block); ++kk) {
          dot += int64_t(w.Code(col, kk)) * qa[size_t(kk)];
          sum += qa[size_t(kk)];
        }
        y += sa[size_t(b)] * double(w.scales[at + b * kCols]) * (double(dot) - double(w.zeros[at + b * kCols]) * double(sum));
      }
      c[r * w.n + col] = float(y);
    }
  }
}

}  // namespace onnx_mini
