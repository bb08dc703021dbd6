#include "kernels/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu_dispatch.h"
#include "kernels/vec/arith.h"
#include "kernels/vec/float_vector.h"
#include "kernels/vec/round.h"
#include "runtime/checked.h"
#include "runtime/thread_pool.h"
#include "runtime/type_set.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onnx_mini {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The compute type: float for the 16-bit types and float, double for double.
template <class T> using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Calls f(TypeTag<T>) for the four attention element types (Attention's rows
// admit only these).
template <class F>
void VisitAttentionType(DType dtype, F&& f) {
  VisitTypes<TypeList<float, double, Float16, BFloat16>>(dtype, std::forward<F>(f));
}

// r = Cast_T1(sqrt(scale)), applied to Q and K separately (A9).
template <class T>
Acc<T> ScaleRoot(const AttentionProblem& p) {
  return Acc<T>(RoundToPrecision<T>(std::sqrt(p.scale)));
}

// Key j of row b (j < KeyCount(b)): from the cache below PastLen(b), else new.
template <class T>
const T* KeyRow(const AttentionProblem& p, int64_t b, int64_t g, int64_t j) {
  const KvCacheView& c = p.cache;
  const int64_t past = c.PastLen(b);
  if (j < past) return static_cast<const T*>(c.past_key) + ((b * p.kv_heads + g) * c.capacity + j) * p.head_size;
  return static_cast<const T*>(p.k_data) + p.k.At(b, g, j - past);
}
template <class T>
const T* ValueRow(const AttentionProblem& p, int64_t b, int64_t g, int64_t j) {
  const KvCacheView& c = p.cache;
  const int64_t past = c.PastLen(b);
  if (j < past) return static_cast<const T*>(c.past_value) + ((b * p.kv_heads + g) * c.capacity + j) * p.v_head_size;
  return static_cast<const T*>(p.v_data) + p.v.At(b, g, j - past);
}

// The K (or V) rows of one (batch, kv head), with the row's past length and
// base pointers found once: the fast kernel asks for one per key.
template <class T>
struct HeadRows {
  const T* cached = nullptr;  // key 0 of the cache (null without a past)
  const T* fresh = nullptr;   // new key 0 (null without new keys)
  int64_t past = 0, cached_stride = 0, fresh_stride = 0;
  const T* operator()(int64_t j) const {
    return j < past ? cached + j * cached_stride : fresh + (j - past) * fresh_stride;
  }
};
template <class T>
HeadRows<T> RowsOf(const AttentionProblem& p, int64_t b, int64_t g, const void* cache, const void* data,
                   const HeadView& view, int64_t dim) {
  HeadRows<T> r;
  r.past = p.cache.PastLen(b);
  if (r.past > 0) r.cached = static_cast<const T*>(cache) + (b * p.kv_heads + g) * p.cache.capacity * dim;
  if (p.kv_len > 0) r.fresh = static_cast<const T*>(data) + view.At(b, g, 0);
  r.cached_stride = dim;
  r.fresh_stride = view.stride_s;
  return r;
}
template <class T>
HeadRows<T> KeyRows(const AttentionProblem& p, int64_t b, int64_t g) {
  return RowsOf<T>(p, b, g, p.cache.past_key, p.k_data, p.k, p.head_size);
}
template <class T>
HeadRows<T> ValueRows(const AttentionProblem& p, int64_t b, int64_t g) {
  return RowsOf<T>(p, b, g, p.cache.past_value, p.v_data, p.v, p.v_head_size);
}

// The mask value at (b, h, i, j) for j < mask_len.
double MaskAt(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  return p.mask[b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] + j * p.mask_stride[3]];
}

// The float bias of (b, h, i, j) before the cast to T1: mask, padding, and
// the causal, window and length rules, all as 0 or -inf except the mask.
double BiasAt(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  int64_t first, last;
  p.VisibleKeys(b, i, first, last);
  if (j < first || j >= last) return kNegInf;
  return p.mask ? MaskAt(p, b, h, i, j) : 0.0;
}

// Narrows a row's visible keys [first, last) past the mask's -inf values at
// either end (masked keys take no part in any case: a causal or padding mask
// given as a tensor then skips blocks as is_causal does), and tells whether
// every mask value left is 0, so that the row needs no per-key bias.
bool TrimMaskRow(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t& first, int64_t& last) {
  const double* row = p.mask + b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2];
  const int64_t step = p.mask_stride[3];
  while (first < last && row[first * step] == kNegInf) ++first;
  while (last > first && row[(last - 1) * step] == kNegInf) --last;
  for (int64_t j = first; j < last; ++j)
    if (row[j * step] != 0.0) return false;
  return true;
}

}  // namespace

void AttentionProblem::VisibleKeys(int64_t b, int64_t i, int64_t& first, int64_t& last) const {
  first = 0;
  last = total_len;
  if (mask) last = std::min(last, mask_len);  // short masks are padded with -inf (A12)
  // A row's own keys (ragged rows), and of them the valid ones (nonpad).
  if (cache.past_lens) last = std::min(last, KeyCount(b));
  if (cache.valid_lens) last = std::min(last, cache.valid_lens[b]);
  // Saturating: a window of INT64_MAX is unbounded, not a wrapped edge.
  int64_t pos = SaturatingAdd(i, Offset(b));
  if (clamp_position) pos = std::min(pos, last - 1);
  if (causal) last = std::min(last, SaturatingAdd(pos, 1));
  if (left_window >= 0) first = std::max(first, SaturatingAdd(pos, -left_window));
  if (right_window >= 0) last = std::min(last, SaturatingAdd(SaturatingAdd(pos, right_window), 1));
  first = std::max<int64_t>(first, 0);
  last = std::max(last, first);
}

// present_key/present_value rows of (batch, kv head) pairs r0..r1 (r = b *
// kv_heads + g): each row's past (unless present is the past's memory) and
// then its new keys at PastLen(b).
template <class T>
void CopyPresentRows(const AttentionProblem& p, int64_t r0, int64_t r1, bool past_rows = true) {
  const KvCacheView& c = p.cache;
  // Rows of zero width hold nothing: no loop over their (possibly huge) count.
  T* const present_key = p.head_size > 0 ? static_cast<T*>(c.present_key) : nullptr;
  T* const present_value = p.v_head_size > 0 ? static_cast<T*>(c.present_value) : nullptr;
  if (!present_key && !present_value) return;
  const int64_t cap = c.present_capacity;
  const bool shared = c.Shared();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r / p.kv_heads, g = r % p.kv_heads, past = c.PastLen(b);
    // The past rows of (b, g) are contiguous: one copy each.
    if (past > 0 && !shared && past_rows) {
      if (present_key)
        std::memcpy(present_key + r * cap * p.head_size, KeyRow<T>(p, b, g, 0), size_t(past * p.head_size) * sizeof(T));
      if (present_value)
        std::memcpy(present_value + r * cap * p.v_head_size, ValueRow<T>(p, b, g, 0),
                    size_t(past * p.v_head_size) * sizeof(T));
    }
    for (int64_t j = past; j < past + p.kv_len; ++j) {
      if (present_key)
        std::memcpy(present_key + (r * cap + j) * p.head_size, KeyRow<T>(p, b, g, j),
                    size_t(p.head_size) * sizeof(T));
      if (present_value)
        std::memcpy(present_value + (r * cap + j) * p.v_head_size, ValueRow<T>(p, b, g, j),
                    size_t(p.v_head_size) * sizeof(T));
    }
  }
}

// Rows [from, to) of (b, g)'s past into present (a separate present).
template <class T>
void CopyPastRange(const AttentionProblem& p, int64_t b, int64_t g, int64_t from, int64_t to) {
  const KvCacheView& c = p.cache;
  to = std::min(to, c.PastLen(b));
  if (from >= to) return;
  const int64_t r = b * p.kv_heads + g, cap = c.present_capacity;
  if (c.present_key && p.head_size > 0)
    std::memcpy(static_cast<T*>(c.present_key) + (r * cap + from) * p.head_size, KeyRow<T>(p, b, g, from),
                size_t((to - from) * p.head_size) * sizeof(T));
  if (c.present_value && p.v_head_size > 0)
    std::memcpy(static_cast<T*>(c.present_value) + (r * cap + from) * p.v_head_size, ValueRow<T>(p, b, g, from),
                size_t((to - from) * p.v_head_size) * sizeof(T));
}

void WritePresent(const AttentionProblem& p, int threads) {
  if (!p.cache.present_key && !p.cache.present_value) return;
  VisitAttentionType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t rows = p.batch * p.kv_heads;
    // Large copies only, on the kernels' pool (a decode step copies its
    // cache): the pool's size rule, a byte copied an eighth of a unit.
    const double bytes = double(rows) * double(p.total_len) * double(p.head_size + p.v_head_size) * sizeof(T);
    const int pool_threads = ThreadsForWork(threads, bytes / 8);
    ParallelFor(pool_threads, rows, 1, [&](int64_t r0, int64_t r1) { CopyPresentRows<T>(p, r0, r1); });
  });
}

// ---- Reference ----

void AttentionReference(const AttentionProblem& p) {
  VisitAttentionType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto R = [](double x) { return RoundToPrecision<T>(x); };
    auto Rsp = [&](double x) { return RoundToPrecision(p.softmax_dtype, x); };
    const double r = double(ScaleRoot<T>(p));
    const int64_t T_ = p.total_len, D = p.head_size, Dv = p.v_head_size;
    std::vector<double> qk(static_cast<size_t>(T_)), logits(qk), z(qk), prob(qk);
    std::vector<char> hidden(static_cast<size_t>(T_));  // bias -inf
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.q_heads; ++h)
        for (int64_t i = 0; i < p.q_len; ++i) {
          const int64_t g = h / p.group();
          const T* q = static_cast<const T*>(p.q_data) + p.q.At(b, h, i);
          bool all_masked = true;
          for (int64_t j = 0; j < T_; ++j) {
            if (j >= p.KeyCount(b)) {  // past a ragged row's keys: no data, hidden
              qk[size_t(j)] = logits[size_t(j)] = 0;
              z[size_t(j)] = kNegInf;
              hidden[size_t(j)] = 1;
              continue;
            }
            const T* k = KeyRow<T>(p, b, g, j);
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += R(double(Widen(q[d])) * r) * R(double(Widen(k[d])) * r);
            qk[size_t(j)] = R(dot);
            logits[size_t(j)] = p.softcap != 0 ? R(double(p.softcap) * R(std::tanh(R(qk[size_t(j)] / p.softcap))))
                                               : qk[size_t(j)];
            const double bias = R(BiasAt(p, b, h, i, j));
            hidden[size_t(j)] = bias == kNegInf;
            if (!hidden[size_t(j)]) all_masked = false;
            z[size_t(j)] = R(logits[size_t(j)] + bias);
          }
          // Softmax in the softmax precision, then cast to T1 (A17). Keys the
          // bias hides (-inf) weigh 0 and their values are not read, even if
          // their score or value is NaN or infinite (the fast kernel never
          // looks at them); a NaN score at a visible key makes the whole row
          // NaN, as Softmax does.
          const double sink = p.sinks ? Rsp(p.sinks[h]) : kNegInf;
          double max = sink;
          bool nan = false;
          for (int64_t j = 0; j < T_; ++j) {
            if (hidden[size_t(j)]) continue;
            const double zj = Rsp(z[size_t(j)]);
            nan = nan || std::isnan(zj);
            max = std::max(max, zj);
          }
          double sum = p.sinks && max != kNegInf ? Rsp(std::exp(Rsp(sink - max))) : 0;
          for (int64_t j = 0; j < T_; ++j) {
            prob[size_t(j)] = hidden[size_t(j)] || max == kNegInf ? 0 : Rsp(std::exp(Rsp(Rsp(z[size_t(j)]) - max)));
            sum += prob[size_t(j)];
          }
          sum = Rsp(sum);
          for (int64_t j = 0; j < T_; ++j)
            prob[size_t(j)] = nan ? std::numeric_limits<double>::quiet_NaN()
                              : (all_masked && !p.sinks) || sum == 0 ? 0
                                                       : R(Rsp(prob[size_t(j)] / sum));
          if (p.y_data) {
            T* y = static_cast<T*>(p.y_data) + p.y.At(b, h, i);
            for (int64_t d = 0; d < Dv; ++d) {
              double acc = 0;
              for (int64_t j = 0; j < T_; ++j)
                if (!hidden[size_t(j)]) acc += prob[size_t(j)] * double(Widen(ValueRow<T>(p, b, g, j)[d]));
              y[d] = Narrow<T>(Acc<T>(acc));
            }
          }
          if (p.qk_data) {
            T* out = static_cast<T*>(p.qk_data) + ((b * p.q_heads + h) * p.q_len + i) * T_;
            for (int64_t j = 0; j < T_; ++j) {
              const double v = p.qk_mode == 1 ? logits[size_t(j)]
                             : p.qk_mode == 2 ? z[size_t(j)]
                             : p.qk_mode == 3 ? prob[size_t(j)]
                                              : qk[size_t(j)];
              out[j] = Narrow<T>(Acc<T>(v));
            }
          }
        }
  });
}

// ---- Fast ----

bool UsesFastPath(const AttentionProblem& p) {
  if (p.qk_data) return false;
  // The softmax must not be asked to run below the compute type; 16-bit T1
  // with its own precision (the default) computes the softmax in float.
  if (p.softmax_dtype == p.dtype) return true;
  if (p.dtype == DType::kDouble) return p.softmax_dtype == DType::kDouble;
  return p.softmax_dtype == DType::kFloat || p.softmax_dtype == DType::kDouble;
}

