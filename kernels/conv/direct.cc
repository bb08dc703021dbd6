#include "kernels/conv/direct.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/cpu_dispatch.h"
#include "runtime/checked.h"
#include "runtime/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace onnx_mini {
namespace {

constexpr int64_t kPanel = 16;  // output channels a panel holds (two ymm)
constexpr int kTileRows = 6;    // output pixels a tile holds: 12 accumulators
constexpr int64_t kGroupTiles = 32;     // tiles whose input rows a group keeps in L2
constexpr int64_t kBlockFloats = 4096;  // weights a block of taps holds (16 KiB, in L1)

int64_t Taps(const DirectConvProblem& p) { return p.k[0] * p.k[1]; }
int64_t Panels(const DirectConvProblem& p) { return (p.m + kPanel - 1) / kPanel; }

// The input rows (c floats each) the taps of output pixels [q0, q0 + height)
// read, tap-major: rows[t * height + r] for pixel q0 + r, or `zeros` where
// the tap falls outside the input (one division a call: a tile's pixels and
// taps by steps).
void TapRows(const DirectConvProblem& p, const float* x, const float* zeros, int64_t q0, int64_t height,
             const float** rows) {
  const int64_t plane = p.out[0] * p.out[1];
  int64_t image = q0 / plane, o0 = (q0 % plane) / p.out[1], o1 = q0 % p.out[1];
  for (int64_t r = 0; r < height; ++r) {
    const float* xi = x + image * p.in[0] * p.in[1] * p.c;
    const int64_t b0 = o0 * p.s[0] - p.pb[0], b1 = o1 * p.s[1] - p.pb[1];
    int64_t t = 0;
    for (int64_t k0 = 0; k0 < p.k[0]; ++k0) {
      const int64_t i0 = b0 + k0 * p.d[0];
      for (int64_t k1 = 0; k1 < p.k[1]; ++k1, ++t) {
        const int64_t i1 = b1 + k1 * p.d[1];
        const bool inside = i0 >= 0 && i0 < p.in[0] && i1 >= 0 && i1 < p.in[1];
        rows[t * height + r] = inside ? xi + (i0 * p.in[1] + i1) * p.c : zeros;
      }
    }
    if (++o1 == p.out[1]) {
      o1 = 0;
      if (++o0 == p.out[0]) o0 = 0, ++image;
    }
  }
}

#if defined(__x86_64__)
#define ONNX_MINI_DIRECT_AVX2 gnu::target("avx2,fma")

// One op over a vector, as DirectConvOp says (z: the residual's lanes).
[[ONNX_MINI_DIRECT_AVX2, gnu::always_inline]] inline __m256 ApplyAvx2(const DirectConvOp& op, __m256 v, __m256 z) {
  switch (op.kind) {
    case DirectConvOp::kRelu:  // x > 0 ? x : 0 (NaN gives 0, as ConvPostOp)
      return _mm256_and_ps(v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
    case DirectConvOp::kLeakyRelu:
      return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(op.alpha)),
                              _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    case DirectConvOp::kClip:  // max/min return their second operand for NaN: v stays NaN
      return _mm256_min_ps(_mm256_set1_ps(op.beta), _mm256_max_ps(_mm256_set1_ps(op.alpha), v));
    case DirectConvOp::kLinear:
      return _mm256_fmadd_ps(v, _mm256_set1_ps(op.alpha), _mm256_set1_ps(op.beta));
    case DirectConvOp::kAdd:
      return _mm256_add_ps(v, z);
  }
  return v;
}

// R output pixels (rows[t * R + r]: tap t's input row for pixel r) x one
// panel's 16 channels, `valid` of them Y's (row stride m): the sums over
// `taps` taps and c channels, added to the bias (`first`) or to what y holds
// (a later block of taps). (Written with two named vectors a row: GCC 12 kept
// a [R][V] accumulator array in memory.)
template <int R>
[[ONNX_MINI_DIRECT_AVX2, gnu::noinline]] void TileAvx2(const float* const* rows, int64_t taps, int64_t c,
                                                        const float* w, const float* bias, bool first, float* y,
                                                        int64_t m, int64_t valid) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(valid)), lane);
  const __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(valid - 8)), lane);
  const bool whole = valid == kPanel;
  __m256 acc0[R], acc1[R];
  const __m256 b0 = !first || !bias ? _mm256_setzero_ps() : _mm256_maskload_ps(bias, mask0);
  const __m256 b1 = !first || !bias ? _mm256_setzero_ps() : _mm256_maskload_ps(bias + 8, mask1);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc0[r] = first ? b0 : _mm256_maskload_ps(y + r * m, mask0);
    acc1[r] = first ? b1 : _mm256_maskload_ps(y + r * m + 8, mask1);
  }
  for (int64_t t = 0; t < taps; ++t) {
    const float* a[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) a[r] = rows[t * R + r];
    const float* wt = w + t * c * kPanel;
    for (int64_t q = 0; q < c; ++q) {
      const __m256 w0 = _mm256_loadu_ps(wt + q * kPanel), w1 = _mm256_loadu_ps(wt + q * kPanel + 8);
    #pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(a[r] + q);
        acc0[r] = _mm256_fmadd_ps(x, w0, acc0[r]);
        acc1[r] = _mm256_fmadd_ps(x, w1, acc1[r]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (whole) {
      _mm256_storeu_ps(y + r * m, acc0[r]);
      _mm256_storeu_ps(y + r * m + 8, acc1[r]);
    } else {
      _mm256_maskstore_ps(y + r * m, mask0, acc0[r]);
      _mm256_maskstore_ps(y + r * m + 8, mask1, acc1[r]);
    }
  }
}

// The ops over `height` stored rows of `valid` channels (in L1): applied to
// the accumulators, their run-time loop kept GCC from holding those in
// registers.
[[ONNX_MINI_DIRECT_AVX2]] void OpsAvx2(const DirectConvOp* ops, int64_t n_ops, const float* z, float* y, int64_t m,
                                        int64_t height, int64_t valid) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t r = 0; r < height; ++r)
    for (int64_t col = 0; col < valid; col += 8) {
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(valid - col)), lane);
      float* at = y + r * m + col;
      __m256 v = _mm256_maskload_ps(at, mask);
      const __m256 zv = z ? _mm256_maskload_ps(z + r * m + col, mask) : _mm256_setzero_ps();
      for (int64_t o = 0; o < n_ops; ++o) v = ApplyAvx2(ops[o], v, zv);
      _mm256_maskstore_ps(at, mask, v);
    }
}

