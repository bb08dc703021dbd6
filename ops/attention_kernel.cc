#include "ops/attention_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ops/common.h"

namespace onnx_mini {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The compute type: float for the 16-bit types and float, double for double.
template <class T> using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Rounds a value to T's precision (the function body's Cast points).
template <class T, class V>
V RoundTo(V x) {
  if constexpr (std::is_same_v<T, Float16>) return V(ToFloat(ToFloat16(float(x))));
  else if constexpr (std::is_same_v<T, BFloat16>) return V(ToFloat(ToBFloat16(float(x))));
  else if constexpr (std::is_same_v<T, float>) return V(float(x));
  else return x;
}
double RoundToDType(DType d, double x) {
  switch (d) {
    case DType::kFloat16: return RoundTo<Float16>(x);
    case DType::kBFloat16: return RoundTo<BFloat16>(x);
    case DType::kFloat: return RoundTo<float>(x);
    default: return x;
  }
}

// Calls f(TypeTag<T>) for the four attention element types.
template <class F>
void VisitAttentionType(DType dtype, F&& f) {
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>)
      f(tag);
  });
}

// r = Cast_T1(sqrt(scale)), applied to Q and K separately (A9).
template <class T>
Acc<T> ScaleRoot(const AttentionProblem& p) {
  return Acc<T>(RoundTo<T>(std::sqrt(p.scale)));
}

template <class T>
const T* KeyRow(const AttentionProblem& p, int64_t b, int64_t g, int64_t j) {
  if (j < p.past_len)
    return static_cast<const T*>(p.past_key) + ((b * p.kv_heads + g) * p.past_len + j) * p.head_size;
  return static_cast<const T*>(p.k_data) + p.k.At(b, g, j - p.past_len);
}
template <class T>
const T* ValueRow(const AttentionProblem& p, int64_t b, int64_t g, int64_t j) {
  if (j < p.past_len)
    return static_cast<const T*>(p.past_value) + ((b * p.kv_heads + g) * p.past_len + j) * p.v_head_size;
  return static_cast<const T*>(p.v_data) + p.v.At(b, g, j - p.past_len);
}

// The mask value at (b, h, i, j) for j < mask_len.
double MaskAt(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  return p.mask[b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] + j * p.mask_stride[3]];
}

// The float bias of (b, h, i, j) before the cast to T1: mask, padding, and
// the causal, window and nonpad rules, all as 0 or -inf except the mask.
double BiasAt(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  int64_t first, last;
  p.VisibleKeys(b, i, first, last);
  if (j < first || j >= last) return kNegInf;
  return p.mask ? MaskAt(p, b, h, i, j) : 0.0;
}

}  // namespace

void AttentionProblem::VisibleKeys(int64_t b, int64_t i, int64_t& first, int64_t& last) const {
  first = 0;
  last = total_len;
  if (mask) last = std::min(last, mask_len);  // short masks are padded with -inf (A12)
  if (nonpad) last = std::min(last, nonpad[b]);
  const int64_t pos = i + Offset(b);
  if (causal) last = std::min(last, pos + 1);
  if (left_window >= 0) first = std::max(first, pos - left_window);
  if (right_window >= 0) last = std::min(last, pos + right_window + 1);
  first = std::max<int64_t>(first, 0);
  last = std::max(last, first);
}

void WritePresent(const AttentionProblem& p, int threads) {
  VisitAttentionType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t rows = p.batch * p.kv_heads;
#pragma omp parallel for num_threads(threads) if (rows * p.total_len * p.head_size > (1 << 16))
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / p.kv_heads, g = r % p.kv_heads;
      for (int64_t j = 0; j < p.total_len; ++j) {
        if (p.present_key)
          std::memcpy(static_cast<T*>(p.present_key) + (r * p.total_len + j) * p.head_size,
                      KeyRow<T>(p, b, g, j), size_t(p.head_size) * sizeof(T));
        if (p.present_value)
          std::memcpy(static_cast<T*>(p.present_value) + (r * p.total_len + j) * p.v_head_size,
                      ValueRow<T>(p, b, g, j), size_t(p.v_head_size) * sizeof(T));
      }
    }
  });
}

// ---- Reference ----