namespace {

constexpr int64_t kKeyBlock = 64;
constexpr int64_t kQueryBlock = 32;
constexpr int64_t kTiledRows = 16;
// Rows of a block whose value rows are added four at a time (the rest one
// at a time): a query block's rows for a group of up to 32 heads.
constexpr int64_t kMaxFullRows = 1024;

// Split-KV: a decode with fewer (batch, kv head) tasks than threads splits
// each task's keys into ranges of at least kSplitKeys, run in parallel.
constexpr int64_t kSplitKeys = 256;

// The softmax state of a key range for `rows` query rows, in one array:
// the unnormalized outputs, the running maximum, the sum of weights (NaN
// once a visible key scored NaN) and whether a key with a finite bias was
// seen. Ranges combine as the online softmax combines key blocks.
template <class A>
struct SplitState {
  static int64_t Size(int64_t rows, int64_t dv) { return rows * (dv + 3); }
  SplitState(A* base, int64_t rows, int64_t dv)
      : acc(base), m(base + rows * dv), l(m + rows), seen(l + rows) {}
  A* acc;
  A* m;
  A* l;
  A* seen;
};

// The fast kernel is one source compiled for each CPU target: FastBlockBody
// and the helpers it runs per element are always inlined into the entry
// points at the end of this section, which carry the target attributes, so
// every hot loop is compiled (and vectorized) for that target. Anything not
// inlined stays a plain x86-64 function, safe on every CPU.

// Rows of bfloat16 to float, and float rows rounded to T's precision.
[[gnu::always_inline]] inline void WidenBf16Row(const BFloat16* in, float* out, int64_t n) {
  for (int64_t d = 0; d < n; ++d) {
    const uint32_t bits = uint32_t(in[d].bits) << 16;
    std::memcpy(&out[d], &bits, 4);
  }
}
// A float's bits rounded to bfloat16 (the low half zero): to nearest even,
// NaN kept and made quiet, as ToBFloat16(float) does; branch-free, so loops
// over it vectorize.
[[gnu::always_inline]] inline uint32_t RoundBf16Bits(uint32_t x) {
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) & 0xFFFF0000u;
  return (x & 0x7FFFFFFFu) > 0x7F800000u ? ((x | 0x400000u) & 0xFFFF0000u) : rounded;
}
template <class T, class A>
[[gnu::always_inline]] inline void RoundRow(A* row, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<A, float>) {
    for (int64_t d = 0; d < n; ++d) {
      uint32_t x;
      std::memcpy(&x, &row[d], 4);
      x = RoundBf16Bits(x);
      std::memcpy(&row[d], &x, 4);
    }
  } else if constexpr (std::is_same_v<T, Float16>) {
    Float16 tmp[64];
    for (int64_t d0 = 0; d0 < n; d0 += 64) {
      const int64_t len = std::min<int64_t>(64, n - d0);
      FloatToFloat16(row + d0, tmp, len);
      Float16ToFloat(tmp, row + d0, len);
    }
  } else {
    for (int64_t d = 0; d < n; ++d) row[d] = RoundToPrecision<T>(row[d]);
  }
}
// A 16-bit row widened to float, and a K row widened, scaled by r and
// rounded to T's precision (A9), with the same results as ToFloat, `*= r`
// and RoundRow. float16 uses the target's conversion instructions inline (a
// dispatched call per row cost more than the conversion); these helpers
// carry their own target and return how many elements they did.
#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 conversion intrinsics start from an undefined vector,
// which -Wmaybe-uninitialized reports inside its own header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
[[gnu::target("avx512f")]] inline int64_t WidenF16Avx512(const Float16* in, float* out, int64_t n, float r,
                                                         bool round) {
  const __m512 rv = _mm512_set1_ps(r);
  int64_t d = 0;
  for (; d + 16 <= n; d += 16) {
    __m512 x = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + d)));
    if (round) x = _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_mul_ps(x, rv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm512_storeu_ps(out + d, x);
  }
  return d;
}
[[gnu::target("avx,f16c")]] inline int64_t WidenF16Avx2(const Float16* in, float* out, int64_t n, float r,
                                                         bool round) {
  const __m256 rv = _mm256_set1_ps(r);
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + d)));
    if (round) x = _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(x, rv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm256_storeu_ps(out + d, x);
  }
  return d;
}
#pragma GCC diagnostic pop
#endif
template <class T, int kVectorBytes>
[[gnu::always_inline]] inline int64_t WidenF16Vector(const T* in, float* out, int64_t n, float r, bool round) {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_same_v<T, Float16> && kVectorBytes == 64) return WidenF16Avx512(in, out, n, r, round);
  if constexpr (std::is_same_v<T, Float16> && kVectorBytes == 32) return WidenF16Avx2(in, out, n, r, round);
#endif
  return 0;
}
template <class T, int kVectorBytes>
[[gnu::always_inline]] inline void WidenRowInline(const T* in, float* out, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16>) return WidenBf16Row(in, out, n);
  int64_t d = WidenF16Vector<T, kVectorBytes>(in, out, n, 1.0f, false);
  for (; d < n; ++d) out[d] = ToFloat(in[d]);
}
// A row stored as T, rounded as Narrow<T> rounds: bfloat16 on the bits,
// float16 by the bulk conversion, without a call per element.
template <class T, class A>
[[gnu::always_inline]] inline void NarrowRow(const A* in, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16> && std::is_same_v<A, float>) {
    for (int64_t d = 0; d < n; ++d) {
      uint32_t x;
      std::memcpy(&x, &in[d], 4);
      out[d].bits = uint16_t(RoundBf16Bits(x) >> 16);
    }
  } else if constexpr (std::is_same_v<T, Float16> && std::is_same_v<A, float>) {
    FloatToFloat16(in, out, n);
  } else {
    for (int64_t d = 0; d < n; ++d) out[d] = Narrow<T>(in[d]);
  }
}
template <class T, int kVectorBytes>
[[gnu::always_inline]] inline void WidenScaleRoundRow(const T* in, float* out, int64_t n, float r) {
  int64_t d = WidenF16Vector<T, kVectorBytes>(in, out, n, r, true);
  if constexpr (std::is_same_v<T, BFloat16>) {
    for (; d < n; ++d) {
      uint32_t x = uint32_t(in[d].bits) << 16;
      float f;
      std::memcpy(&f, &x, 4);
      f *= r;
      std::memcpy(&x, &f, 4);
      x = RoundBf16Bits(x);
      std::memcpy(&out[d], &x, 4);
    }
  }
  for (; d < n; ++d) out[d] = RoundToPrecision<T>(ToFloat(in[d]) * r);
}

// Scores of four query rows (q, rows of D) against a transposed block of
// kKeyBlock keys: s[r * kKeyBlock + j] = sum_d q_r[d] * kt[d][j], with GCC
// vectors of the target's width (kVectorBytes: 64 for AVX-512, 32 for AVX2,
// 16 for SSE2) as accumulators that stay in registers; each K vector loaded
// serves the four rows, and the independent accumulators keep both FMA
// ports busy. No horizontal sums.
template <int kVectorBytes, class A>
[[gnu::always_inline]] inline void ScoreTile4(const A* q, const A* kt, int64_t D, A* s) {
  constexpr int kLanes = kVectorBytes / int(sizeof(A));
  static_assert(kKeyBlock % (4 * kLanes) == 0, "the tile is whole groups of four vectors");
  typedef A Vec __attribute__((vector_size(kVectorBytes)));
  // Sixteen named accumulators: GCC keeps these in registers, where an
  // array of vectors would be stored back to the stack every iteration.
  for (int c0 = 0; c0 < int(kKeyBlock) / kLanes; c0 += 4) {
    Vec a00 = {}, a01 = {}, a02 = {}, a03 = {}, a10 = {}, a11 = {}, a12 = {}, a13 = {};
    Vec a20 = {}, a21 = {}, a22 = {}, a23 = {}, a30 = {}, a31 = {}, a32 = {}, a33 = {};
    for (int64_t d = 0; d < D; ++d) {
      const A* k = kt + d * kKeyBlock + c0 * kLanes;
      Vec k0, k1, k2, k3;
      std::memcpy(&k0, k, sizeof(Vec));
      std::memcpy(&k1, k + kLanes, sizeof(Vec));
      std::memcpy(&k2, k + 2 * kLanes, sizeof(Vec));
      std::memcpy(&k3, k + 3 * kLanes, sizeof(Vec));
      const A q0 = q[d], q1 = q[D + d], q2 = q[2 * D + d], q3 = q[3 * D + d];
      a00 += q0 * k0, a01 += q0 * k1, a02 += q0 * k2, a03 += q0 * k3;
      a10 += q1 * k0, a11 += q1 * k1, a12 += q1 * k2, a13 += q1 * k3;
      a20 += q2 * k0, a21 += q2 * k1, a22 += q2 * k2, a23 += q2 * k3;
      a30 += q3 * k0, a31 += q3 * k1, a32 += q3 * k2, a33 += q3 * k3;
    }
    const Vec* acc[4][4] = {{&a00, &a01, &a02, &a03}, {&a10, &a11, &a12, &a13},
                            {&a20, &a21, &a22, &a23}, {&a30, &a31, &a32, &a33}};
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c)
        std::memcpy(s + r * kKeyBlock + (c0 + c) * kLanes, acc[r][c], sizeof(Vec));
  }
}

#if defined(__x86_64__) || defined(__i386__)
// ScoreTile4 for bfloat16 with AVX-512 BF16: q[r * pairs + c] holds query row
// r's elements 2c and 2c + 1 as two bfloat16, kp[c * kKeyBlock + j] key j's.
// VDPBF16PS multiplies the pairs exactly and adds in float, as the float
// tile does with the same bfloat16-exact values, at half the instructions;
// it treats denormal inputs as zero. A call of its own (not inlined: the
// fast kernel's body is compiled without the BF16 target until inlined into
// its entry point), one per four rows and key block.
[[gnu::target("avx512f,avx512bf16")]] void ScoreTile4Bf16(const uint32_t* q, const uint32_t* kp, int64_t pairs,
                                                         float* s) {
  static_assert(kKeyBlock == 64, "the tile is four vectors of 16 keys");
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
  __m512 a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
  for (int64_t c = 0; c < pairs; ++c) {
    const uint32_t* k = kp + c * kKeyBlock;
    const __m512bh k0 = (__m512bh)_mm512_loadu_si512(k), k1 = (__m512bh)_mm512_loadu_si512(k + 16);
    const __m512bh k2 = (__m512bh)_mm512_loadu_si512(k + 32), k3 = (__m512bh)_mm512_loadu_si512(k + 48);
    const __m512bh q0 = (__m512bh)_mm512_set1_epi32(int(q[c])), q1 = (__m512bh)_mm512_set1_epi32(int(q[pairs + c]));
    const __m512bh q2 = (__m512bh)_mm512_set1_epi32(int(q[2 * pairs + c]));
    const __m512bh q3 = (__m512bh)_mm512_set1_epi32(int(q[3 * pairs + c]));
    a00 = _mm512_dpbf16_ps(a00, q0, k0), a01 = _mm512_dpbf16_ps(a01, q0, k1);
    a02 = _mm512_dpbf16_ps(a02, q0, k2), a03 = _mm512_dpbf16_ps(a03, q0, k3);
    a10 = _mm512_dpbf16_ps(a10, q1, k0), a11 = _mm512_dpbf16_ps(a11, q1, k1);
    a12 = _mm512_dpbf16_ps(a12, q1, k2), a13 = _mm512_dpbf16_ps(a13, q1, k3);
    a20 = _mm512_dpbf16_ps(a20, q2, k0), a21 = _mm512_dpbf16_ps(a21, q2, k1);
    a22 = _mm512_dpbf16_ps(a22, q2, k2), a23 = _mm512_dpbf16_ps(a23, q2, k3);
    a30 = _mm512_dpbf16_ps(a30, q3, k0), a31 = _mm512_dpbf16_ps(a31, q3, k1);
    a32 = _mm512_dpbf16_ps(a32, q3, k2), a33 = _mm512_dpbf16_ps(a33, q3, k3);
  }
  const __m512 acc[4][4] = {{a00, a01, a02, a03}, {a10, a11, a12, a13}, {a20, a21, a22, a23}, {a30, a31, a32, a33}};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(s + r * kKeyBlock + c * 16, acc[r][c]);
}
#endif

// Rows of n bfloat16-exact floats as bfloat16 pairs for ScoreTile4Bf16:
// out[c * out_stride + row] or, with kByRow, out[row * out_stride + c] holds
// elements 2c and 2c + 1 of rows[row] (0 past n); the rows from `count` up
// to `total` are zero.
template <bool kByRow>
[[gnu::always_inline]] inline void PackBf16Pairs(const float* const* rows, int64_t count, int64_t total, int64_t n,
                                                 uint32_t* out, int64_t out_stride) {
  const int64_t pairs = (n + 1) / 2;
  for (int64_t row = 0; row < total; ++row)
    for (int64_t c = 0; c < pairs; ++c) {
      uint32_t lo = 0, hi = 0;
      if (row < count) {
        std::memcpy(&lo, rows[row] + 2 * c, 4);
        if (2 * c + 1 < n) std::memcpy(&hi, rows[row] + 2 * c + 1, 4);
      }
      out[kByRow ? row * out_stride + c : c * out_stride + row] = (lo >> 16) | (hi & 0xFFFF0000u);
    }
}

