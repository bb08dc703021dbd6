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

// 2-bit codes only: 4 and 8 bits decode over quantized panels (panel_gemv.h).
template <int kBytes>
[[gnu::always_inline]] inline void DecodeWidth(const DecodeArgs& d, int64_t j0, int64_t j1) {
  DecodeRows<kBytes, 2>(d, j0, j1);
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

bool UseDecode(int64_t m, const NBitsMatrix& w) {
  return m <= kNBitsDecodePassRows && w.g_idx == nullptr && w.bits == 2;
}

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
  const float amax = NBitsMaxAbs(x, len);
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

float NBitsMaxAbs(const float* x, int64_t len) {
  // Eight running maxima: the loop vectorizes (one would be a serial chain).
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= len; i += 8)
    for (int j = 0; j < 8; ++j) part[j] = std::max(part[j], std::fabs(x[i + j]));
  for (; i < len; ++i) part[0] = std::max(part[0], std::fabs(x[i]));
  float amax = 0;
  for (float p : part) amax = std::max(amax, p);
  return amax;
}

float NBitsQuantizeBlockInt8(const float* x, int64_t len, int8_t* q, int32_t* sum) {
  float inv;
  const float scale = Int8BlockScale(x, len, &inv);
  // A NaN or an infinity in the block (the max ignores NaN): its values 0
  // (converting NaN to int32 is undefined; x86 gives INT_MIN) and its scale
  // NaN, so the row's products are NaN as the float product's are. A pass of
  // its own: the loop below then stays branch-free and vectorized.
  int32_t bad = !(scale < std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < len; ++i) bad |= int32_t(x[i] != x[i]);
  if (bad) {
    std::memset(q, 0, size_t(len));
    *sum = 0;
    return std::numeric_limits<float>::quiet_NaN();
  }
  int32_t s = 0;
  for (int64_t i = 0; i < len; ++i) {
    // Nearest-even by the 1.5 * 2^23 addend (|x * inv| <= 127): what
    // std::nearbyint gives, without its libm call on the baseline target.
    const int32_t v = int32_t((x[i] * inv + 0x1.8p23f) - 0x1.8p23f);
    q[i] = int8_t(v);
    s += v;
  }
  *sum = s;
  return scale;
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
