#include "kernels/quant/nbits_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu_dispatch.h"
#include "kernels/gemm/onednn.h"
#include "kernels/quant/block_format.h"
#include "kernels/vec/float_vector.h"
#include "runtime/thread_pool.h"

// Vectors pass by value only between always-inlined functions.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini {
namespace {

const BlockFormat& Format(int bits) {
  return *FindBlockFormat(bits == 8 ? DType::kUInt8 : bits == 4 ? DType::kUInt4 : DType::kUInt2);
}

// Columns per dequantized panel of the many-rows path.
constexpr int64_t kPanelColumns = 256;

// The few-rows path. A's rows are rearranged once per call so that a vector
// of L bytes of codes, widened to L int32 lanes, meets its activations lane
// for lane: of a group of G = L * 8 / bits elements, part s (the codes at
// bit offset s * bits of each byte) holds elements i * (8 / bits) + s. A is
// zero-padded to whole blocks (the padding codes then add nothing), and each
// block's sum of A is kept: y = sum_blocks scale * (sum q a - zero * sum a).
struct DecodeArgs {
  const NBitsMatrix* w;
  const float* a;     // m rows of k_blocks * block_size rearranged floats
  const float* asum;  // m rows of k_blocks sums
  const float* bias;
  float* c;
  int64_t m;
  int lane_bytes;  // the vector width the rearrangement was made for
};

// Vectors of L codes, as bytes and as 16-bit integers.
template <int L>
struct CodeVectors {
  typedef uint8_t U8 __attribute__((vector_size(L)));
  typedef uint16_t U16 __attribute__((vector_size(2 * L)));
};

#if defined(__x86_64__)
// One instruction each (GCC's generic conversion takes several). Results
// through a pointer: a wide vector returned from a function of another
// target changes the ABI (clang refuses it); inlined, it is a register.
[[gnu::target("avx512f")]] inline void WidenBytes64(const uint8_t* p, void* out) {
  // The masked form: the plain one reads an undefined vector (GCC 12 warns).
  const __m512i v = _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  std::memcpy(out, &v, sizeof(v));
}
[[gnu::target("avx2")]] inline void WidenBytes32(const uint8_t* p, void* out) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  std::memcpy(out, &v, sizeof(v));
}
#endif

// L bytes of codes widened to L int32 lanes.
template <int kBytes, class I>
[[gnu::always_inline]] inline void WidenBytes(const uint8_t* p, I* out) {
  constexpr int L = kBytes / 4;
#if defined(__x86_64__)
  if constexpr (kBytes == 64) return WidenBytes64(p, out);
  if constexpr (kBytes == 32) return WidenBytes32(p, out);
#endif
  // Through 16 bits: GCC widens bytes to 32 bits lane by lane otherwise.
  typename CodeVectors<L>::U8 bytes;
  std::memcpy(&bytes, p, sizeof(bytes));
  *out = __builtin_convertvector(__builtin_convertvector(bytes, typename CodeVectors<L>::U16), I);
}

// Column j's zero point of block b (`row`: its packed or float zero points).
template <int Bits>
[[gnu::always_inline]] inline float ZeroAt(const NBitsMatrix& w, const void* row, int64_t b) {
  if (w.zero_packed) {
    constexpr int kPerByte = 8 / Bits;
    const uint8_t byte = static_cast<const uint8_t*>(row)[b / kPerByte];
    return float((byte >> ((b % kPerByte) * Bits)) & ((1 << Bits) - 1));
  }
  return w.zero_float ? static_cast<const float*>(row)[b] : w.zero_default;
}