// The sum of a vector's lanes, halving the width down to 16 bytes.
template <class V>
[[gnu::always_inline]] inline auto LaneSum(V v) {
  using A = std::remove_reference_t<decltype(v[0])>;
  if constexpr (sizeof(V) > 16) {
    typedef A Half __attribute__((vector_size(sizeof(V) / 2)));
    Half lo, hi;
    std::memcpy(&lo, &v, sizeof(Half));
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof(Half), sizeof(Half));
    return LaneSum(lo + hi);
  } else {
    A sum = 0;
    for (size_t l = 0; l < sizeof(V) / sizeof(A); ++l) sum += v[l];
    return sum;
  }
}

// Scores of four query rows (q, rows of D) against n keys, one pass over each
// key row: s[r * kKeyBlock + j] = q_r . k_j. Four independent accumulators
// keep the FMA units busy where one row's dot product would wait on itself.
// prefetch(j) runs before key j's dot products (the rows read next come
// from memory meanwhile).
template <int kVectorBytes, class A, class Prefetch>
[[gnu::always_inline]] inline void ScoreRows4(const A* q, int64_t D, const A* const* k_rows, int64_t n, A* s,
                                              Prefetch&& prefetch) {
  constexpr int kLanes = kVectorBytes / int(sizeof(A));
  typedef A Vec __attribute__((vector_size(kVectorBytes)));
  const int64_t d_vec = D / kLanes * kLanes;
  for (int64_t j = 0; j < n; ++j) {
    const A* k = k_rows[j];
    prefetch(j);
    Vec acc[4] = {};
    for (int64_t d = 0; d < d_vec; d += kLanes) {
      Vec kv;
      std::memcpy(&kv, k + d, sizeof(Vec));
      for (int r = 0; r < 4; ++r) {
        Vec qv;
        std::memcpy(&qv, q + r * D + d, sizeof(Vec));
        acc[r] += qv * kv;
      }
    }
    for (int r = 0; r < 4; ++r) {
      A sum = LaneSum(acc[r]);
      for (int64_t d = d_vec; d < D; ++d) sum += q[r * D + d] * k[d];
      s[r * kKeyBlock + j] = sum;
    }
  }
}

// x = e^x for x <= 0 as ExpNonPositive(float) below, lane by lane over a GCC
// vector type F (I: its int32 lanes), for the targets' own widths (inlined
// into their entry points; in place: clang refuses wide vectors by value
// between functions of different targets). nearbyint is adding and taking
// away 1.5 x 2^23 (round to nearest even, |x| <= 126 here).
template <class F, class I>
[[gnu::always_inline]] inline void ExpNonPositiveLanes(F& x) {
  const F zero = {}, lo = zero - 87.0f, magic = zero + 12582912.0f;
  const F clamped = x > lo ? (x < zero ? x : zero) : lo;
  const F nf = (clamped * 1.44269504088896341f + magic) - magic;
  const F r = (clamped - nf * 0.693145751953125f) - nf * 1.42860682030941723e-6f;
  F p = zero + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I bits = (__builtin_convertvector(nf, I) + 127) << 23;
  F scale;
  std::memcpy(&scale, &bits, sizeof(F));
  x = x < lo ? zero : x != x ? x : p * scale;
}

#if defined(__x86_64__) || defined(__i386__)
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers, as above
#endif
// The lane sums of sixteen vectors v[0..15] as one vector (lane j: v[j]'s
// sum), by a tree of 15 shuffle-and-add steps: a decode step's scores without
// a horizontal sum per key (ScoreRows4 spends most of its time on those).
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512 LaneSums16(const __m512* v) {
  __m512 p[8], q[4];
  for (int i = 0; i < 8; ++i)  // per 128-bit block: v2i, v2i+1 halves interleaved
    p[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i)  // per block: v4i..v4i+3, each summed over the block
    q[i] = _mm512_add_ps(_mm512_shuffle_ps(p[2 * i], p[2 * i + 1], 0x44),
                         _mm512_shuffle_ps(p[2 * i], p[2 * i + 1], 0xEE));
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(q[0], q[1], 0x44), _mm512_shuffle_f32x4(q[0], q[1], 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(q[2], q[3], 0x44), _mm512_shuffle_f32x4(q[2], q[3], 0xEE));
  return _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
}

// What ScoreRows4Avx512 asks for from memory as it goes: the K and V rows of
// keys from `ahead` on (before `end`), one each per key it scores, into L2,
// and the block's own value rows (v_now) into L1 for the pass that follows.
// Its own prefetch instructions: __builtin_prefetch in a lambda of the
// caller's, inlined into this target's function, emitted none (GCC 12).
struct ScorePrefetch {
  HeadRows<float> k, v;
  int64_t ahead = 0, end = 0, dk = 0, dv = 0;
  const float* const* v_now = nullptr;
  // Keys in the cache (K rows one after another): the K lines of row
  // lin_from + j for block key j, before row lin_end, from a counter, and
  // no V rows ahead (v_now brings them), when nothing is copied to present
  // (its V copy wants V rows ahead). Zen 5, 96 GQA layers over 513 cached
  // keys of a bound 1024-slot cache, 1 thread: ~8% faster than K and V rows
  // 16 keys ahead; K and V 24 ahead, K 20, 32 or 64 ahead, K one line a
  // row, or no V into L1 each slower.
  const float* k_lin = nullptr;
  int64_t lin_from = 0, lin_end = 0;
  // Keys [0, copy_n) of the block also go to present (rows of dk and dv
  // from copy_k and copy_v, 64-byte aligned), with streaming stores: K from
  // the registers it is scored from, V from the rows prefetched 16 keys
  // before. One pass over the past (a separate present): 0.071 -> 0.053 ms a
  // layer at 1 thread where memcpy and then the scores from cache took
  // 0.042 + 0.029; with ordinary stores (each line read before it is
  // written) the one pass was slower than the two.
  float* copy_k = nullptr;
  float* copy_v = nullptr;
  int64_t copy_n = 0;
};
// The loop's counting is ~30% of ScoreRows4Avx512's samples in cache, but
// four prefetches without it made a decode step's attention over a cold
// cache ~1.5x slower (genai_int4_acc4_decode_shared, Zen 5): keep the pace.
[[gnu::target("avx512f")]] inline void PrefetchRow(const float* row, int64_t n, bool into_l1) {
  for (int64_t at = 0; at < n; at += 16) {
    if (into_l1) _mm_prefetch(reinterpret_cast<const char*>(row + at), _MM_HINT_T0);
    else _mm_prefetch(reinterpret_cast<const char*>(row + at), _MM_HINT_T1);
  }
}

// Four keys' rows at d (16 floats each): their products with four query
// rows (q, rows of D) added to acc[4 * key + row], and the first `copies`
// of them (up to 4) streamed to out, rows D apart (a present being written).
[[gnu::target("avx512f"), gnu::always_inline]] inline void ScoreKeys4At(const float* q, int64_t D, int64_t d,
                                                                        const float* k0, const float* k1,
                                                                        const float* k2, const float* k3,
                                                                        float* out, int64_t copies, __m512* acc) {
  const __m512 x0 = _mm512_loadu_ps(k0 + d), x1 = _mm512_loadu_ps(k1 + d);
  const __m512 x2 = _mm512_loadu_ps(k2 + d), x3 = _mm512_loadu_ps(k3 + d);
  if (copies > 0) {
    _mm512_stream_ps(out, x0);
    if (copies > 1) _mm512_stream_ps(out + D, x1);
    if (copies > 2) _mm512_stream_ps(out + 2 * D, x2);
    if (copies > 3) _mm512_stream_ps(out + 3 * D, x3);
  }
  for (int r = 0; r < 4; ++r) {
    const __m512 qv = _mm512_loadu_ps(q + r * D + d);
    acc[r] = _mm512_fmadd_ps(qv, x0, acc[r]);
    acc[4 + r] = _mm512_fmadd_ps(qv, x1, acc[4 + r]);
    acc[8 + r] = _mm512_fmadd_ps(qv, x2, acc[8 + r]);
    acc[12 + r] = _mm512_fmadd_ps(qv, x3, acc[12 + r]);
  }
}

// ScoreRows4 for float rows with D a multiple of 16 on AVX-512: four query
// rows (q, rows of D) against n keys, four keys at a time. The partial
// products of the 16 (key, row) pairs are reduced together by LaneSums16,
// not one horizontal sum each (most of ScoreRows4's time). Keys past n read
// key n - 1 again; their scores are not stored. A call of its own (as
// ScoreTile4Bf16), one per key block and four rows; pf (the first rows'
// call) says what to prefetch.
[[gnu::target("avx512f")]] void ScoreRows4Avx512(const float* q, int64_t D, const float* const* k_rows, int64_t n,
                                                 float* s, const ScorePrefetch* pf) {
  // Lane 4 * key + row of LaneSums16's result to lane 4 * row + key.
  const __m512i to_rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const int64_t m = std::min<int64_t>(4, n - j0);
    const float* k0 = k_rows[j0];
    const float* k1 = k_rows[j0 + std::min<int64_t>(1, m - 1)];
    const float* k2 = k_rows[j0 + std::min<int64_t>(2, m - 1)];
    const float* k3 = k_rows[j0 + std::min<int64_t>(3, m - 1)];
    if (pf) {
      if (pf->k_lin)  // one prefetch a 64-byte line
        for (int64_t at = (pf->lin_from + j0) * pf->dk, e = std::min(pf->lin_from + j0 + m, pf->lin_end) * pf->dk;
             at < e; at += 16)
          _mm_prefetch(reinterpret_cast<const char*>(pf->k_lin + at), _MM_HINT_T1);
      for (int64_t j = j0; j < j0 + m; ++j) {
        if (!pf->k_lin && pf->ahead + j < pf->end) {
          PrefetchRow(pf->k(pf->ahead + j), pf->dk, false);
          PrefetchRow(pf->v(pf->ahead + j), pf->dv, false);
        }
        if (pf->v_now) PrefetchRow(pf->v_now[j], pf->dv, true);
      }
    }
    const int64_t copies = pf && pf->copy_k ? std::max<int64_t>(0, std::min(m, pf->copy_n - j0)) : 0;
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16)
      ScoreKeys4At(q, D, d, k0, k1, k2, k3, copies > 0 ? pf->copy_k + j0 * D + d : nullptr, copies, acc);
    for (int64_t j = 0; j < copies; ++j) {
      const float* in = pf->v_now[j0 + j];
      float* out = pf->copy_v + (j0 + j) * pf->dv;
      for (int64_t d = 0; d < pf->dv; d += 16) _mm512_stream_ps(out + d, _mm512_loadu_ps(in + d));
    }
    const __m512 sums = _mm512_permutexvar_ps(to_rows, LaneSums16(acc));
    if (m == 4) {
      _mm_storeu_ps(s + j0, _mm512_castps512_ps128(sums));
      _mm_storeu_ps(s + kKeyBlock + j0, _mm512_extractf32x4_ps(sums, 1));
      _mm_storeu_ps(s + 2 * kKeyBlock + j0, _mm512_extractf32x4_ps(sums, 2));
      _mm_storeu_ps(s + 3 * kKeyBlock + j0, _mm512_extractf32x4_ps(sums, 3));
    } else {
      float lanes[16];
      _mm512_storeu_ps(lanes, sums);
      for (int r = 0; r < 4; ++r)
        for (int64_t j = 0; j < m; ++j) s[r * kKeyBlock + j0 + j] = lanes[4 * r + j];
    }
  }
}