// Tiles [begin, end) of kTileRows output pixels (the last may be short), in
// groups whose input rows stay in L2; in a group, panel by panel, the taps in
// blocks whose weights stay in L1 while every tile of the group passes.
[[ONNX_MINI_DIRECT_AVX2]] void TilesAvx2(const DirectConvProblem& p, const float* x, const float* packed,
                                         const float* b, const float* z, const DirectConvOp* ops, int64_t n_ops,
                                         float* y, const float* zeros, int64_t begin, int64_t end) {
  const int64_t taps = Taps(p), pixels = p.n * p.out[0] * p.out[1], panels = Panels(p);
  const int64_t block = std::max<int64_t>(1, kBlockFloats / (p.c * kPanel));  // taps a block holds
  std::vector<const float*> rows(size_t(kGroupTiles * taps * kTileRows));
  for (int64_t g0 = begin; g0 < end; g0 += kGroupTiles) {
    const int64_t g1 = std::min(end, g0 + kGroupTiles);
    for (int64_t tile = g0; tile < g1; ++tile) {
      const int64_t q0 = tile * kTileRows;
      TapRows(p, x, zeros, q0, std::min<int64_t>(kTileRows, pixels - q0), rows.data() + (tile - g0) * taps * kTileRows);
    }
    for (int64_t j = 0; j < panels; ++j) {
      const int64_t col = j * kPanel, valid = std::min(kPanel, p.m - col);
      const float* panel = packed + j * taps * p.c * kPanel;
      for (int64_t t0 = 0; t0 < taps; t0 += block) {
        const int64_t t1 = std::min(taps, t0 + block);
        for (int64_t tile = g0; tile < g1; ++tile) {
          const int64_t q0 = tile * kTileRows, height = std::min<int64_t>(kTileRows, pixels - q0);
          const float* const* tile_rows = rows.data() + (tile - g0) * taps * kTileRows + t0 * height;
          float* yt = y + q0 * p.m + col;
          const float* w = panel + t0 * p.c * kPanel;
          const float* bias = b ? b + col : nullptr;
          const int64_t n_taps = t1 - t0;
          const bool first = t0 == 0;
          switch (height) {
            case 1: TileAvx2<1>(tile_rows, n_taps, p.c, w, bias, first, yt, p.m, valid); break;
            case 2: TileAvx2<2>(tile_rows, n_taps, p.c, w, bias, first, yt, p.m, valid); break;
            case 3: TileAvx2<3>(tile_rows, n_taps, p.c, w, bias, first, yt, p.m, valid); break;
            case 4: TileAvx2<4>(tile_rows, n_taps, p.c, w, bias, first, yt, p.m, valid); break;
            case 5: TileAvx2<5>(tile_rows, n_taps, p.c, w, bias, first, yt, p.m, valid); break;
            default: TileAvx2<6>(tile_rows, n_taps, p.c, w, bias, first, yt, p.m, valid); break;
          }
          if (t1 == taps && n_ops > 0) OpsAvx2(ops, n_ops, z ? z + q0 * p.m + col : nullptr, yt, p.m, height, valid);
        }
      }
    }
  }
}
#undef ONNX_MINI_DIRECT_AVX2
#endif