// C columns [j, j + C) at once: each vector of A loaded once for all of
// them, and C independent accumulator chains.
template <int kBytes, int Bits, int M, int C>
[[gnu::always_inline]] inline void DecodeTile(const DecodeArgs& d, int64_t j) {
  using F = typename float_vector::V<kBytes>::F;
  using I = typename float_vector::V<kBytes>::I;
  constexpr int L = kBytes / 4;
  constexpr int kParts = 8 / Bits;
  constexpr int G = L * kParts;
  const NBitsMatrix& w = *d.w;
  const int64_t kp = w.k_blocks * w.block_size, column = w.k_blocks * w.blob_bytes(), groups = w.block_size / G;
  const uint8_t* q[C];
  const float* scale[C];
  const void* zrow[C];
  for (int c = 0; c < C; ++c) {
    q[c] = w.data + (j + c) * column;
    scale[c] = w.scales + (j + c) * w.k_blocks;
    zrow[c] = w.zero_packed ? static_cast<const void*>(w.zero_packed + (j + c) * w.zero_row_bytes())
              : w.zero_float ? static_cast<const void*>(w.zero_float + (j + c) * w.k_blocks)
                             : nullptr;
  }
  F acc[M][C] = {};
  float zs[M][C] = {};
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    F part[M][C] = {};
    const float* ab = d.a + b * w.block_size;
    for (int64_t g = 0; g < groups; ++g, ab += G) {
      I codes[C];
      for (int c = 0; c < C; ++c) {
        WidenBytes<kBytes>(q[c], &codes[c]);
        q[c] += L;
      }
      for (int s = 0; s < kParts; ++s)
        for (int r = 0; r < M; ++r) {
          const F x = float_vector::Load<F>(ab + r * kp + s * L);
          for (int c = 0; c < C; ++c) {
            F v;
            if constexpr (Bits == 8) v = __builtin_convertvector(codes[c], F);
            else v = __builtin_convertvector((codes[c] >> (s * Bits)) & ((1 << Bits) - 1), F);
            part[r][c] += v * x;
          }
        }
    }
    for (int c = 0; c < C; ++c) {
      const float sc = scale[c][b], z = ZeroAt<Bits>(w, zrow[c], b) * sc;
      for (int r = 0; r < M; ++r) {
        acc[r][c] += part[r][c] * sc;
        zs[r][c] += z * d.asum[r * w.k_blocks + b];
      }
    }
  }
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < C; ++c) {
      float y = 0;
      for (int l = 0; l < L; ++l) y += acc[r][c][l];
      y -= zs[r][c];
      d.c[r * w.n + j + c] = d.bias ? y + d.bias[j + c] : y;
    }
}

template <int kBytes, int Bits, int M>
[[gnu::always_inline]] inline void DecodeColumns(const DecodeArgs& d, int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + 2 <= j1; j += 2) DecodeTile<kBytes, Bits, M, 2>(d, j);
  if (j < j1) DecodeTile<kBytes, Bits, M, 1>(d, j);
}

// (Templates, not lambdas: a lambda would not take the entry point's target.)
template <int kBytes, int B>
[[gnu::always_inline]] inline void DecodeRows(const DecodeArgs& d, int64_t j0, int64_t j1) {
  switch (d.m) {
    case 1: return DecodeColumns<kBytes, B, 1>(d, j0, j1);
    case 2: return DecodeColumns<kBytes, B, 2>(d, j0, j1);
    case 3: return DecodeColumns<kBytes, B, 3>(d, j0, j1);
    default: return DecodeColumns<kBytes, B, 4>(d, j0, j1);
  }
}

template <int kBytes>
[[gnu::always_inline]] inline void DecodeWidth(const DecodeArgs& d, int64_t j0, int64_t j1) {
  switch (d.w->bits) {
    case 2: return DecodeRows<kBytes, 2>(d, j0, j1);
    case 4: return DecodeRows<kBytes, 4>(d, j0, j1);
    default: return DecodeRows<kBytes, 8>(d, j0, j1);
  }
}

void DecodeBaseline(const DecodeArgs& d, int64_t j0, int64_t j1) { DecodeWidth<16>(d, j0, j1); }
#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void DecodeAvx2(const DecodeArgs& d, int64_t j0, int64_t j1) {
  if (d.lane_bytes == 32) DecodeWidth<32>(d, j0, j1);
  else DecodeWidth<16>(d, j0, j1);
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]] void DecodeAvx512(const DecodeArgs& d, int64_t j0,
                                                                               int64_t j1) {
  if (d.lane_bytes == 64) DecodeWidth<64>(d, j0, j1);
  else if (d.lane_bytes == 32) DecodeWidth<32>(d, j0, j1);
  else DecodeWidth<16>(d, j0, j1);
}
#endif

struct DecodeEntry {
  void (*columns)(const DecodeArgs&, int64_t, int64_t);
  int max_lane_bytes;
};

const DecodeEntry& ActiveDecode() {
  static const CpuDispatchTable<DecodeEntry> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, {DecodeAvx512, 64}},
      {CpuTarget::kAvx2, {DecodeAvx2, 32}},
#endif
      {CpuTarget::kBaseline, {DecodeBaseline, 16}},
  };
  return table.Active();
}

// The widest vector whose group of codes fits in a block (blocks of 16
// 2-bit codes take 16-byte vectors: groups of 64 would straddle blocks).
int LaneBytes(int max_bytes, int bits, int64_t block_size) {
  int bytes = max_bytes;
  while (bytes > 16 && (bytes / 4) * (8 / bits) > block_size) bytes /= 2;
  return bytes;
}

bool UseDecode(int64_t m, const NBitsMatrix& w) { return m <= kNBitsDecodePassRows && w.g_idx == nullptr; }