// The decode sweep (few query rows, float, D and Dv multiples of 16,
// AVX-512): one pass over the keys in chunks of kSweepKeys, each chunk's K
// rows scored and its V rows added right after, so that K and V stream from
// memory together, with an online softmax per chunk held in vectors (a
// row's 16 scores in one register, no block of scores in memory).
// Rows share one visible range [lo, hi) and see their scores as they are
// (no mask, no softcap); the state (acc, m, l, seen) is FastBlockBody's.
constexpr int64_t kSweepKeys = 16;
// Keys ahead whose K and V lines are asked for (into L1) as a chunk goes, a
// chunk ahead: 4 KB on each stream at D 64. Zen 5, the Qwen2-sized decode
// step (bound cache, 1 thread): 8, 12, 24, 32 or 64 keys ahead, into L2
// (16 or 64 ahead), or a second prefetch 32-64 keys ahead into L2 each
// slower.
constexpr int64_t kSweepAhead = 16;
struct DecodeSweep {
  const float* q = nullptr;  // rows padded to a multiple of 4 with zero rows, each of D
  int64_t rows = 0, D = 0, Dv = 0, lo = 0, hi = 0;
  HeadRows<float> k, v;
  float* acc = nullptr;  // rows x Dv
  float* m = nullptr;
  float* l = nullptr;
  float* seen = nullptr;
  // Keys [lo, lo + copy_n) also go to present (rows from copy_k, copy_v,
  // 64-byte aligned), with streaming stores from the registers they are read into.
  float* copy_k = nullptr;
  float* copy_v = nullptr;
  int64_t copy_n = 0;
  // The first cached rows of the task that runs next on this thread, asked
  // for as this one ends (next_n of them, at most kSweepAhead).
  const float* next_k = nullptr;
  const float* next_v = nullptr;
  int64_t next_n = 0;
};
// ExpNonPositiveLanes, sixteen lanes.
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512 ExpNonPositive16(__m512 x) {
  using V = float_vector::V<64>;
  V::F v = V::F(x);
  ExpNonPositiveLanes<V::F, V::I>(v);
  return __m512(v);
}
// The K (or V) lines of key j, into L1: a row of `rows` below `end`, past
// it the next task's (next, its first next_n rows). A function of its own
// (SSE's prefetch, inlined into each target's sweep): in a lambda GCC 12
// emitted no prefetch.
[[gnu::always_inline]] inline void AskKey(const float* rows, int64_t end, const float* next,
                                                                  int64_t next_n, int64_t j, int64_t d) {
  const float* at = j < end ? rows + j * d : j - end < next_n ? next + (j - end) * d : nullptr;
  if (at)
    for (int64_t o = 0; o < d; o += 16) _mm_prefetch(reinterpret_cast<const char*>(at + o), _MM_HINT_T0);
}
// A chunk's value rows into four rows' outputs, kVecs vectors from d0: out_r
// += sum_t w_r[t] v_t, the outputs in registers; V lines asked for ahead
// (v non-null), and keys below copies stored to copy_v.
struct SweepValues {
  float* const* out;
  const float* const* w;
  const float* const* v_rows;
  int64_t n, d0;
  const float* v;
  int64_t v_end;
  const float* next_v;
  int64_t next_n, ahead, dv;
  float* copy_v;
  int64_t copies;
};
template <int kVecs>
[[gnu::target("avx512f"), gnu::always_inline]] inline void SweepValuePass(const SweepValues& s) {
  __m512 o[4][kVecs];
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < kVecs; ++c) o[r][c] = _mm512_loadu_ps(s.out[r] + s.d0 + 16 * c);
  for (int64_t t = 0; t < s.n; ++t) {
    if (s.v) AskKey(s.v, s.v_end, s.next_v, s.next_n, s.ahead + t, s.dv);
    const float* vt = s.v_rows[t] + s.d0;
    __m512 x[kVecs];
#pragma GCC unroll 4
    for (int c = 0; c < kVecs; ++c) x[c] = _mm512_loadu_ps(vt + 16 * c);
    if (s.copy_v && t < s.copies)
#pragma GCC unroll 4
      for (int c = 0; c < kVecs; ++c) _mm512_stream_ps(s.copy_v + t * s.dv + s.d0 + 16 * c, x[c]);
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const __m512 wt = _mm512_set1_ps(s.w[r][t]);
#pragma GCC unroll 4
      for (int c = 0; c < kVecs; ++c) o[r][c] = _mm512_fmadd_ps(wt, x[c], o[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < kVecs; ++c) _mm512_storeu_ps(s.out[r] + s.d0 + 16 * c, o[r][c]);
}
[[gnu::target("avx512f")]] void DecodeSweepAvx512(const DecodeSweep& a) {
  const __m512i to_rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const int64_t D = a.D, Dv = a.Dv, past = a.k.past;
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t cached_end = std::min(a.hi, past);
  alignas(64) float wbuf[16][kSweepKeys] = {};  // a chunk's weights, per row (up to 16 rows)
  std::vector<float> pad_rows(size_t(3 * Dv));  // the outputs of padding rows, unused
  float* pad[4] = {pad_rows.data(), pad_rows.data(), pad_rows.data() + Dv, pad_rows.data() + 2 * Dv};
  for (int64_t j0 = a.lo; j0 < a.hi; j0 += kSweepKeys) {
    const int64_t n = std::min(kSweepKeys, a.hi - j0);
    const float* kr[kSweepKeys];
    const float* vr[kSweepKeys];
    for (int64_t t = 0; t < kSweepKeys; ++t) {
      const int64_t j = j0 + std::min(t, n - 1);  // keys past n read key n - 1 again (not used)
      kr[t] = a.k(j), vr[t] = a.v(j);
    }
    const __mmask16 valid = __mmask16((1u << n) - 1);
    const int64_t copies = std::max<int64_t>(0, std::min(n, a.lo + a.copy_n - j0));
    for (int64_t r0 = 0; r0 < a.rows; r0 += 4) {
      const float* q = a.q + r0 * D;
      __m512 t4[4];  // lane 4 * row + key of keys 4g..4g+3
      for (int g = 0; g < 4; ++g) {
        if (r0 == 0 && a.k.cached)
          for (int64_t t = 4 * g; t < 4 * g + 4; ++t) AskKey(a.k.cached, cached_end, a.next_k, a.next_n, j0 + kSweepAhead + t, D);
        const float* k0 = kr[4 * g];
        const float* k1 = kr[4 * g + 1];
        const float* k2 = kr[4 * g + 2];
        const float* k3 = kr[4 * g + 3];
        __m512 acc[16];
        for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
        const int64_t group_copies = r0 == 0 ? std::max<int64_t>(0, copies - 4 * g) : 0;
        for (int64_t d = 0; d < D; d += 16)
          ScoreKeys4At(q, D, d, k0, k1, k2, k3,
                       group_copies > 0 ? a.copy_k + (j0 - a.lo + 4 * g) * D + d : nullptr, group_copies, acc);
        t4[g] = _mm512_permutexvar_ps(to_rows, LaneSums16(acc));
      }
      // A 4x4 transpose of 128-bit lanes: row r's 16 scores in one vector.
      const __m512 lo01 = _mm512_shuffle_f32x4(t4[0], t4[1], 0x44), hi01 = _mm512_shuffle_f32x4(t4[0], t4[1], 0xEE);
      const __m512 lo23 = _mm512_shuffle_f32x4(t4[2], t4[3], 0x44), hi23 = _mm512_shuffle_f32x4(t4[2], t4[3], 0xEE);
      const __m512 z4[4] = {_mm512_shuffle_f32x4(lo01, lo23, 0x88), _mm512_shuffle_f32x4(lo01, lo23, 0xDD),
                            _mm512_shuffle_f32x4(hi01, hi23, 0x88), _mm512_shuffle_f32x4(hi01, hi23, 0xDD)};
      for (int64_t row = r0; row < std::min(a.rows, r0 + 4); ++row) {
        const __m512 z = _mm512_mask_blend_ps(valid, minus_inf, z4[row - r0]);
        // NaN scores do not count for the maximum; one makes l NaN (the row's output NaN).
        const __mmask16 nan = _mm512_cmp_ps_mask(z, z, _CMP_UNORD_Q);
        if (nan) a.l[row] = std::numeric_limits<float>::quiet_NaN();
        const float top = _mm512_reduce_max_ps(_mm512_mask_blend_ps(nan, z, minus_inf));
        float* w = wbuf[row];
        if (top == -std::numeric_limits<float>::infinity()) {
          _mm512_store_ps(w, _mm512_setzero_ps());
          continue;
        }
        a.seen[row] = 1;
        float* out = a.acc + row * Dv;
        if (top > a.m[row]) {
          const float factor = a.m[row] == -std::numeric_limits<float>::infinity()
                                   ? 0.0f
                                   : _mm512_cvtss_f32(ExpNonPositive16(_mm512_set1_ps(a.m[row] - top)));
          a.l[row] *= factor;
          const __m512 f = _mm512_set1_ps(factor);
          for (int64_t d = 0; d < Dv; d += 16) _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_loadu_ps(out + d), f));
          a.m[row] = top;
        }
        const __m512 e = _mm512_maskz_mov_ps(valid, ExpNonPositive16(_mm512_sub_ps(z, _mm512_set1_ps(a.m[row]))));
        a.l[row] += _mm512_reduce_add_ps(e);
        _mm512_store_ps(w, e);
      }
      // The value rows: four rows' outputs, up to four vectors each, in registers over the chunk.
      const int64_t nr = std::min<int64_t>(4, a.rows - r0);
      float* outs[4];
      for (int r = 0; r < 4; ++r) outs[r] = r < nr ? a.acc + (r0 + r) * Dv : pad[r];
      const float* w4[4] = {wbuf[r0], wbuf[std::min<int64_t>(r0 + 1, 15)], wbuf[std::min<int64_t>(r0 + 2, 15)],
                            wbuf[std::min<int64_t>(r0 + 3, 15)]};
      const bool first = r0 == 0;
      for (int64_t d0 = 0; d0 < Dv; d0 += 64) {
        float* copy_v = first && a.copy_v ? a.copy_v + (j0 - a.lo) * Dv : nullptr;  // (no arithmetic on null)
        const SweepValues sv{outs, w4, vr, n, d0, first && d0 == 0 ? a.v.cached : nullptr, cached_end, a.next_v,
                             a.next_n, j0 + kSweepAhead, Dv, copy_v, copies};
        switch (std::min<int64_t>(4, (Dv - d0) / 16)) {
          case 1: SweepValuePass<1>(sv); break;
          case 2: SweepValuePass<2>(sv); break;
          case 3: SweepValuePass<3>(sv); break;
          default: SweepValuePass<4>(sv); break;
        }
      }
    }
  }
}