using TilesFn = void (*)(const DirectConvProblem&, const float*, const float*, const float*, const float*,
                         const DirectConvOp*, int64_t, float*, const float*, int64_t, int64_t);
// AVX-512 hosts keep oneDNN (its kernels there did not lose to onnxruntime's).
const CpuDispatchTable<TilesFn>& Builds() {
  static const CpuDispatchTable<TilesFn> table{
#if defined(__x86_64__)
      {CpuTarget::kAvx512, nullptr},
      {CpuTarget::kAvx2, TilesAvx2},
#endif
      {CpuTarget::kBaseline, nullptr},
  };
  return table;
}

}  // namespace

bool DirectConvAvailable() { return Builds().Active() != nullptr; }

bool DirectConvSuits(const DirectConvProblem& p) {
  return p.c >= 16 && p.m > 0 && Taps(p) * p.c >= 128 && 100 * p.m >= 85 * Panels(p) * kPanel;
}

int64_t DirectConvPackedSize(const DirectConvProblem& p) {
  const auto size = CheckedMul(Panels(p) * kPanel, Taps(p));
  const auto all = size ? CheckedMul(*size, p.c) : std::nullopt;
  return all ? *all : -1;
}

void DirectConvPack(const DirectConvProblem& p, const float* w, float* packed) {
  const int64_t taps = Taps(p);
  for (int64_t j = 0; j < Panels(p); ++j)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t q = 0; q < p.c; ++q)
        for (int64_t o = 0; o < kPanel; ++o) {
          const int64_t oc = j * kPanel + o;
          packed[((j * taps + t) * p.c + q) * kPanel + o] = oc < p.m ? w[(oc * p.c + q) * taps + t] : 0.0f;
        }
}

void DirectConv(const DirectConvProblem& p, const float* x, const float* packed, const float* b, const float* z,
                const std::vector<DirectConvOp>& ops, float* y, int threads) {
  const TilesFn tiles_fn = Builds().Active();
  const int64_t pixels = p.n * p.out[0] * p.out[1];
  const int64_t tiles = (pixels + kTileRows - 1) / kTileRows;
  const std::vector<float> zeros(size_t(p.c), 0.0f);
  ParallelFor(threads, tiles, WorkPerIndex{double(kTileRows * Panels(p) * kPanel * Taps(p) * p.c)},
              [&](int64_t begin, int64_t end) {
                tiles_fn(p, x, packed, b, z, ops.data(), int64_t(ops.size()), y, zeros.data(), begin, end);
              });
}

void DirectConvReference(const DirectConvProblem& p, const float* x, const float* w, const float* b, const float* z,
                         const std::vector<DirectConvOp>& ops, float* y) {
  const int64_t taps = Taps(p);
  int64_t q = 0;  // output pixel
  for (int64_t image = 0; image < p.n; ++image)
    for (int64_t o0 = 0; o0 < p.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < p.out[1]; ++o1, ++q)
        for (int64_t oc = 0; oc < p.m; ++oc) {
          float acc = b ? b[oc] : 0.0f;
          for (int64_t k0 = 0; k0 < p.k[0]; ++k0)
            for (int64_t k1 = 0; k1 < p.k[1]; ++k1) {
              const int64_t i0 = o0 * p.s[0] - p.pb[0] + k0 * p.d[0], i1 = o1 * p.s[1] - p.pb[1] + k1 * p.d[1];
              if (i0 < 0 || i0 >= p.in[0] || i1 < 0 || i1 >= p.in[1]) continue;
              const float* row = x + ((image * p.in[0] + i0) * p.in[1] + i1) * p.c;
              for (int64_t ch = 0; ch < p.c; ++ch) acc += row[ch] * w[(oc * p.c + ch) * taps + k0 * p.k[1] + k1];
            }
          for (const DirectConvOp& op : ops) {
            switch (op.kind) {
              case DirectConvOp::kRelu: acc = acc > 0 ? acc : 0.0f; break;
              case DirectConvOp::kLeakyRelu: acc = acc < 0 ? op.alpha * acc : acc; break;
              case DirectConvOp::kClip: acc = acc != acc ? acc : std::min(op.beta, std::max(op.alpha, acc)); break;
              case DirectConvOp::kLinear: acc = op.alpha * acc + op.beta; break;
              case DirectConvOp::kAdd: acc = acc + z[q * p.m + oc]; break;
            }
          }
          y[q * p.m + oc] = acc;
        }
}

}  // namespace onnx_mini