void Decode(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c, float* workspace,
            int threads) {
  const DecodeEntry& entry = ActiveDecode();
  const int bytes = LaneBytes(entry.max_lane_bytes, w.bits, w.block_size);
  const int64_t lanes = bytes / 4, parts = 8 / w.bits, group = lanes * parts;
  const int64_t kp = w.k_blocks * w.block_size;
  float* ar = workspace;
  float* asum = workspace + m * kp;
  for (int64_t r = 0; r < m; ++r) {
    const float* src = a + r * w.k;
    float* dst = ar + r * kp;
    for (int64_t g0 = 0; g0 < kp; g0 += group)
      for (int64_t s = 0; s < parts; ++s)
        for (int64_t i = 0; i < lanes; ++i) {
          const int64_t e = g0 + i * parts + s;
          dst[g0 + s * lanes + i] = e < w.k ? src[e] : 0.0f;
        }
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      float s = 0;
      for (int64_t e = b * w.block_size; e < std::min(w.k, (b + 1) * w.block_size); ++e) s += src[e];
      asum[r * w.k_blocks + b] = s;
    }
  }
  const DecodeArgs d{&w, ar, asum, bias, c, m, bytes};
  // A column's work: its codes, each a multiply-add per row.
  ParallelFor(threads, w.n, WorkPerIndex{double(kp) * double(m) / 4},
              [&](int64_t j0, int64_t j1) { entry.columns(d, j0, j1); });
}

// The many-rows path: panels of columns dequantized to float ([cols, k],
// split over the pool) and multiplied by oneDNN's GEMM with B transposed.
void Panels(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c, float* workspace,
            int threads) {
  const int64_t cols = std::min(kPanelColumns, w.n);
  float* panel = workspace;
  float* out = workspace + cols * w.k;
  for (int64_t j0 = 0; j0 < w.n; j0 += cols) {
    const int64_t nc = std::min(cols, w.n - j0);
    ParallelFor(threads, nc, WorkPerIndex{double(w.k) * 2},
                [&](int64_t c0, int64_t c1) { NBitsDequantizeColumns(w, j0 + c0, j0 + c1, panel + c0 * w.k); });
    const int use = ThreadsForWork(threads, double(m) * double(w.k) * double(nc), kMinOneDnnThreadWork);
    if (!OneDnnMatMul(DType::kFloat, a, panel, out, 1, 1, 1, m, w.k, nc, false, true, use)) {
      // oneDNN declined: plain dot products.
      ParallelFor(threads, m, WorkPerIndex{double(w.k) * double(nc)}, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < nc; ++j) {
            float s = 0;
            for (int64_t kk = 0; kk < w.k; ++kk) s += a[r * w.k + kk] * panel[j * w.k + kk];
            out[r * nc + j] = s;
          }
      });
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < nc; ++j) c[r * w.n + j0 + j] = out[r * nc + j] + (bias ? bias[j0 + j] : 0.0f);
  }
}

}  // namespace

float NBitsMatrix::Zero(int64_t col, int64_t block) const {
  if (zero_float) return zero_float[col * k_blocks + block];
  if (zero_packed) return float(Format(bits).load(zero_packed + col * zero_row_bytes(), block));
  return zero_default;
}

int64_t NBitsMatMulWorkspace(int64_t m, const NBitsMatrix& w) {
  const double kp = double(w.k_blocks) * double(w.block_size);
  const double cols = double(std::min(kPanelColumns, w.n));
  const double rows = double(std::min(m, kNBitsDecodeRows));
  const double need = UseDecode(m, w) ? rows * (kp + double(w.k_blocks)) : cols * double(w.k) + double(m) * cols;
  return need < double(std::numeric_limits<int64_t>::max() / 8) ? int64_t(need) : -1;
}

void NBitsMatMul(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c, float* workspace,
                 int threads) {
  if (m <= 0 || w.n <= 0) return;
  if (UseDecode(m, w)) {
    for (int64_t r = 0; r < m; r += kNBitsDecodeRows)
      Decode(a + r * w.k, std::min(kNBitsDecodeRows, m - r), w, bias, c + r * w.n, workspace, threads);
    return;
  }
  Panels(a, m, w, bias, c, workspace, threads);
}

namespace {

// n codes of one block (first at byte 0) as (code - zero) * scale: a loop
// over bytes, which the compiler vectorizes (the table's row function
// reads code by code).
template <int Bits>
void DequantizeBlock(const uint8_t* q, int64_t n, float scale, float zero, float* out) {
  constexpr int kPerByte = 8 / Bits;
  const int64_t whole = n / kPerByte;
  for (int64_t i = 0; i < whole; ++i) {
    const uint8_t byte = q[i];
    for (int s = 0; s < kPerByte; ++s)
      out[i * kPerByte + s] = (float((byte >> (s * Bits)) & ((1 << Bits) - 1)) - zero) * scale;
  }
  for (int64_t e = whole * kPerByte; e < n; ++e)
    out[e] = (float((q[e / kPerByte] >> ((e % kPerByte) * Bits)) & ((1 << Bits) - 1)) - zero) * scale;
}

}  // namespace