// The lane sums of eight vectors v[0..7] as one vector (lane j: v[j]'s sum):
// LaneSums16 on AVX2's eight lanes.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 LaneSums8(const __m256* v) {
  __m256 p[4];
  for (int i = 0; i < 4; ++i)  // per 128-bit half: v2i, v2i+1 halves interleaved
    p[i] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  // Per half: v4i..v4i+3, each summed over the half.
  const __m256 q0 = _mm256_add_ps(_mm256_shuffle_ps(p[0], p[1], 0x44), _mm256_shuffle_ps(p[0], p[1], 0xEE));
  const __m256 q1 = _mm256_add_ps(_mm256_shuffle_ps(p[2], p[3], 0x44), _mm256_shuffle_ps(p[2], p[3], 0xEE));
  return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20), _mm256_permute2f128_ps(q0, q1, 0x31));
}
// The largest and the sum of eight lanes (no NaN among them for the largest).
[[gnu::target("avx2,fma"), gnu::always_inline]] inline float MaxOf8(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}
[[gnu::target("avx2,fma"), gnu::always_inline]] inline float SumOf8(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}
// ExpNonPositiveLanes, eight lanes.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline __m256 ExpNonPositive8(__m256 x) {
  using V = float_vector::V<32>;
  V::F v = V::F(x);
  ExpNonPositiveLanes<V::F, V::I>(v);
  return __m256(v);
}
// Two keys' rows at d (8 floats each): their products with four query rows
// (q, rows of D) added to acc[2 * row + key] (so that LaneSums8 gives a row's
// two scores side by side), and the first `copies` of them (up to 2)
// streamed to out, rows D apart.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void ScoreKeys2At(const float* q, int64_t D, int64_t d,
                                                                       const float* k0, const float* k1, float* out,
                                                                       int64_t copies, __m256* acc) {
  const __m256 x0 = _mm256_loadu_ps(k0 + d), x1 = _mm256_loadu_ps(k1 + d);
  if (copies > 0) {
    _mm256_stream_ps(out, x0);
    if (copies > 1) _mm256_stream_ps(out + D, x1);
  }
  for (int r = 0; r < 4; ++r) {
    const __m256 qv = _mm256_loadu_ps(q + r * D + d);
    acc[2 * r] = _mm256_fmadd_ps(qv, x0, acc[2 * r]);
    acc[2 * r + 1] = _mm256_fmadd_ps(qv, x1, acc[2 * r + 1]);
  }
}
// SweepValuePass on AVX2: four rows' outputs of kVecs vectors of 8 from d0
// (4 x 3 accumulators, the row's weight and 3 V vectors fill the 16 ymm:
// ~6% faster than 4 x 2 with the cache in L2, Zen 3, D 64). A pass given
// copy_v (the first) streams whole V rows to it: a pass's 96 bytes of each
// of 16 rows left lines half written, flushed from the write-combining
// buffers in pieces (Zen 3, QDQ int4 decode step with a separate present:
// attention 0.156 -> 0.108 ms a layer at 1 thread).
template <int kVecs>
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void SweepValuePassAvx2(const SweepValues& s) {
  __m256 o[4][kVecs];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < kVecs; ++c) o[r][c] = _mm256_loadu_ps(s.out[r] + s.d0 + 8 * c);
  for (int64_t t = 0; t < s.n; ++t) {
    if (s.v) AskKey(s.v, s.v_end, s.next_v, s.next_n, s.ahead + t, s.dv);
    const float* vt = s.v_rows[t] + s.d0;
    __m256 x[kVecs];
    for (int c = 0; c < kVecs; ++c) x[c] = _mm256_loadu_ps(vt + 8 * c);
    if (s.copy_v && t < s.copies)
      for (int64_t d = 0; d < s.dv; d += 8)
        _mm256_stream_ps(s.copy_v + t * s.dv + d, _mm256_loadu_ps(s.v_rows[t] + d));
    for (int r = 0; r < 4; ++r) {
      const __m256 wt = _mm256_broadcast_ss(s.w[r] + t);
      for (int c = 0; c < kVecs; ++c) o[r][c] = _mm256_fmadd_ps(wt, x[c], o[r][c]);
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < kVecs; ++c) _mm256_storeu_ps(s.out[r] + s.d0 + 8 * c, o[r][c]);
}
// DecodeSweepAvx512 on AVX2 (D and Dv multiples of 8, present rows 32-byte
// aligned): the same chunks of kSweepKeys, state and prefetch, with keys
// scored two at a time against four rows (16 ymm registers hold 8
// accumulators, not AVX-512's 16) and a row's 16 scores in two vectors.
[[gnu::target("avx2,fma")]] void DecodeSweepAvx2(const DecodeSweep& a) {
  const int64_t D = a.D, Dv = a.Dv, past = a.k.past;
  const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int64_t cached_end = std::min(a.hi, past);
  alignas(32) float wbuf[16][kSweepKeys] = {};  // a chunk's weights, per row (up to 16 rows)
  std::vector<float> pad_rows(size_t(3 * Dv));  // the outputs of padding rows, unused
  float* pad[4] = {pad_rows.data(), pad_rows.data(), pad_rows.data() + Dv, pad_rows.data() + 2 * Dv};
  for (int64_t j0 = a.lo; j0 < a.hi; j0 += kSweepKeys) {
    const int64_t n = std::min(kSweepKeys, a.hi - j0);
    const float* kr[kSweepKeys];
    const float* vr[kSweepKeys];
    for (int64_t t = 0; t < kSweepKeys; ++t) {
      const int64_t j = j0 + std::min(t, n - 1);  // keys past n read key n - 1 again (not used)
      kr[t] = a.k(j), vr[t] = a.v(j);
    }
    const __m256i count = _mm256_set1_epi32(int(n));
    const __m256 valid[2] = {_mm256_castsi256_ps(_mm256_cmpgt_epi32(count, lane)),
                             _mm256_castsi256_ps(_mm256_cmpgt_epi32(count, _mm256_add_epi32(lane, _mm256_set1_epi32(8))))};
    const int64_t copies = std::max<int64_t>(0, std::min(n, a.lo + a.copy_n - j0));
    for (int64_t r0 = 0; r0 < a.rows; r0 += 4) {
      const float* q = a.q + r0 * D;
      __m256 t2[8];  // keys 2g, 2g+1: lane 2 * row + key
      for (int g = 0; g < 8; ++g) {
        if (r0 == 0 && a.k.cached)
          for (int64_t t = 2 * g; t < 2 * g + 2; ++t)
            AskKey(a.k.cached, cached_end, a.next_k, a.next_n, j0 + kSweepAhead + t, D);
        __m256 acc[8];
        for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
        const int64_t group_copies = r0 == 0 ? std::max<int64_t>(0, copies - 2 * g) : 0;
        for (int64_t d = 0; d < D; d += 8)
          ScoreKeys2At(q, D, d, kr[2 * g], kr[2 * g + 1],
                       group_copies > 0 ? a.copy_k + (j0 - a.lo + 2 * g) * D + d : nullptr, group_copies, acc);
        t2[g] = LaneSums8(acc);
      }
      // Row r's scores of keys 8h..8h+7: the 64-bit pairs 2r of groups 4h..4h+3 (a 4x4 transpose of pairs).
      __m256 z4[4][2];
      for (int h = 0; h < 2; ++h) {
        const __m256d g0 = _mm256_castps_pd(t2[4 * h]), g1 = _mm256_castps_pd(t2[4 * h + 1]);
        const __m256d g2 = _mm256_castps_pd(t2[4 * h + 2]), g3 = _mm256_castps_pd(t2[4 * h + 3]);
        const __m256d lo01 = _mm256_unpacklo_pd(g0, g1), hi01 = _mm256_unpackhi_pd(g0, g1);
        const __m256d lo23 = _mm256_unpacklo_pd(g2, g3), hi23 = _mm256_unpackhi_pd(g2, g3);
        z4[0][h] = _mm256_castpd_ps(_mm256_permute2f128_pd(lo01, lo23, 0x20));
        z4[1][h] = _mm256_castpd_ps(_mm256_permute2f128_pd(hi01, hi23, 0x20));
        z4[2][h] = _mm256_castpd_ps(_mm256_permute2f128_pd(lo01, lo23, 0x31));
        z4[3][h] = _mm256_castpd_ps(_mm256_permute2f128_pd(hi01, hi23, 0x31));
      }
      for (int64_t row = r0; row < std::min(a.rows, r0 + 4); ++row) {
        __m256 z[2], e[2];
        for (int h = 0; h < 2; ++h) z[h] = _mm256_blendv_ps(minus_inf, z4[row - r0][h], valid[h]);
        // NaN scores do not count for the maximum; one makes l NaN (the row's output NaN).
        const __m256 nan[2] = {_mm256_cmp_ps(z[0], z[0], _CMP_UNORD_Q), _mm256_cmp_ps(z[1], z[1], _CMP_UNORD_Q)};
        if (_mm256_movemask_ps(_mm256_or_ps(nan[0], nan[1]))) a.l[row] = std::numeric_limits<float>::quiet_NaN();
        const float top = MaxOf8(_mm256_max_ps(_mm256_blendv_ps(z[0], minus_inf, nan[0]),
                                               _mm256_blendv_ps(z[1], minus_inf, nan[1])));
        float* w = wbuf[row];
        if (top == -std::numeric_limits<float>::infinity()) {
          _mm256_store_ps(w, _mm256_setzero_ps());
          _mm256_store_ps(w + 8, _mm256_setzero_ps());
          continue;
        }
        a.seen[row] = 1;
        float* out = a.acc + row * Dv;
        if (top > a.m[row]) {
          const float factor = a.m[row] == -std::numeric_limits<float>::infinity()
                                   ? 0.0f
                                   : _mm256_cvtss_f32(ExpNonPositive8(_mm256_set1_ps(a.m[row] - top)));
          a.l[row] *= factor;
          const __m256 f = _mm256_set1_ps(factor);
          for (int64_t d = 0; d < Dv; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(out + d), f));
          a.m[row] = top;
        }
        const __m256 mr = _mm256_set1_ps(a.m[row]);
        for (int h = 0; h < 2; ++h) e[h] = _mm256_and_ps(valid[h], ExpNonPositive8(_mm256_sub_ps(z[h], mr)));
        a.l[row] += SumOf8(_mm256_add_ps(e[0], e[1]));
        _mm256_store_ps(w, e[0]);
        _mm256_store_ps(w + 8, e[1]);
      }
      // The value rows: four rows' outputs, up to three vectors each, in registers over the chunk.
      const int64_t nr = std::min<int64_t>(4, a.rows - r0);
      float* outs[4];
      for (int r = 0; r < 4; ++r) outs[r] = r < nr ? a.acc + (r0 + r) * Dv : pad[r];
      const float* w4[4] = {wbuf[r0], wbuf[std::min<int64_t>(r0 + 1, 15)], wbuf[std::min<int64_t>(r0 + 2, 15)],
                            wbuf[std::min<int64_t>(r0 + 3, 15)]};
      const bool first = r0 == 0;
      for (int64_t d0 = 0; d0 < Dv;) {
        // The first pass streams whole V rows to the present (SweepValuePassAvx2).
        float* copy_v = first && d0 == 0 && a.copy_v ? a.copy_v + (j0 - a.lo) * Dv : nullptr;
        const SweepValues sv{outs, w4, vr, n, d0, first && d0 == 0 ? a.v.cached : nullptr, cached_end, a.next_v,
                             a.next_n, j0 + kSweepAhead, Dv, copy_v, copies};
        const int64_t vecs = std::min<int64_t>(3, (Dv - d0) / 8);
        if (vecs == 3) SweepValuePassAvx2<3>(sv);
        else if (vecs == 2) SweepValuePassAvx2<2>(sv);
        else SweepValuePassAvx2<1>(sv);
        d0 += 8 * vecs;
      }
    }
  }
}
#pragma GCC diagnostic pop
#endif

// Sixteen lanes folded in halves, lane l with lane l + width for width 8, 4,
// 2, 1: the larger (kMax: hi > lo ? hi : lo, NaN does not count) or the sum
// (lo + hi) of vector halves (a scalar loop over the lanes in memory went
// through the stack, ~15% of a decode layer's softmax and value pass).
template <class A, bool kMax, class V>
[[gnu::always_inline]] inline A FoldLanes(V v) {
  typedef A V8 __attribute__((vector_size(8 * sizeof(A))));
  typedef A V4 __attribute__((vector_size(4 * sizeof(A))));
  typedef A V2 __attribute__((vector_size(2 * sizeof(A))));
  const V8 lo8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const V8 hi8 = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  V8 v8;
  if constexpr (kMax) v8 = hi8 > lo8 ? hi8 : lo8;
  else v8 = lo8 + hi8;
  const V4 lo4 = __builtin_shufflevector(v8, v8, 0, 1, 2, 3), hi4 = __builtin_shufflevector(v8, v8, 4, 5, 6, 7);
  V4 v4;
  if constexpr (kMax) v4 = hi4 > lo4 ? hi4 : lo4;
  else v4 = lo4 + hi4;
  const V2 lo2 = __builtin_shufflevector(v4, v4, 0, 1), hi2 = __builtin_shufflevector(v4, v4, 2, 3);
  V2 v2;
  if constexpr (kMax) v2 = hi2 > lo2 ? hi2 : lo2;
  else v2 = lo2 + hi2;
  if constexpr (kMax) return v2[1] > v2[0] ? v2[1] : v2[0];
  else return v2[0] + v2[1];
}

// The largest of n values; NaN does not count (as std::max(m, z) in order).
// Sixteen lanes, then halves of the lanes folded together.
template <class A>
[[gnu::always_inline]] inline A MaxOf(const A* z, int64_t n) {
  typedef A V __attribute__((vector_size(16 * sizeof(A))));  // split to the target's width by GCC
  constexpr A kLow = -std::numeric_limits<A>::infinity();
  V part = V{} + kLow;
  int64_t t = 0;
  for (; t + 16 <= n; t += 16) {
    V x;
    std::memcpy(&x, z + t, sizeof(V));
    part = x > part ? x : part;
  }
  A m = kLow;
  for (; t < n; ++t) m = z[t] > m ? z[t] : m;
  const A folded = FoldLanes<A, true>(part);
  return folded > m ? folded : m;
}

// Sum of n values in sixteen lanes, then halves of the lanes added
// together: vectorizes without reassociating a single sum (no -ffast-math).
template <class A>
[[gnu::always_inline]] inline A SumOf(const A* z, int64_t n) {
  typedef A V __attribute__((vector_size(16 * sizeof(A))));
  V part = {};
  int64_t t = 0;
  for (; t + 16 <= n; t += 16) {
    V x;
    std::memcpy(&x, z + t, sizeof(V));
    part += x;
  }
  A sum = 0;
  for (; t < n; ++t) sum += z[t];
  return FoldLanes<A, false>(part) + sum;
}

// out[0, kVecs vectors) += sum_t w[t] * v_t[...]: the chunk of out stays in
// registers while every row of the block is added to it, in kSets
// accumulator sets taking alternate rows (summed at the end), so that at
// least eight independent chains keep the FMA units busy: one chain would
// wait out the FMA latency on every row.
template <int kVectorBytes, int kVecs, int kSets, class A>
[[gnu::always_inline]] inline void AddWeightedPass(A* out, const A* w, const A* const* v_rows, int64_t n,
                                                   int64_t d0) {
  constexpr int kLanes = kVectorBytes / int(sizeof(A));
  typedef A Vec __attribute__((vector_size(kVectorBytes)));
  Vec acc[kSets][kVecs];
  std::memcpy(acc[0], out + d0, sizeof(acc[0]));
  for (int s = 1; s < kSets; ++s)
    for (int c = 0; c < kVecs; ++c) acc[s][c] = Vec{};
  auto add = [&](Vec* into, int64_t t) {
    const A wt = w[t];
    const A* v = v_rows[t] + d0;
    for (int c = 0; c < kVecs; ++c) {
      Vec x;
      std::memcpy(&x, v + c * kLanes, sizeof(Vec));
      into[c] += wt * x;
    }
  };
  int64_t t = 0;
  for (; t + kSets <= n; t += kSets)
    for (int s = 0; s < kSets; ++s) add(acc[s], t + s);
  for (; t < n; ++t) add(acc[0], t);
  for (int s = 1; s < kSets; ++s)
    for (int c = 0; c < kVecs; ++c) acc[0][c] += acc[s][c];
  std::memcpy(out + d0, acc[0], sizeof(acc[0]));
}

// out[d] += sum_t w[t] * v_t[d] over n value rows, register-tiled: chunks of
// up to eight vectors of out, each loaded and stored once per block, not
// once per key.
template <int kVectorBytes, class A>
[[gnu::always_inline]] inline void AddWeightedRows(A* out, const A* w, const A* const* v_rows, int64_t n,
                                                   int64_t Dv) {
  constexpr int kLanes = kVectorBytes / int(sizeof(A));
  int64_t d0 = 0;
  for (; d0 + 8 * kLanes <= Dv; d0 += 8 * kLanes) AddWeightedPass<kVectorBytes, 8, 1>(out, w, v_rows, n, d0);
  switch ((Dv - d0) / kLanes) {  // what is left of the head, in whole vectors
    case 1: AddWeightedPass<kVectorBytes, 1, 4>(out, w, v_rows, n, d0); break;
    case 2: AddWeightedPass<kVectorBytes, 2, 4>(out, w, v_rows, n, d0); break;
    case 3: AddWeightedPass<kVectorBytes, 3, 2>(out, w, v_rows, n, d0); break;
    case 4: AddWeightedPass<kVectorBytes, 4, 2>(out, w, v_rows, n, d0); break;
    case 5: AddWeightedPass<kVectorBytes, 5, 1>(out, w, v_rows, n, d0); break;
    case 6: AddWeightedPass<kVectorBytes, 6, 1>(out, w, v_rows, n, d0); break;
    case 7: AddWeightedPass<kVectorBytes, 7, 1>(out, w, v_rows, n, d0); break;
    default: break;
  }
  d0 += (Dv - d0) / kLanes * kLanes;
  for (; d0 < Dv; ++d0) {
    A acc = out[d0];
    for (int64_t t = 0; t < n; ++t) acc += w[t] * v_rows[t][d0];
    out[d0] = acc;
  }
}

