#include "kernels/norm/embed_layer_norm.h"

#include <cmath>
#include <vector>

#include "kernels/vec/arith.h"
#include "runtime/thread_pool.h"
#include "runtime/type_set.h"

namespace onnx_mini {
namespace {

template <class F>
void VisitEmbedType(DType dtype, F&& f) {
  VisitTypes<TypeList<float, Float16>>(dtype, std::forward<F>(f));
}

}  // namespace

void EmbedLayerNormReference(const EmbedLayerNormProblem& p) {
  VisitEmbedType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t H = p.hidden;
    std::vector<double> e(static_cast<size_t>(H));
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t s = 0; s < p.seq; ++s) {
        const int64_t t = b * p.seq + s;
        const T* w = static_cast<const T*>(p.word) + p.ids[t] * H;
        const T* pos = static_cast<const T*>(p.position) + p.Position(b, s) * H;
        const T* seg = p.segment_ids ? static_cast<const T*>(p.segment) + p.segment_ids[t] * H : nullptr;
        double mean = 0;
        for (int64_t i = 0; i < H; ++i) {
          double v = double(Widen(w[i])) + double(Widen(pos[i])) + (seg ? double(Widen(seg[i])) : 0.0);
          const T stored = Narrow<T>(typename Arith<T>::type(v));
          if (p.sum) static_cast<T*>(p.sum)[t * H + i] = stored;
          e[size_t(i)] = p.sum ? double(Widen(stored)) : v;
          mean += e[size_t(i)];
        }
        mean /= double(H);
        double var = 0;
        for (int64_t i = 0; i < H; ++i) var += (e[size_t(i)] - mean) * (e[size_t(i)] - mean);
        const double inv = 1.0 / std::sqrt(var / double(H) + double(p.epsilon));
        for (int64_t i = 0; i < H; ++i) {
          const double g = double(Widen(static_cast<const T*>(p.gamma)[i]));
          const double bt = p.beta ? double(Widen(static_cast<const T*>(p.beta)[i])) : 0.0;
          static_cast<T*>(p.y)[t * H + i] = Narrow<T>(typename Arith<T>::type((e[size_t(i)] - mean) * inv * g + bt));
        }
      }
  });
}

void EmbedLayerNorm(const EmbedLayerNormProblem& p, int threads) {
  VisitEmbedType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t H = p.hidden, tokens = p.batch * p.seq;
    const T* gamma = static_cast<const T*>(p.gamma);
    const T* beta = static_cast<const T*>(p.beta);
    T* y = static_cast<T*>(p.y);
    T* sum = static_cast<T*>(p.sum);
    // Small problems stay on the calling thread (the pool's size rule: a
    // token's gathers, sums and normalization some 8 units an element).
    ParallelFor(ThreadsForWork(threads, 8.0 * double(tokens) * double(H)), tokens, 1, [&](int64_t t0, int64_t t1) {
      std::vector<float> e(static_cast<size_t>(H));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / p.seq, s = t % p.seq;
        const T* w = static_cast<const T*>(p.word) + p.ids[t] * H;
        const T* pos = static_cast<const T*>(p.position) + p.Position(b, s) * H;
        const T* seg = p.segment_ids ? static_cast<const T*>(p.segment) + p.segment_ids[t] * H : nullptr;
        double mean = 0;
        for (int64_t i = 0; i < H; ++i) {
          float v = float(Widen(w[i])) + float(Widen(pos[i]));
          if (seg) v += float(Widen(seg[i]));
          if (sum) {
            sum[t * H + i] = Narrow<T>(v);
            v = float(Widen(sum[t * H + i]));  // the sum as stored is what is normalized
          }
          e[size_t(i)] = v;
          mean += v;
        }
        mean /= double(H);
        double var = 0;
        for (int64_t i = 0; i < H; ++i) var += (e[size_t(i)] - mean) * (e[size_t(i)] - mean);
        const double inv = 1.0 / std::sqrt(var / double(H) + double(p.epsilon));
        for (int64_t i = 0; i < H; ++i) {
          const double n = (e[size_t(i)] - mean) * inv * double(Widen(gamma[i])) + (beta ? double(Widen(beta[i])) : 0.0);
          y[t * H + i] = Narrow<T>(float(n));
        }
      }
    });
  });
}

}  // namespace onnx_mini