void NBitsDequantizeColumns(const NBitsMatrix& w, int64_t j0, int64_t j1, float* out) {
  const BlockFormat& f = Format(w.bits);
  auto block = w.bits == 2 ? DequantizeBlock<2> : w.bits == 4 ? DequantizeBlock<4> : DequantizeBlock<8>;
  const int64_t blob = w.blob_bytes();
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* q = w.data + j * w.k_blocks * blob;
    float* o = out + (j - j0) * w.k;
    if (w.g_idx == nullptr) {
      for (int64_t b = 0; b < w.k_blocks; ++b) {
        const int64_t first = b * w.block_size, len = std::min(w.block_size, w.k - first);
        block(q + b * blob, len, w.scales[j * w.k_blocks + b], w.Zero(j, b), o + first);
      }
    } else {
      for (int64_t kk = 0; kk < w.k; ++kk) {
        const int64_t b = w.g_idx[kk];
        o[kk] = (float(f.load(q, kk)) - w.Zero(j, b)) * w.scales[j * w.k_blocks + b];
      }
    }
  }
}

void NBitsMatMulReference(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c) {
  const BlockFormat& f = Format(w.bits);
  const int64_t blob = w.blob_bytes();
  for (int64_t j = 0; j < w.n; ++j) {
    const uint8_t* q = w.data + j * w.k_blocks * blob;
    for (int64_t r = 0; r < m; ++r) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t kk = 0; kk < w.k; ++kk) {
        const int64_t b = w.g_idx ? w.g_idx[kk] : kk / w.block_size;
        const double weight = (double(f.load(q, kk)) - double(w.Zero(j, b))) * double(w.scales[j * w.k_blocks + b]);
        acc += double(a[r * w.k + kk]) * weight;
      }
      c[r * w.n + j] = float(acc);
    }
  }
}

namespace {

// Accuracy level 4's rule for one block of A (onnxruntime's): scale =
// max |a| / 127, values nearest-even(a * 127 / max |a|), all zero for an
// all-zero block. Returns the scale; `inv` gets the multiplier.
float Int8BlockScale(const float* x, int64_t len, float* inv) {
  float amax = 0;
  for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[i]));
  *inv = amax > 0 ? 127.0f / amax : 0.0f;
  return amax / 127.0f;
}

}  // namespace

void NBitsRoundRowsToInt8(const float* a, int64_t m, int64_t k, int64_t block, float* out) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t first = 0; first < k; first += block) {
      const float* x = a + r * k + first;
      float* y = out + r * k + first;
      const int64_t len = std::min(block, k - first);
      float inv;
      const float scale = Int8BlockScale(x, len, &inv);
      for (int64_t i = 0; i < len; ++i) y[i] = std::nearbyint(x[i] * inv) * scale;
    }
}

float NBitsQuantizeBlockInt8(const float* x, int64_t len, int8_t* q, int32_t* sum) {
  float inv;
  const float scale = Int8BlockScale(x, len, &inv);
  int32_t s = 0;
  for (int64_t i = 0; i < len; ++i) {
    const int32_t v = int32_t(std::nearbyint(x[i] * inv));
    q[i] = int8_t(v);
    s += v;
  }
  *sum = s;
  return scale;
}

namespace {

// ---- Accuracy level 4 with int8 products (VNNI) ----
//
// A chunk of 32 elements of a block is 16 bytes of 4-bit codes, element 2i
// the low nibble of byte i: split into low and high nibbles it is 32 unsigned
// bytes, the chunk's even elements then its odd ones. A's int8 values are
// rearranged once per call to match (and zero-padded to whole blocks: the
// padding's codes then add nothing), so VPDPBUSD's lanes meet lane for lane.
constexpr int64_t kChunk = 32;
// Bytes of codes ahead that a tile prefetches (and the scales of those
// codes): 8 KiB measured best at 1 thread (1 KiB left the loads waiting).
constexpr int64_t kInt8PrefetchBytes = 8192;

struct Int8Args {
  const NBitsMatrix* w;
  const int8_t* a;      // m rows of k_blocks * block_size rearranged values
  const float* ascale;  // m rows of k_blocks: A's block scales sa
  const float* azero;   // m rows of k_blocks: sa * the block's sum of values
  const float* bias;
  float* c;
  int64_t m;
};

typedef uint8_t Bytes16 __attribute__((vector_size(16)));
typedef uint8_t Bytes32 __attribute__((vector_size(32)));
typedef uint8_t Bytes64 __attribute__((vector_size(64)));
typedef int32_t Int8x32 __attribute__((vector_size(32)));
typedef int32_t Int8x64 __attribute__((vector_size(64)));
typedef float Float8 __attribute__((vector_size(32)));
typedef float Float16 __attribute__((vector_size(64)));

#if defined(__x86_64__)
// acc (int32 lanes) += the sums of 4 products of unsigned bytes u and signed
// bytes s: the VEX form is AVX-VNNI, the EVEX form AVX-512 VNNI. Inline
// assembly (GCC 12 and clang 14 name the VEX intrinsic differently), in
// templates of their builds' common target: clang checks a wide operand's
// register class where the template is written, and an always-inline
// callee's target must be within its caller's.
#define ONNX_MINI_INT8_TARGET gnu::target("avx2,fma"), gnu::always_inline
#define ONNX_MINI_INT8_512_TARGET gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), gnu::always_inline
template <bool kEvex>
[[ONNX_MINI_INT8_TARGET]] inline void Dpbusd(Int8x32& acc, const Int8x32& u, const Int8x32& s) {
  if constexpr (kEvex) asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  else asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
}
[[ONNX_MINI_INT8_512_TARGET]] inline void Dpbusd512(Int8x64& acc, const Int8x64& u, const Int8x64& s) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
}