// out_r[d] += sum_t w_r[t] * v_t[d] for four rows r over the same value
// rows: each V vector loaded serves the four rows (the one-row pass loads a
// V vector per FMA, which bounds it by the loads where a core loads one
// 512-bit vector a cycle, as on Zen 4). The additions run in the one-row
// pass's order.
template <int kVectorBytes, int kVecs, class A>
[[gnu::always_inline]] inline void AddWeightedPass4(A* const* out, const A* const* w, const A* const* v_rows,
                                                    int64_t n, int64_t d0) {
  static_assert(kVecs >= 1 && kVecs <= 4, "up to four vectors per row");
  constexpr int kLanes = kVectorBytes / int(sizeof(A));
  typedef A Vec __attribute__((vector_size(kVectorBytes)));
  // Named accumulators: GCC keeps these in registers, where an array of
  // vectors would go back to the stack every iteration (as in ScoreTile4).
  Vec a00 = {}, a01 = {}, a02 = {}, a03 = {}, a10 = {}, a11 = {}, a12 = {}, a13 = {};
  Vec a20 = {}, a21 = {}, a22 = {}, a23 = {}, a30 = {}, a31 = {}, a32 = {}, a33 = {};
  Vec* const acc[4][4] = {{&a00, &a01, &a02, &a03}, {&a10, &a11, &a12, &a13},
                          {&a20, &a21, &a22, &a23}, {&a30, &a31, &a32, &a33}};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < kVecs; ++c) std::memcpy(acc[r][c], out[r] + d0 + c * kLanes, sizeof(Vec));
  const A* const w0 = w[0];
  const A* const w1 = w[1];
  const A* const w2 = w[2];
  const A* const w3 = w[3];
  for (int64_t t = 0; t < n; ++t) {
    const A* v = v_rows[t] + d0;
    Vec x0, x1 = {}, x2 = {}, x3 = {};
    std::memcpy(&x0, v, sizeof(Vec));
    if constexpr (kVecs > 1) std::memcpy(&x1, v + kLanes, sizeof(Vec));
    if constexpr (kVecs > 2) std::memcpy(&x2, v + 2 * kLanes, sizeof(Vec));
    if constexpr (kVecs > 3) std::memcpy(&x3, v + 3 * kLanes, sizeof(Vec));
    const A q0 = w0[t], q1 = w1[t], q2 = w2[t], q3 = w3[t];
    a00 += q0 * x0, a10 += q1 * x0, a20 += q2 * x0, a30 += q3 * x0;
    if constexpr (kVecs > 1) a01 += q0 * x1, a11 += q1 * x1, a21 += q2 * x1, a31 += q3 * x1;
    if constexpr (kVecs > 2) a02 += q0 * x2, a12 += q1 * x2, a22 += q2 * x2, a32 += q3 * x2;
    if constexpr (kVecs > 3) a03 += q0 * x3, a13 += q1 * x3, a23 += q2 * x3, a33 += q3 * x3;
  }
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < kVecs; ++c) std::memcpy(out[r] + d0 + c * kLanes, acc[r][c], sizeof(Vec));
}
template <int kVectorBytes, class A>
[[gnu::always_inline]] inline void AddWeightedRows4(A* const* out, const A* const* w, const A* const* v_rows,
                                                    int64_t n, int64_t Dv) {
  constexpr int kLanes = kVectorBytes / int(sizeof(A));
  constexpr int kVecs = kVectorBytes == 64 ? 4 : 2;  // 4 x kVecs accumulators fit the registers
  int64_t d0 = 0;
  for (; d0 + kVecs * kLanes <= Dv; d0 += kVecs * kLanes)
    AddWeightedPass4<kVectorBytes, kVecs>(out, w, v_rows, n, d0);
  for (; d0 + kLanes <= Dv; d0 += kLanes) AddWeightedPass4<kVectorBytes, 1>(out, w, v_rows, n, d0);
  for (; d0 < Dv; ++d0)
    for (int r = 0; r < 4; ++r) {
      A sum = out[r][d0];
      for (int64_t t = 0; t < n; ++t) sum += w[r][t] * v_rows[t][d0];
      out[r][d0] = sum;
    }
}