void AttentionReference(const AttentionProblem& p) {
  VisitAttentionType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto R = [](double x) { return RoundTo<T>(x); };
    auto Rsp = [&](double x) { return RoundToDType(p.softmax_dtype, x); };
    const double r = double(ScaleRoot<T>(p));
    const int64_t T_ = p.total_len, D = p.head_size, Dv = p.v_head_size;
    std::vector<double> qk(static_cast<size_t>(T_)), logits(qk), z(qk), prob(qk);
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.q_heads; ++h)
        for (int64_t i = 0; i < p.q_len; ++i) {
          const int64_t g = h / p.group();
          const T* q = static_cast<const T*>(p.q_data) + p.q.At(b, h, i);
          bool all_masked = true;
          for (int64_t j = 0; j < T_; ++j) {
            const T* k = KeyRow<T>(p, b, g, j);
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += R(double(Widen(q[d])) * r) * R(double(Widen(k[d])) * r);
            qk[size_t(j)] = R(dot);
            logits[size_t(j)] = p.softcap != 0 ? R(double(p.softcap) * R(std::tanh(R(qk[size_t(j)] / p.softcap))))
                                               : qk[size_t(j)];
            const double bias = R(BiasAt(p, b, h, i, j));
            if (bias != kNegInf) all_masked = false;
            z[size_t(j)] = R(logits[size_t(j)] + bias);
          }
          // Softmax in the softmax precision, then cast to T1 (A17).
          double max = kNegInf;
          for (int64_t j = 0; j < T_; ++j) max = std::max(max, Rsp(z[size_t(j)]));
          double sum = 0;
          for (int64_t j = 0; j < T_; ++j) {
            prob[size_t(j)] = max == kNegInf ? 0 : Rsp(std::exp(Rsp(Rsp(z[size_t(j)]) - max)));
            sum += prob[size_t(j)];
          }
          sum = Rsp(sum);
          for (int64_t j = 0; j < T_; ++j)
            prob[size_t(j)] = all_masked || sum == 0 ? 0 : R(Rsp(prob[size_t(j)] / sum));
          if (p.y_data) {
            T* y = static_cast<T*>(p.y_data) + p.y.At(b, h, i);
            for (int64_t d = 0; d < Dv; ++d) {
              double acc = 0;
              for (int64_t j = 0; j < T_; ++j) acc += prob[size_t(j)] * double(Widen(ValueRow<T>(p, b, g, j)[d]));
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
constexpr int64_t kQueryBlock = 16;

template <class T>
void FastBlock(const AttentionProblem& p, int64_t b, int64_t g, int64_t i0, int64_t i1,
               std::vector<Acc<T>>& scratch) {
  using A = Acc<T>;
  const int64_t D = p.head_size, Dv = p.v_head_size, G = p.group();
  const int64_t rows = G * (i1 - i0);  // row = (head in group) * block + i
  const A r = ScaleRoot<T>(p);
  const bool round = !std::is_same_v<T, float> && !std::is_same_v<T, double>;
  // Scratch: q[rows][D], acc[rows][Dv], m[rows], l[rows], seen[rows],
  // kb[KB][D], vb[KB][Dv], s[KB].
  scratch.resize(size_t(rows * D + rows * Dv + 3 * rows + kKeyBlock * (D + Dv + 1)));
  A* q = scratch.data();
  A* acc = q + rows * D;
  A* m = acc + rows * Dv;
  A* l = m + rows;
  A* seen = l + rows;  // 1 once a key with a finite bias was seen
  A* kb = seen + rows;
  A* vb = kb + kKeyBlock * D;
  A* s = vb + kKeyBlock * Dv;
  std::vector<int64_t> first(static_cast<size_t>(rows)), last(first);
  int64_t lo = p.total_len, hi = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t h = g * G + row / (i1 - i0), i = i0 + row % (i1 - i0);
    const T* src = static_cast<const T*>(p.q_data) + p.q.At(b, h, i);
    for (int64_t d = 0; d < D; ++d) {
      const A v = A(Widen(src[d])) * r;
      q[row * D + d] = round ? RoundTo<T>(v) : v;
    }
    p.VisibleKeys(b, i, first[size_t(row)], last[size_t(row)]);
    lo = std::min(lo, first[size_t(row)]);
    hi = std::max(hi, last[size_t(row)]);
    m[row] = -std::numeric_limits<A>::infinity();
    l[row] = 0;
    seen[row] = 0;
    std::fill(acc + row * Dv, acc + (row + 1) * Dv, A(0));
  }
  for (int64_t j0 = lo; j0 < hi; j0 += kKeyBlock) {
    const int64_t j1 = std::min(hi, j0 + kKeyBlock);
    // Each K/V row of the block is loaded once for every query head of the group.
    for (int64_t j = j0; j < j1; ++j) {
      const T* k = KeyRow<T>(p, b, g, j);
      const T* v = ValueRow<T>(p, b, g, j);
      A* kd = kb + (j - j0) * D;
      for (int64_t d = 0; d < D; ++d) {
        const A x = A(Widen(k[d])) * r;
        kd[d] = round ? RoundTo<T>(x) : x;
      }
      for (int64_t d = 0; d < Dv; ++d) vb[(j - j0) * Dv + d] = A(Widen(v[d]));
    }
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t a = std::max(j0, first[size_t(row)]), e = std::min(j1, last[size_t(row)]);
      if (a >= e) continue;
      const int64_t h = g * G + row / (i1 - i0), i = i0 + row % (i1 - i0);
      const A* qr = q + row * D;
      A block_max = -std::numeric_limits<A>::infinity();
      for (int64_t j = a; j < e; ++j) {
        const A* kd = kb + (j - j0) * D;
        A dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qr[d] * kd[d];
        if (round) dot = RoundTo<T>(dot);
        if (p.softcap != 0) {
          dot = A(p.softcap) * std::tanh(dot / A(p.softcap));
          if (round) dot = RoundTo<T>(dot);
        }
        A bias = 0;
        if (p.mask) bias = A(MaskAt(p, b, h, i, j));
        if (bias == -std::numeric_limits<A>::infinity()) {
          s[j - j0] = bias;
          continue;
        }
        seen[row] = 1;
        A z = dot + bias;
        if (round) z = RoundTo<T>(z);
        s[j - j0] = z;
        block_max = std::max(block_max, z);
      }
      if (block_max == -std::numeric_limits<A>::infinity()) continue;
      // Online softmax: rescale what was accumulated if the maximum grew.
      A* out = acc + row * Dv;
      if (block_max > m[row]) {
        const A factor = m[row] == -std::numeric_limits<A>::infinity() ? A(0) : std::exp(m[row] - block_max);
        l[row] *= factor;
        for (int64_t d = 0; d < Dv; ++d) out[d] *= factor;
        m[row] = block_max;
      }
      for (int64_t j = a; j < e; ++j) {
        if (s[j - j0] == -std::numeric_limits<A>::infinity()) continue;
        const A w = std::exp(s[j - j0] - m[row]);
        l[row] += w;
        const A* vd = vb + (j - j0) * Dv;
        for (int64_t d = 0; d < Dv; ++d) out[d] += w * vd[d];
      }
    }
  }
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t h = g * G + row / (i1 - i0), i = i0 + row % (i1 - i0);
    T* y = static_cast<T*>(p.y_data) + p.y.At(b, h, i);
    // Fully masked rows (every bias -inf) are exactly 0 (A17).
    const A inv = seen[row] != 0 && l[row] > 0 ? A(1) / l[row] : A(0);
    for (int64_t d = 0; d < Dv; ++d) y[d] = Narrow<T>(acc[row * Dv + d] * inv);
  }
}

}  // namespace

void AttentionFast(const AttentionProblem& p, int threads) {
  if (!p.y_data) return;
  VisitAttentionType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t q_blocks = (p.q_len + kQueryBlock - 1) / kQueryBlock;
    const int64_t tasks = p.batch * p.kv_heads * q_blocks;
#pragma omp parallel num_threads(threads) if (tasks > 1)
    {
      std::vector<Acc<T>> scratch;
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t qb = t % q_blocks, g = (t / q_blocks) % p.kv_heads, b = t / (q_blocks * p.kv_heads);
        const int64_t i0 = qb * kQueryBlock, i1 = std::min(p.q_len, i0 + kQueryBlock);
        FastBlock<T>(p, b, g, i0, i1, scratch);
      }
    }
  });
}

}  // namespace onnx_mini