// The sum of a vector's lanes (a shuffle tree).
[[ONNX_MINI_INT8_TARGET]] inline float SumLanes(const Float8& v) {
  __m256 x;
  std::memcpy(&x, &v, sizeof(x));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}
// (The extract forms: GCC 12 warns of the cast's and the reduction's undefined sources.)
[[ONNX_MINI_INT8_512_TARGET]] inline float SumLanes(const Float16& v) {
  __m512 x;
  std::memcpy(&x, &v, sizeof(x));
  const __m256 h = _mm256_add_ps(_mm512_extractf32x8_ps(x, 0), _mm512_extractf32x8_ps(x, 1));
  Float8 half;
  std::memcpy(&half, &h, sizeof(half));
  return SumLanes(half);
}

// The zero-point term of a column for one row: sum_b zero * scale * (sa *
// the sum of A's block), in independent partial sums (one chain would take
// longer than the column's products).
[[ONNX_MINI_INT8_TARGET]] inline float Int8ZeroTerm(const NBitsMatrix& w, const void* zrow, const float* scale,
                                                    const float* azero) {
  const int64_t kb = w.k_blocks;
  if (zrow == nullptr) {
    Float8 part = {};
    int64_t b = 0;
    for (; b + 8 <= kb; b += 8) {
      Float8 x, y;
      std::memcpy(&x, scale + b, sizeof(x));
      std::memcpy(&y, azero + b, sizeof(y));
      part += x * y;
    }
    float sum = SumLanes(part);
    for (; b < kb; ++b) sum += scale[b] * azero[b];
    return sum * w.zero_default;
  }
  float part[4] = {};
  for (int64_t b = 0; b < kb; ++b) part[b % 4] += ZeroAt<4>(w, zrow, b) * scale[b] * azero[b];
  return (part[0] + part[1]) + (part[2] + part[3]);
}

// The stores of a tile: y = its products' sum - the zero-point term (+ bias).
template <int M, int C>
[[ONNX_MINI_INT8_TARGET]] inline void Int8Finish(const Int8Args& d, int64_t j, const float (&sums)[M][C]) {
  const NBitsMatrix& w = *d.w;
  const int64_t kb = w.k_blocks;
  for (int c = 0; c < C; ++c) {
    const float* scale = w.scales + (j + c) * kb;
    const void* zrow = w.zero_packed ? static_cast<const void*>(w.zero_packed + (j + c) * w.zero_row_bytes())
                       : w.zero_float ? static_cast<const void*>(w.zero_float + (j + c) * kb)
                                      : nullptr;
    for (int r = 0; r < M; ++r) {
      const float y = sums[r][c] - Int8ZeroTerm(w, zrow, scale, d.azero + r * kb);
      d.c[r * w.n + j + c] = d.bias ? y + d.bias[j + c] : y;
    }
  }
}

// 16 bytes of codes (a chunk) as 32 unsigned bytes: low nibbles, then high.
[[ONNX_MINI_INT8_TARGET]] inline Int8x32 SplitChunk(const uint8_t* q) {
  Bytes16 v;
  std::memcpy(&v, q, sizeof(v));
  const Bytes16 lo = v & 15, hi = v >> 4;
  const Bytes32 u = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
                                            19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  Int8x32 out;
  std::memcpy(&out, &u, sizeof(out));
  return out;
}

// 32 bytes of codes (two chunks) as 64 unsigned bytes: both chunks' low
// nibbles, then both chunks' high nibbles.
[[ONNX_MINI_INT8_512_TARGET]] inline Int8x64 SplitPair(const uint8_t* q) {
  Bytes32 v;
  std::memcpy(&v, q, sizeof(v));
  const Bytes32 lo = v & 15, hi = v >> 4;
  const Bytes64 u = __builtin_shufflevector(
      lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
      29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56,
      57, 58, 59, 60, 61, 62, 63);
  Int8x64 out;
  std::memcpy(&out, &u, sizeof(out));
  return out;
}