// e^x for x <= 0 (softmax weights), branch-free so loops over it vectorize:
// x = n ln2 + r, e^r by its degree-6 Taylor polynomial (|r| <= ln2/2, error
// below 2e-7 relative), 2^n from the exponent bits; x < -87 (and -inf) gives
// 0 and NaN gives NaN (x > 0 is outside the domain and gives 1). The
// argument is clamped to [-87, 0] with comparisons that also send NaN to a
// bound, so the float->int conversion below only ever sees n in [-126, 0].
[[gnu::always_inline]] inline float ExpNonPositive(float x) {
  const float clamped = x > -87.0f ? (x < 0.0f ? x : 0.0f) : -87.0f;
  const float n = std::nearbyint(clamped * 1.44269504088896341f);
  const float r = (clamped - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t bits = uint32_t(int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return x < -87.0f ? 0.0f : std::isnan(x) ? x : p * scale;
}
[[gnu::always_inline]] inline double ExpNonPositive(double x) { return std::exp(x); }

// weights[t] = ExpNonPositive(z[t] - shift) for t < n; float rows a vector of
// the target's width at a time (ExpNonPositiveLanes: the scalar loop ran on
// AVX2, GCC did not vectorize it).
template <int kVectorBytes, class A>
[[gnu::always_inline]] inline void ExpShiftedRow(const A* z, A shift, A* weights, int64_t n) {
  int64_t t = 0;
  if constexpr (std::is_same_v<A, float>) {
    using F = typename float_vector::V<kVectorBytes>::F;
    using I = typename float_vector::V<kVectorBytes>::I;
    constexpr int64_t kLanes = float_vector::V<kVectorBytes>::kLanes;
    for (; t + kLanes <= n; t += kLanes) {
      F v = float_vector::Load<F>(z + t) - shift;
      ExpNonPositiveLanes<F, I>(v);
      float_vector::Store(weights + t, v);
    }
  }
  for (; t < n; ++t) weights[t] = ExpNonPositive(z[t] - shift);
}

// A thread's working memory for the fast kernel, kept across its tasks.
template <class A>
struct Workspace {
  std::vector<A> scratch;
  // K blocks transposed for ScoreTile4, kept across the query blocks of one
  // (batch, kv head) that the thread runs one after another, so that each
  // block is transposed once rather than once per query block. The block of
  // keys from j0 (a multiple of kKeyBlock) is at kt[j0 * D] once
  // kt_built[j0 / kKeyBlock].
  int64_t kt_b = -1, kt_g = -1;
  std::vector<A> kt;
  std::vector<char> kt_built;
  // The task copies its past rows into present as it reads them (a decode
  // step's task per (batch, kv head) with a separate present).
  bool copy_past = false;
  // The cached K and V rows of the task this thread runs next, and how
  // many: the decode sweep asks for its first lines as it ends.
  const void* next_k = nullptr;
  const void* next_v = nullptr;
  int64_t next_n = 0;
};
// The most K values (keys x head size) Workspace keeps transposed.
constexpr int64_t kMaxTransposedKeys = int64_t{1} << 22;

// kVectorBytes: the target's vector width (for the score and value tiles).
// Query rows [i0, i1) of the heads of kv head g, over keys [key_lo, key_hi).
// With `partial` null the rows' outputs are written; otherwise the softmax
// state of this key range (SplitState below) goes to `partial`, for a
// split-KV combine.
// kMasked: the problem has a mask (its rows are trimmed and classified).
// kBf16Dot: bfloat16 prefill scores through ScoreTile4Bf16 (AVX-512 BF16).
template <class T, int kVectorBytes, bool kMasked, bool kBf16Dot = false>
[[gnu::always_inline]] inline void FastBlockBody(const AttentionProblem& p, int64_t b, int64_t g, int64_t i0,
                                                 int64_t i1, int64_t key_lo, int64_t key_hi, Acc<T>* partial,
                                                 Workspace<Acc<T>>& ws) {
  using A = Acc<T>;
  static_assert(!kBf16Dot || std::is_same_v<T, BFloat16>, "bfloat16 dot products for bfloat16 only");
  constexpr A kMinusInf = -std::numeric_limits<A>::infinity();
  // float and double K/V rows are read in place; 16-bit rows are widened
  // (and K scaled and rounded, as the function body does) into scratch.
  constexpr bool kDirect = std::is_same_v<T, A>;
  const int64_t D = p.head_size, Dv = p.v_head_size, G = p.group(), n_rows = i1 - i0;
  const int64_t rows = G * n_rows;  // row = (head in group) * n_rows + (i - i0)
  const int64_t rows4 = (rows + 3) / 4 * 4;  // q padded with zero rows for the 4-row score kernels
  // Scores go straight from the dot products to the softmax (16-bit ones
  // rounded to T as a row first) when no softcap or mask sits between: no
  // per-key work.
  const bool plain = p.softcap == 0 && !p.mask;
  const A r = ScaleRoot<T>(p);
  // Direct rows are unscaled, so the query carries both factors of r.
  const A q_factor = kDirect ? r * r : r;
  std::vector<A>& scratch = ws.scratch;
  scratch.resize(size_t(rows4 * D + rows * Dv + 3 * rows + rows4 * kKeyBlock + kKeyBlock +
                        kKeyBlock * (D + (kDirect ? 0 : D + Dv))));
  A* q = scratch.data();
  A* acc = q + rows4 * D;
  A* m = acc + rows * Dv;
  A* l = m + rows;  // NaN (for good) once a visible key scored NaN
  A* seen = l + rows;  // 1 once a key with a finite bias was seen
  A* s = seen + rows;  // the block's raw scores, s[row * kKeyBlock + (j - j0)]
  A* w = s + rows4 * kKeyBlock;  // one row's softmax weights of the block
  A* kt = w + kKeyBlock;  // the K block transposed, kt[d * kKeyBlock + j]
  A* kb = kt + kKeyBlock * D;
  A* vb = kb + kKeyBlock * D;
  std::vector<int64_t> first(static_cast<size_t>(rows)), last(first);
  // Rows whose scores go straight to the softmax: every row when `plain`,
  // else those whose mask is 0 on all their visible keys (float and double
  // without softcap).
  std::vector<char> direct(kMasked ? static_cast<size_t>(rows) : 0);
  int64_t lo = p.total_len, hi = 0;
  std::fill(q + rows * D, q + rows4 * D, A(0));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t h = g * G + row / n_rows, i = i0 + row % n_rows;
    const T* src = static_cast<const T*>(p.q_data) + p.q.At(b, h, i);
    A* q_row = q + row * D;
    if constexpr (kDirect) {
      for (int64_t d = 0; d < D; ++d) q_row[d] = src[d] * q_factor;
    } else {
      WidenRowInline<T, kVectorBytes>(src, q_row, D);
      for (int64_t d = 0; d < D; ++d) q_row[d] *= q_factor;
      RoundRow<T>(q_row, D);
    }
    p.VisibleKeys(b, i, first[size_t(row)], last[size_t(row)]);
    if (kMasked && row >= n_rows && p.mask_stride[1] == 0) {  // the group's first head has the same mask row
      first[size_t(row)] = first[size_t(row % n_rows)];
      last[size_t(row)] = last[size_t(row % n_rows)];
      direct[size_t(row)] = direct[size_t(row % n_rows)];
    } else if (kMasked) {
      const bool zeros = TrimMaskRow(p, b, h, i, first[size_t(row)], last[size_t(row)]);
      direct[size_t(row)] = p.softcap == 0 && zeros;
    }
    if (first[size_t(row)] < last[size_t(row)]) {
      lo = std::min(lo, first[size_t(row)]);
      hi = std::max(hi, last[size_t(row)]);
    }
    // A sink is a key of value 0 at logit sinks[h], seen once: in the
    // combine when the keys are split, else here.
    const bool sink = p.sinks && !partial;
    m[row] = sink ? A(p.sinks[h]) : kMinusInf;
    l[row] = sink ? A(1) : A(0);
    seen[row] = sink ? A(1) : A(0);
    std::fill(acc + row * Dv, acc + (row + 1) * Dv, A(0));
  }
  lo = std::max(lo, key_lo);
  hi = std::min(hi, key_hi);
  // kBf16Dot: the query rows and each K block as bfloat16 pairs.
  const int64_t pairs = (D + 1) / 2;
  std::vector<uint32_t> q_pairs, k_pairs;
  if constexpr (kBf16Dot) {
    if (rows >= kTiledRows) {
      q_pairs.resize(size_t(rows4 * pairs));
      k_pairs.resize(size_t(pairs * kKeyBlock));
      std::vector<const float*> q_rows(static_cast<size_t>(rows));
      for (int64_t row = 0; row < rows; ++row) q_rows[size_t(row)] = q + row * D;
      PackBf16Pairs<true>(q_rows.data(), rows, rows4, D, q_pairs.data(), pairs);
    }
  }
  const HeadRows<T> key_row = KeyRows<T>(p, b, g), value_row = ValueRows<T>(p, b, g);
  const A* k_rows[kKeyBlock];
  const A* v_rows[kKeyBlock];
  const A* v_sel[kKeyBlock];  // the value rows of a row's visible keys, in order
  // A task of a decode step with a separate present copies its past here,
  // as it reads it: the decode tiles write each block (float on AVX-512,
  // whole vectors, present rows 64-byte aligned for the streaming stores),
  // else each block is copied before it is read.
  const bool copy_past = ws.copy_past && !partial;
  const bool tile_copies =
      kVectorBytes == 64 && std::is_same_v<T, float> && !kBf16Dot && D % 16 == 0 && Dv % 16 == 0 &&
      rows < kTiledRows &&
      (reinterpret_cast<uintptr_t>(p.cache.present_key) | reinterpret_cast<uintptr_t>(p.cache.present_value)) % 64 == 0;
  if (copy_past) CopyPastRange<T>(p, b, g, 0, lo);
#if defined(__x86_64__) || defined(__i386__)
  // Streaming stores of the decode sweep on AVX2 (the present rows 32-byte aligned).
  bool sweep_streams = false;
  if constexpr ((kVectorBytes == 64 || kVectorBytes == 32) && std::is_same_v<T, float> && !kBf16Dot) {
    constexpr int64_t kLanes = kVectorBytes / 4;
    // Rows whose mask is 0 over their trimmed visible keys (an attention_mask
    // of ones, as exporters pass it at every step, becomes such zeros) are
    // direct, scored as if unmasked: the sweep takes them as plain rows.
    bool direct_rows = plain;
    if constexpr (kMasked) direct_rows = std::all_of(direct.begin(), direct.end(), [](char d) { return d != 0; });
    bool sweep = direct_rows && D % kLanes == 0 && Dv % kLanes == 0 && rows < kTiledRows;
    for (int64_t row = 1; row < rows && sweep; ++row)
      sweep = first[size_t(row)] == first[0] && last[size_t(row)] == last[0];
    if (sweep && lo < hi) {
      DecodeSweep sw;
      sw.q = q, sw.rows = rows, sw.D = D, sw.Dv = Dv, sw.lo = lo, sw.hi = hi;
      sw.k = key_row, sw.v = value_row;
      sw.acc = acc, sw.m = m, sw.l = l, sw.seen = seen;
      const bool streams =
          kVectorBytes == 64 ? tile_copies
                             : (reinterpret_cast<uintptr_t>(p.cache.present_key) |
                                reinterpret_cast<uintptr_t>(p.cache.present_value)) % kVectorBytes == 0;
      if (copy_past && !streams) {  // present unaligned for the streaming stores: copied first
        CopyPastRange<T>(p, b, g, lo, hi);
      } else if (copy_past && lo < p.cache.PastLen(b)) {
        sweep_streams = true;
        const int64_t r = b * p.kv_heads + g, cap = p.cache.present_capacity;
        sw.copy_k = static_cast<float*>(p.cache.present_key) + (r * cap + lo) * D;
        sw.copy_v = static_cast<float*>(p.cache.present_value) + (r * cap + lo) * Dv;
        sw.copy_n = std::min(hi, p.cache.PastLen(b)) - lo;
      }
      if (ws.next_k) {
        sw.next_k = static_cast<const float*>(ws.next_k), sw.next_v = static_cast<const float*>(ws.next_v);
        sw.next_n = std::min(ws.next_n, kSweepAhead);
      }
      if constexpr (kVectorBytes == 64) DecodeSweepAvx512(sw);
      else DecodeSweepAvx2(sw);
      lo = hi;  // nothing left for the blocks below
    }
  }
#endif
  for (int64_t j0 = lo; j0 < hi; j0 += kKeyBlock) {
    const int64_t j1 = std::min(hi, j0 + kKeyBlock), n_keys = j1 - j0;
    if (copy_past && !tile_copies) CopyPastRange<T>(p, b, g, j0, j1);
    // Each K/V row of the block is loaded once for every query head of the group.
    for (int64_t j = j0; j < j1; ++j) {
      if constexpr (kDirect) {
        k_rows[j - j0] = key_row(j);
        v_rows[j - j0] = value_row(j);
      } else {
        const T* k = key_row(j);
        const T* v = value_row(j);
        A* kd = kb + (j - j0) * D;
        A* vd = vb + (j - j0) * Dv;
        WidenScaleRoundRow<T, kVectorBytes>(k, kd, D, r);
        WidenRowInline<T, kVectorBytes>(v, vd, Dv);
        k_rows[j - j0] = kd;
        v_rows[j - j0] = vd;
      }
    }
    // Whether one of the four rows from r0 has a key in the block.
    const auto sees_block = [&](int64_t r0) {
      for (int64_t row = r0; row < std::min(rows, r0 + 4); ++row)
        if (std::max(j0, first[size_t(row)]) < std::min(j1, last[size_t(row)])) return true;
      return false;
    };
    // Many rows per block (prefill): transpose the K block once, then four
    // rows' scores at a time come from register accumulators with no
    // horizontal sums. Few rows (decode): four rows per pass over each key.
    if (kBf16Dot && rows >= kTiledRows) {
#if defined(__x86_64__) || defined(__i386__)
      if constexpr (kBf16Dot) {
        PackBf16Pairs<false>(k_rows, n_keys, kKeyBlock, D, k_pairs.data(), kKeyBlock);
        for (int64_t r0 = 0; r0 < rows; r0 += 4)
          if (sees_block(r0)) ScoreTile4Bf16(q_pairs.data() + r0 * pairs, k_pairs.data(), pairs, s + r0 * kKeyBlock);
      }
#endif
    } else if (rows >= kTiledRows) {
      const auto transpose_into = [&](A* dst) {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t d = 0; d < D; ++d) dst[d * kKeyBlock + (j - j0)] = k_rows[j - j0][d];
        for (int64_t j = n_keys; j < kKeyBlock; ++j)
          for (int64_t d = 0; d < D; ++d) dst[d * kKeyBlock + j] = 0;
      };
      const A* block_kt = kt;
      if (!partial && j0 % kKeyBlock == 0 && p.total_len <= kMaxTransposedKeys / D) {
        const int64_t blocks = (p.total_len + kKeyBlock - 1) / kKeyBlock;
        if (ws.kt_b != b || ws.kt_g != g) {
          ws.kt_b = b, ws.kt_g = g;
          ws.kt.resize(size_t(blocks * kKeyBlock * D));
          ws.kt_built.assign(size_t(blocks), 0);
        }
        A* cached = ws.kt.data() + j0 * D;
        if (!ws.kt_built[size_t(j0 / kKeyBlock)]) {
          transpose_into(cached);
          ws.kt_built[size_t(j0 / kKeyBlock)] = 1;
        }
        block_kt = cached;
      } else {
        transpose_into(kt);
      }
      for (int64_t r0 = 0; r0 < rows; r0 += 4)
        if (sees_block(r0)) ScoreTile4<kVectorBytes>(q + r0 * D, block_kt, D, s + r0 * kKeyBlock);
    } else {
      // Few rows read each K and V row once, so the step is bound by
      // memory: the first pass asks for the K and V rows two blocks ahead
      // (into L2) as it goes. The hardware's prefetch alone left more than
      // half the bandwidth unused on an AMD EPYC (Zen 4): a decode step of
      // attn_decode_static_f32 took 9.2 ms at 1 thread, 5.1 with this.
      const auto prefetch_next = [&](int64_t j) {
        const auto lines = [](const void* row, int64_t bytes) {
          for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(static_cast<const char*>(row) + at, 0, 2);
        };
        const int64_t ahead = j1 + kKeyBlock + j;
        if (ahead < hi) {
          lines(key_row(ahead), D * int64_t(sizeof(T)));
          lines(value_row(ahead), Dv * int64_t(sizeof(T)));
        }
      };
      bool scored = false;
#if defined(__x86_64__) || defined(__i386__)
      if constexpr (kVectorBytes == 64 && std::is_same_v<T, float>) {
        if (D % 16 == 0) {
          ScorePrefetch pf;
          // 16 keys ahead (4 KB each of K and V at D 64): measured faster than
          // one block ahead (0.049 -> 0.036 ms a layer, 513 keys, 4 heads),
          // and further ahead slower still.
          pf.k = key_row, pf.v = value_row, pf.ahead = j0 + 16, pf.end = hi, pf.dk = D, pf.dv = Dv;
          pf.v_now = v_rows;
          if (copy_past && tile_copies && j0 < p.cache.PastLen(b)) {
            const int64_t r = b * p.kv_heads + g, cap = p.cache.present_capacity;
            pf.copy_k = static_cast<float*>(p.cache.present_key) + (r * cap + j0) * D;
            pf.copy_v = static_cast<float*>(p.cache.present_value) + (r * cap + j0) * Dv;
            pf.copy_n = std::min(j1, p.cache.PastLen(b)) - j0;
          } else if (key_row.cached) {
            pf.k_lin = key_row.cached;
            pf.lin_from = j0 + 24, pf.lin_end = std::min(hi, key_row.past);
          }
          for (int64_t r0 = 0; r0 < rows; r0 += 4)
            ScoreRows4Avx512(q + r0 * D, D, k_rows, n_keys, s + r0 * kKeyBlock, r0 == 0 ? &pf : nullptr);
          scored = true;
        }
      }
#endif
      for (int64_t r0 = 0; r0 < rows && !scored; r0 += 4) {
        if (r0 == 0) ScoreRows4<kVectorBytes>(q, D, k_rows, n_keys, s, prefetch_next);
        else ScoreRows4<kVectorBytes>(q + r0 * D, D, k_rows, n_keys, s + r0 * kKeyBlock, [](int64_t) {});
      }
    }
    // Rows that see every key of the block with their scores as they are
    // keep their weights in place (in s) and add their value rows together
    // after the loop, four at a time.
    int64_t full[kMaxFullRows];
    int64_t n_full = 0;
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t a = std::max(j0, first[size_t(row)]), e = std::min(j1, last[size_t(row)]);
      if (a >= e) continue;
      const A* sr = s + row * kKeyBlock;
      // The scores the softmax sees, z[0, n), and their value rows.
      const A* z;
      const A* const* vz;
      int64_t n = 0;
      A block_max;
      if (kMasked ? direct[size_t(row)] != 0 : plain) {
        if constexpr (!kDirect) RoundRow<T>(s + row * kKeyBlock + (a - j0), e - a);
        z = sr + (a - j0);
        vz = v_rows + (a - j0);
        n = e - a;
        block_max = MaxOf(z, n);
      } else {
        // Compacted to the keys the mask leaves visible. Masked keys (-inf)
        // take no part, even if their score or value is NaN.
        const int64_t h = g * G + row / n_rows, i = i0 + row % n_rows;
        block_max = kMinusInf;
        for (int64_t j = a; j < e; ++j) {
          A zj = sr[j - j0];
          if constexpr (!kDirect) zj = RoundToPrecision<T>(zj);
          if (p.softcap != 0) {
            zj = A(p.softcap) * std::tanh(zj / A(p.softcap));
            if constexpr (!kDirect) zj = RoundToPrecision<T>(zj);
          }
          if (p.mask) {
            const A bias = A(MaskAt(p, b, h, i, j));
            if (bias == kMinusInf) continue;
            zj += bias;
            if constexpr (!kDirect) zj = RoundToPrecision<T>(zj);
          }
          w[n] = zj;
          v_sel[n++] = v_rows[j - j0];
          block_max = zj > block_max ? zj : block_max;  // NaN scores do not count here
        }
        z = w;
        vz = v_sel;
      }
      // A NaN score makes l NaN: through its weight below, or here when no
      // score of the block is above -inf.
      if (block_max == kMinusInf) {
        for (int64_t t = 0; t < n; ++t)
          if (std::isnan(z[t])) l[row] = std::numeric_limits<A>::quiet_NaN();
        continue;
      }
      seen[row] = 1;
      // Online softmax: rescale what was accumulated if the maximum grew.
      A* out = acc + row * Dv;
      if (block_max > m[row]) {
        const A factor = m[row] == kMinusInf ? A(0) : ExpNonPositive(m[row] - block_max);
        l[row] *= factor;
        for (int64_t d = 0; d < Dv; ++d) out[d] *= factor;
        m[row] = block_max;
      }
      const A mr = m[row];
      A* weights = z == sr + (a - j0) && n == n_keys && n_full < kMaxFullRows ? s + row * kKeyBlock : w;
      ExpShiftedRow<kVectorBytes>(z, mr, weights, n);  // NaN for NaN (and inf - inf)
      l[row] += SumOf(weights, n);
      if (weights == w) AddWeightedRows<kVectorBytes>(out, w, vz, n, Dv);
      else full[n_full++] = row;
    }
    int64_t f = 0;
    for (; f + 4 <= n_full; f += 4) {
      A* outs[4];
      const A* weight_rows[4];
      for (int r = 0; r < 4; ++r) outs[r] = acc + full[f + r] * Dv, weight_rows[r] = s + full[f + r] * kKeyBlock;
      AddWeightedRows4<kVectorBytes>(outs, weight_rows, v_rows, n_keys, Dv);
    }
    for (; f < n_full; ++f)
      AddWeightedRows<kVectorBytes>(acc + full[f] * Dv, s + full[f] * kKeyBlock, v_rows, n_keys, Dv);
  }
  if (copy_past) {
    CopyPastRange<T>(p, b, g, std::max(lo, hi), p.cache.PastLen(b));
#if defined(__x86_64__) || defined(__i386__)
    if (tile_copies || sweep_streams) _mm_sfence();  // the streaming stores ordered before the task ends
#endif
  }
  if (partial) {
    SplitState<A> state(partial, rows, Dv);
    std::copy(acc, acc + rows * Dv, state.acc);
    std::copy(m, m + rows, state.m);
    std::copy(l, l + rows, state.l);
    std::copy(seen, seen + rows, state.seen);
    return;
  }
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t h = g * G + row / n_rows, i = i0 + row % n_rows;
    T* y = static_cast<T*>(p.y_data) + p.y.At(b, h, i);
    // A NaN score (l NaN) makes the row NaN; fully masked rows (every bias
    // -inf) are exactly 0 (A17).
    const A inv = std::isnan(l[row]) ? std::numeric_limits<A>::quiet_NaN()
                  : seen[row] != 0 && l[row] > 0      ? A(1) / l[row]
                                                      : A(0);
    for (int64_t d = 0; d < Dv; ++d) acc[row * Dv + d] *= inv;
    NarrowRow(acc + row * Dv, y, Dv);
  }
}

// One entry point per CPU target, each with FastBlockBody inlined.
template <class T>
void FastBlockBaseline(const AttentionProblem& p, int64_t b, int64_t g, int64_t i0, int64_t i1, int64_t key_lo,
                       int64_t key_hi, Acc<T>* partial, Workspace<Acc<T>>& ws) {
  if (p.mask) FastBlockBody<T, 16, true>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
  else FastBlockBody<T, 16, false>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
}
#if defined(__x86_64__) || defined(__i386__)
template <class T>
[[gnu::target("avx2,fma,f16c")]] void FastBlockAvx2(const AttentionProblem& p, int64_t b, int64_t g, int64_t i0,
                                                   int64_t i1, int64_t key_lo, int64_t key_hi, Acc<T>* partial,
                                                   Workspace<Acc<T>>& ws) {
  if (p.mask) FastBlockBody<T, 32, true>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
  else FastBlockBody<T, 32, false>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
}
template <class T>
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]] void FastBlockAvx512(
    const AttentionProblem& p, int64_t b, int64_t g, int64_t i0, int64_t i1, int64_t key_lo, int64_t key_hi,
    Acc<T>* partial, Workspace<Acc<T>>& ws) {
  if (p.mask) FastBlockBody<T, 64, true>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
  else FastBlockBody<T, 64, false>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
}
template <class T>
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c,avx512bf16")]] void FastBlockAvx512Bf16(
    const AttentionProblem& p, int64_t b, int64_t g, int64_t i0, int64_t i1, int64_t key_lo, int64_t key_hi,
    Acc<T>* partial, Workspace<Acc<T>>& ws) {
  if (p.mask) FastBlockBody<T, 64, true, true>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
  else FastBlockBody<T, 64, false, true>(p, b, g, i0, i1, key_lo, key_hi, partial, ws);
}
#endif

template <class T>
using FastBlockFn = void (*)(const AttentionProblem&, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, Acc<T>*,
                             Workspace<Acc<T>>&);

// The fast kernel's builds, best first: the AVX-512 BF16 one exists for
// T = BFloat16 only (other types' first row is the AVX-512 build again).
template <class T>
FastBlockFn<T> FastBlockBest() {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_same_v<T, BFloat16>) return &FastBlockAvx512Bf16<T>;
  return &FastBlockAvx512<T>;
#else
  return &FastBlockBaseline<T>;
#endif
}
template <class T>
const CpuDispatchTable<FastBlockFn<T>>& FastBlockTable() {
  static const CpuDispatchTable<FastBlockFn<T>> table{
#if defined(__x86_64__) || defined(__i386__)
      {std::is_same_v<T, BFloat16> ? CpuTarget::kAvx512Bf16 : CpuTarget::kAvx512, FastBlockBest<T>()},
      {CpuTarget::kAvx512, &FastBlockAvx512<T>},
      {CpuTarget::kAvx2, &FastBlockAvx2<T>},
#endif
      {CpuTarget::kBaseline, &FastBlockBaseline<T>},
  };
  return table;
}
// The entry point for the active CPU features.
template <class T>
FastBlockFn<T> SelectFastBlock() {
  return FastBlockTable<T>().Active();
}

// Combines the split states of query rows [i0, i1) of kv head g's heads
// and writes their outputs, as FastBlockBody does for one range.
template <class T>
void CombineSplits(const AttentionProblem& p, int64_t b, int64_t g, int64_t i0, int64_t i1, const Acc<T>* states,
                   int64_t splits) {
  using A = Acc<T>;
  const int64_t Dv = p.v_head_size, G = p.group(), n_rows = i1 - i0, rows = G * n_rows;
  const int64_t size = SplitState<A>::Size(rows, Dv);
  std::vector<A> out(static_cast<size_t>(Dv));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t h = g * G + row / n_rows, i = i0 + row % n_rows;
    A top = p.sinks ? A(p.sinks[h]) : -std::numeric_limits<A>::infinity();
    bool nan = false, seen = p.sinks != nullptr;
    for (int64_t k = 0; k < splits; ++k) {
      SplitState<A> st(const_cast<A*>(states) + k * size, rows, Dv);
      nan = nan || std::isnan(st.l[row]);
      if (st.seen[row] != 0) {
        seen = true;
        top = std::max(top, st.m[row]);
      }
    }
    std::fill(out.begin(), out.end(), A(0));
    A sum = p.sinks && top != -std::numeric_limits<A>::infinity() ? std::exp(A(p.sinks[h]) - top) : A(0);
    for (int64_t k = 0; k < splits && seen; ++k) {
      SplitState<A> st(const_cast<A*>(states) + k * size, rows, Dv);
      if (st.seen[row] == 0) continue;
      const A factor = std::exp(st.m[row] - top);
      sum += factor * st.l[row];
      for (int64_t d = 0; d < Dv; ++d) out[size_t(d)] += factor * st.acc[row * Dv + d];
    }
    T* y = static_cast<T*>(p.y_data) + p.y.At(b, h, i);
    const A inv = nan ? std::numeric_limits<A>::quiet_NaN() : seen && sum > 0 ? A(1) / sum : A(0);
    for (int64_t d = 0; d < Dv; ++d) y[d] = Narrow<T>(out[size_t(d)] * inv);
  }
}

}  // namespace

int64_t AttentionWorkspaceBytes(const AttentionProblem& p, int threads, bool fast) {
  if (!fast) return CheckedMul(p.total_len, 5 * int64_t(sizeof(double))).value_or(-1);  // qk, logits, z, prob, hidden
  if (p.kv_heads <= 0 || p.q_len <= 0) return 0;
  const int64_t a = p.dtype == DType::kDouble ? 8 : 4;  // sizeof(Acc<T>)
  const int64_t D = p.head_size, Dv = p.v_head_size;
  const int64_t rows = p.group() * std::min(p.q_len, kQueryBlock), rows4 = (rows + 3) / 4 * 4;
  const int64_t q_blocks = (p.q_len + kQueryBlock - 1) / kQueryBlock;
  std::optional<int64_t> tasks = CheckedMul(p.batch, p.kv_heads);
  if (tasks) tasks = CheckedMul(*tasks, q_blocks);
  if (!tasks) return -1;
  int64_t splits = 1;  // as AttentionFast picks them
  if (*tasks < threads && p.total_len >= 2 * kSplitKeys)
    splits = std::min<int64_t>((threads + *tasks - 1) / *tasks, p.total_len / kSplitKeys);
  // Per thread (FastBlockBody): scratch, the transposed K cache, the row
  // bounds and flags, bfloat16 pairs (rows, D and Dv are small: no overflow).
  int64_t per_thread = a * (rows4 * D + rows * Dv + 3 * rows + rows4 * kKeyBlock + kKeyBlock + kKeyBlock * (2 * D + Dv)) +
                       rows * (2 * 8 + 1 + 8) + 4 * ((rows4 + kKeyBlock) * ((D + 1) / 2));
  if (splits <= 1 && D > 0 && p.total_len <= kMaxTransposedKeys / D)
    per_thread += a * ((p.total_len + kKeyBlock - 1) / kKeyBlock * kKeyBlock * D) + p.total_len / kKeyBlock + 1;
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, *tasks * splits));
  std::optional<int64_t> bytes = CheckedMul(per_thread, workers);
  if (splits > 1) {  // the split states
    std::optional<int64_t> states = CheckedMul(*tasks * splits, rows * (Dv + 3) * a);
    if (bytes && states) bytes = CheckedAdd(*bytes, *states);
    else bytes = std::nullopt;
  }
  return bytes.value_or(-1);
}

CpuTarget AttentionFastTarget(DType dtype) {
  CpuTarget target = CpuTarget::kBaseline;
  VisitAttentionType(dtype, [&](auto tag) {
    target = FastBlockTable<typename decltype(tag)::type>().ActiveBuild().target;
  });
  return target;
}

void AttentionFast(const AttentionProblem& p, int threads) {
  // The pool's size rule over the two products (a multiply-add a quarter
  // unit, vectorized): a short problem wakes no thread.
  threads = ThreadsForWork(threads, double(p.batch) * double(p.q_heads) * double(p.q_len) * double(p.total_len) *
                                        double(p.head_size + p.v_head_size) / 4);
  VisitAttentionType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const FastBlockFn<T> fast_block = SelectFastBlock<T>();
    const int64_t q_blocks = (p.q_len + kQueryBlock - 1) / kQueryBlock;
    const int64_t tasks = p.batch * p.kv_heads * q_blocks;
    // Tasks run a head's query blocks latest first: under a causal mask
    // the costliest go first, so the last ranges to finish are short.
    auto task_of = [&](int64_t t, int64_t& b, int64_t& g, int64_t& i0, int64_t& i1) {
      const int64_t qb = q_blocks - 1 - t % q_blocks;
      g = (t / q_blocks) % p.kv_heads, b = t / (q_blocks * p.kv_heads);
      i0 = qb * kQueryBlock, i1 = std::min(p.q_len, i0 + kQueryBlock);
    };
    // Fewer tasks than threads and many keys (a decode step of one sequence
    // with few kv heads): split the keys, whole key blocks per range.
    int64_t splits = 1;
    if (tasks < threads && p.total_len >= 2 * kSplitKeys)
      splits = std::min<int64_t>((threads + tasks - 1) / tasks, p.total_len / kSplitKeys);
    // One task per (batch, kv head) (a decode step): each task copies its
    // present rows first, which also brings its K and V into this core's
    // cache for the pass that follows. Otherwise (or with no Y: no tasks
    // run) the copy comes first, whole.
    const bool present_per_task = splits <= 1 && q_blocks == 1 && p.y_data;
    if (!present_per_task) WritePresent(p, threads);
    if (!p.y_data) return;
    if (splits <= 1) {
      // A thread keeps the K blocks it transposed while its tasks stay on
      // one (batch, kv head) (Workspace), so it takes a head's query blocks
      // in runs: whole heads when there are enough to go round, else
      // shorter runs, at least two per thread.
      const int64_t heads = p.batch * p.kv_heads;
      const int64_t runs_per_head = heads >= 2 * threads ? 1 : (2 * threads + heads - 1) / heads;
      const int64_t grain = std::max<int64_t>(1, q_blocks / runs_per_head);
      ParallelFor(threads, tasks, grain, [&](int64_t t0, int64_t t1) {
        Workspace<A> ws;
        for (int64_t t = t0; t < t1; ++t) {
          int64_t b, g, i0, i1;
          task_of(t, b, g, i0, i1);
          ws.copy_past = present_per_task && !p.cache.Shared() && p.cache.present_key && p.cache.present_value;
          ws.next_k = ws.next_v = nullptr;
          if (t + 1 < t1) {
            int64_t nb, ng, ni0, ni1;
            task_of(t + 1, nb, ng, ni0, ni1);
            const HeadRows<T> nk = KeyRows<T>(p, nb, ng), nv = ValueRows<T>(p, nb, ng);
            ws.next_k = nk.cached, ws.next_v = nv.cached, ws.next_n = nk.past;
          }
          if (present_per_task) CopyPresentRows<T>(p, t, t + 1, !ws.copy_past);  // t = b * kv_heads + g
          fast_block(p, b, g, i0, i1, 0, p.total_len, nullptr, ws);
        }
      });
      return;
    }
    const int64_t range = (p.total_len + splits - 1) / splits;
    const int64_t span = (range + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
    const int64_t state_size = SplitState<A>::Size(p.group() * std::min(p.q_len, kQueryBlock), p.v_head_size);
    std::vector<A> states(static_cast<size_t>(tasks * splits * state_size));
    ParallelFor(threads, tasks * splits, 1, [&](int64_t w0, int64_t w1) {
      Workspace<A> ws;
      for (int64_t w = w0; w < w1; ++w) {
        int64_t b, g, i0, i1;
        task_of(w / splits, b, g, i0, i1);
        const int64_t lo = (w % splits) * span;
        fast_block(p, b, g, i0, i1, lo, std::min(p.total_len, lo + span), states.data() + w * state_size, ws);
      }
    });
    for (int64_t t = 0; t < tasks; ++t) {
      int64_t b, g, i0, i1;
      task_of(t, b, g, i0, i1);
      CombineSplits<T>(p, b, g, i0, i1, states.data() + t * splits * state_size, splits);
    }
  });
}

}  // namespace onnx_mini