// 256 bits (AVX-VNNI, or AVX-512 VNNI's VL form): columns [j, j + C) for M
// rows, a chunk at a time, the codes of each split once for all rows, each
// row's values loaded once for all columns.
template <bool kEvex, int M, int C>
[[ONNX_MINI_INT8_TARGET]] inline void Int8Tile(const Int8Args& d, int64_t j) {
  const NBitsMatrix& w = *d.w;
  const int64_t kb = w.k_blocks, kp = kb * w.block_size, column = kb * w.blob_bytes();
  const int64_t chunks = w.block_size / kChunk;
  const uint8_t* q[C];
  const float* scale[C];
  for (int c = 0; c < C; ++c) {
    q[c] = w.data + (j + c) * column;
    scale[c] = w.scales + (j + c) * kb;
  }
  Float8 acc[M][C] = {};
  for (int64_t b = 0; b < kb; ++b) {
    Int8x32 dot[M][C] = {};
    const int8_t* ab = d.a + b * w.block_size;
    for (int c = 0; c < C; ++c) __builtin_prefetch(scale[c] + b + kInt8PrefetchBytes / w.blob_bytes());
    for (int64_t ch = 0; ch < chunks; ++ch, ab += kChunk) {
      Int8x32 codes[C];
      for (int c = 0; c < C; ++c) {
        __builtin_prefetch(q[c] + kInt8PrefetchBytes);
        codes[c] = SplitChunk(q[c]);
        q[c] += 16;
      }
      for (int r = 0; r < M; ++r) {
        Int8x32 x;
        std::memcpy(&x, ab + r * kp, sizeof(x));
        for (int c = 0; c < C; ++c) Dpbusd<kEvex>(dot[r][c], codes[c], x);
      }
    }
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < M; ++r)
        acc[r][c] += __builtin_convertvector(dot[r][c], Float8) * (scale[c][b] * d.ascale[r * kb + b]);
  }
  float sums[M][C];
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < C; ++c) sums[r][c] = SumLanes(acc[r][c]);
  Int8Finish<M, C>(d, j, sums);
}

// 512 bits (AVX-512 VNNI): two chunks a step, arranged as SplitPair makes
// them. Blocks of 32: a step is two blocks, their scales in alternate
// quarters of the vector, and an odd last block takes the 256-bit step.
// Larger blocks: the steps of a block summed in int32, then scaled once.
template <int M, int C>
[[ONNX_MINI_INT8_512_TARGET]] inline void Int8Tile512(const Int8Args& d, int64_t j) {
  const NBitsMatrix& w = *d.w;
  const int64_t kb = w.k_blocks, kp = kb * w.block_size, column = kb * w.blob_bytes();
  const uint8_t* q[C];
  const float* scale[C];
  for (int c = 0; c < C; ++c) {
    q[c] = w.data + (j + c) * column;
    scale[c] = w.scales + (j + c) * kb;
  }
  Float16 acc[M][C] = {};
  if (w.block_size == kChunk) {
    const __m512i quarters = _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0);
    int64_t b = 0;
    for (; b + 2 <= kb; b += 2) {
      Int8x64 codes[C];
      for (int c = 0; c < C; ++c) {
        __builtin_prefetch(q[c] + kInt8PrefetchBytes);
        __builtin_prefetch(scale[c] + b + kInt8PrefetchBytes / 16);  // 4 bytes of scale a 16 of codes
        codes[c] = SplitPair(q[c]);
        q[c] += 32;
      }
      for (int r = 0; r < M; ++r) {
        Int8x64 x;
        std::memcpy(&x, d.a + r * kp + b * kChunk, sizeof(x));
        const __m128 sa = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(d.ascale + r * kb + b)));
        for (int c = 0; c < C; ++c) {
          Int8x64 dot = {};
          Dpbusd512(dot, codes[c], x);
          // The two blocks' scales in alternate quarters (a shuffle of
          // generic vectors goes through memory here).
          const __m128 sc = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(scale[c] + b)));
          const Float16 fs = _mm512_maskz_permutexvar_ps(0xFFFF, quarters, _mm512_zextps128_ps512(_mm_mul_ps(sc, sa)));
          acc[r][c] += __builtin_convertvector(dot, Float16) * fs;
        }
      }
    }
    if (b < kb) {
      Int8x32 codes[C];
      for (int c = 0; c < C; ++c) codes[c] = SplitChunk(q[c]);
      for (int r = 0; r < M; ++r) {
        Int8x32 x;
        std::memcpy(&x, d.a + r * kp + b * kChunk, sizeof(x));
        for (int c = 0; c < C; ++c) {
          Int8x32 dot = {};
          Dpbusd<true>(dot, codes[c], x);
          const Float8 part = __builtin_convertvector(dot, Float8) * (scale[c][b] * d.ascale[r * kb + b]);
          Float16 wide = {};
          std::memcpy(&wide, &part, sizeof(part));  // the upper half zero
          acc[r][c] += wide;
        }
      }
    }
  } else {
    const int64_t steps = w.block_size / (2 * kChunk);
    for (int64_t b = 0; b < kb; ++b) {
      Int8x64 dot[M][C] = {};
      const int8_t* ab = d.a + b * w.block_size;
      for (int c = 0; c < C; ++c) __builtin_prefetch(scale[c] + b + kInt8PrefetchBytes / w.blob_bytes());
      for (int64_t st = 0; st < steps; ++st, ab += 2 * kChunk) {
        Int8x64 codes[C];
        for (int c = 0; c < C; ++c) {
          __builtin_prefetch(q[c] + kInt8PrefetchBytes);
          codes[c] = SplitPair(q[c]);
          q[c] += 32;
        }
        for (int r = 0; r < M; ++r) {
          Int8x64 x;
          std::memcpy(&x, ab + r * kp, sizeof(x));
          for (int c = 0; c < C; ++c) Dpbusd512(dot[r][c], codes[c], x);
        }
      }
      for (int c = 0; c < C; ++c)
        for (int r = 0; r < M; ++r)
          acc[r][c] += __builtin_convertvector(dot[r][c], Float16) * (scale[c][b] * d.ascale[r * kb + b]);
    }
  }
  float sums[M][C];
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < C; ++c) sums[r][c] = SumLanes(acc[r][c]);
  Int8Finish<M, C>(d, j, sums);
}

template <bool kEvex, int M>
[[ONNX_MINI_INT8_TARGET]] inline void Int8Columns(const Int8Args& d, int64_t j0, int64_t j1) {
  int64_t j = j0;
  // Four columns a tile where the accumulators fit the registers: more
  // loads in flight (measured: ~1.25x faster than two at 1 row).
  if constexpr (M <= 2)
    for (; j + 4 <= j1; j += 4) Int8Tile<kEvex, M, 4>(d, j);
  for (; j + 2 <= j1; j += 2) Int8Tile<kEvex, M, 2>(d, j);
  if (j < j1) Int8Tile<kEvex, M, 1>(d, j);
}

template <int M>
[[ONNX_MINI_INT8_512_TARGET]] inline void Int8Columns512(const Int8Args& d, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if constexpr (M <= 2)
    for (; j + 4 <= j1; j += 4) Int8Tile512<M, 4>(d, j);
  for (; j + 2 <= j1; j += 2) Int8Tile512<M, 2>(d, j);
  if (j < j1) Int8Tile512<M, 1>(d, j);
}

[[gnu::target("avx2,fma,avxvnni")]] void Int8AvxVnni(const Int8Args& d, int64_t j0, int64_t j1) {
  switch (d.m) {
    case 1: return Int8Columns<false, 1>(d, j0, j1);
    case 2: return Int8Columns<false, 2>(d, j0, j1);
    case 3: return Int8Columns<false, 3>(d, j0, j1);
    default: return Int8Columns<false, 4>(d, j0, j1);
  }
}
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")]] void Int8Avx512Vnni(
    const Int8Args& d, int64_t j0, int64_t j1) {
  switch (d.m) {
    case 1: return Int8Columns512<1>(d, j0, j1);
    case 2: return Int8Columns512<2>(d, j0, j1);
    case 3: return Int8Columns512<3>(d, j0, j1);
    default: return Int8Columns512<4>(d, j0, j1);
  }
}
#undef ONNX_MINI_INT8_TARGET
#undef ONNX_MINI_INT8_512_TARGET
#endif

struct Int8Entry {
  void (*columns)(const Int8Args&, int64_t, int64_t);
  bool pairs;  // A arranged in pairs of chunks (SplitPair's order)
};

const CpuDispatchTable<Int8Entry>::Build& ActiveInt8() {
  static const CpuDispatchTable<Int8Entry> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512Vnni, {Int8Avx512Vnni, true}},
      {CpuTarget::kAvxVnni, {Int8AvxVnni, false}},
#endif
      {CpuTarget::kBaseline, {nullptr, false}},  // none: the float path on rounded values
  };
  return table.ActiveBuild();
}

// A row's blocks quantized (the rule of Int8BlockScale), rearranged and
// zero-padded as the codes are split (a chunk's even elements, then its odd
// ones; with `pairs`, two chunks' even elements, then their odd ones, an odd
// last chunk alone): scale and scale * sum per block.
void QuantizeRow(const float* src, const NBitsMatrix& w, bool pairs, int8_t* dst, float* scale, float* zero) {
  const int64_t kp = w.k_blocks * w.block_size, chunks = kp / kChunk;
  std::memset(dst, 0, size_t(kp));
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    const int64_t first = b * w.block_size, len = std::min(w.block_size, w.k - first);
    float inv;
    scale[b] = Int8BlockScale(src + first, len, &inv);
    int32_t sum = 0;
    for (int64_t e = first; e < first + len; ++e) {
      const int32_t v = int32_t(std::nearbyint(src[e] * inv));
      sum += v;
      const int64_t chunk = e / kChunk, i = e % kChunk;
      const bool paired = pairs && (chunk | 1) < chunks;
      const int64_t at = paired ? (chunk & ~int64_t(1)) * kChunk + (i % 2) * 32 + (chunk % 2) * 16 + i / 2
                                : chunk * kChunk + (i % 2) * 16 + i / 2;
      dst[at] = int8_t(v);
    }
    zero[b] = scale[b] * float(sum);
  }
}

}  // namespace

bool NBitsInt8Available(int64_t m, const NBitsMatrix& w) {
  return w.bits == 4 && w.block_size >= kChunk && w.block_size % kChunk == 0 && w.g_idx == nullptr &&
         m <= kNBitsDecodePassRows && ActiveInt8().entries.columns != nullptr;
}

CpuTarget NBitsInt8Target() {
  const auto& build = ActiveInt8();
  return build.entries.columns ? build.target : CpuTarget::kBaseline;
}

void NBitsMatMulInt8(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c, float* workspace,
                     int threads) {
  if (m <= 0 || w.n <= 0) return;
  const Int8Entry entry = ActiveInt8().entries;
  const int64_t kb = w.k_blocks, kp = kb * w.block_size;
  // Per pass of up to kNBitsDecodeRows rows: their int8 values (kp bytes a
  // row, a quarter of a float each), scales and zero terms: within
  // NBitsMatMulWorkspace's rows * (kp + k_blocks) floats (k_blocks <= kp / 32).
  const int64_t most = std::min(m, kNBitsDecodeRows);
  int8_t* qa = reinterpret_cast<int8_t*>(workspace);
  float* ascale = workspace + (most * kp + 3) / 4;
  float* azero = ascale + most * kb;
  for (int64_t r0 = 0; r0 < m; r0 += kNBitsDecodeRows) {
    const int64_t rows = std::min(kNBitsDecodeRows, m - r0);
    for (int64_t r = 0; r < rows; ++r)
      QuantizeRow(a + (r0 + r) * w.k, w, entry.pairs, qa + r * kp, ascale + r * kb, azero + r * kb);
    const Int8Args d{&w, qa, ascale, azero, bias, c + r0 * w.n, rows};
    // A column's work: its codes, a quarter of the float path's per row.
    ParallelFor(threads, w.n, WorkPerIndex{double(kp) * double(rows) / 16},
                [&](int64_t j0, int64_t j1) { entry.columns(d, j0, j1); });
  }
}

void NBitsMatMulInt8Reference(const float* a, int64_t m, const NBitsMatrix& w, const float* bias, float* c) {
  const BlockFormat& f = Format(4);
  std::vector<int32_t> qa(size_t(w.k));
  std::vector<double> ascale(size_t(w.k_blocks));
  for (int64_t r = 0; r < m; ++r) {
    const float* x = a + r * w.k;
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const int64_t first = b * w.block_size, len = std::min(w.block_size, w.k - first);
      float inv;
      ascale[size_t(b)] = Int8BlockScale(x + first, len, &inv);
      for (int64_t e = first; e < first + len; ++e) qa[size_t(e)] = int32_t(std::nearbyint(x[e] * inv));
    }
    for (int64_t j = 0; j < w.n; ++j) {
      const uint8_t* q = w.data + j * w.k_blocks * w.blob_bytes();
      double y = bias ? bias[j] : 0.0;
      for (int64_t b = 0; b < w.k_blocks; ++b) {
        int64_t dot = 0, sum = 0;
        for (int64_t e = b * w.block_size; e < std::min(w.k, (b + 1) * w.block_size); ++e) {
          dot += int64_t(f.load(q, e)) * qa[size_t(e)];
          sum += qa[size_t(e)];
        }
        y += ascale[size_t(b)] * double(w.scales[j * w.k_blocks + b]) * (double(dot) - double(w.Zero(j, b)) * double(sum));
      }
      c[r * w.n + j] = float(y);
    }
  }
}

bool NBitsGIdxIsTrivial(const int32_t* g_idx, int64_t k, int64_t block_size) {
  for (int64_t kk = 0; kk < k; ++kk)
    if (g_idx[kk] != kk / block_size) return false;
  return true;
}

}  // namespace onnx_mini
