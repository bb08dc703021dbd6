#include "kernels/attention/rotary.h"

#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/vec/arith.h"
#include "runtime/type_set.h"

namespace onnx_mini {
namespace {

template <class F>
void VisitRotaryType(DType dtype, F&& f) {
  VisitTypes<TypeList<float, double, Float16, BFloat16>>(dtype, std::forward<F>(f));
}

// The two elements of pair i: (2i, 2i + 1) interleaved, else (i, i + half).
inline void PairAt(const RotaryProblem& p, int64_t i, int64_t& i1, int64_t& i2) {
  const int64_t half = p.rotary_dim / 2;
  i1 = p.interleaved ? 2 * i : i;
  i2 = p.interleaved ? 2 * i + 1 : i + half;
}

}  // namespace

void RotaryReference(const RotaryProblem& p) {
  VisitRotaryType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t half = p.rotary_dim / 2;
    std::vector<T> row(static_cast<size_t>(p.head_size));  // y may be x
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t s = 0; s < p.seq; ++s) {
        const int64_t pos = p.Position(b, s);
        const T* c = static_cast<const T*>(p.cos) + pos * p.cache_stride;
        const T* sn = static_cast<const T*>(p.sin) + pos * p.cache_stride;
        for (int64_t h = 0; h < p.heads; ++h) {
          const T* in = static_cast<const T*>(p.x) + p.x_view.At(b, h, s);
          T* out = static_cast<T*>(p.y) + p.y_view.At(b, h, s);
          std::copy(in, in + p.head_size, row.begin());
          for (int64_t i = 0; i < half; ++i) {
            int64_t i1, i2;
            PairAt(p, i, i1, i2);
            const double x1 = double(Widen(row[size_t(i1)])), x2 = double(Widen(row[size_t(i2)]));
            const double cv = double(Widen(c[i])), sv = double(Widen(sn[i]));
            out[i1] = Narrow<T>(typename Arith<T>::type(x1 * cv - x2 * sv));
            out[i2] = Narrow<T>(typename Arith<T>::type(x2 * cv + x1 * sv));
          }
          for (int64_t i = p.rotary_dim; i < p.head_size; ++i) out[i] = row[size_t(i)];
        }
      }
  });
}

void Rotary(const RotaryProblem& p) {
  VisitRotaryType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = typename Arith<T>::type;
    const int64_t half = p.rotary_dim / 2;
    // A token's cos and sin, and a head's pairs split into first and second
    // elements, in A: plain loops over them vectorize.
    std::vector<A> cs(static_cast<size_t>(4 * half));
    A* const cv = cs.data();
    A* const sv = cv + half;
    A* const x1 = sv + half;
    A* const x2 = x1 + half;
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t s = 0; s < p.seq; ++s) {
        const int64_t pos = p.Position(b, s);
        const T* c = static_cast<const T*>(p.cos) + pos * p.cache_stride;
        const T* sn = static_cast<const T*>(p.sin) + pos * p.cache_stride;
        for (int64_t i = 0; i < half; ++i) cv[i] = A(Widen(c[i])), sv[i] = A(Widen(sn[i]));
        for (int64_t h = 0; h < p.heads; ++h) {
          const T* in = static_cast<const T*>(p.x) + p.x_view.At(b, h, s);
          T* out = static_cast<T*>(p.y) + p.y_view.At(b, h, s);
          if (p.interleaved) {
            for (int64_t i = 0; i < half; ++i) x1[i] = A(Widen(in[2 * i])), x2[i] = A(Widen(in[2 * i + 1]));
          } else {
            for (int64_t i = 0; i < half; ++i) x1[i] = A(Widen(in[i])), x2[i] = A(Widen(in[i + half]));
          }
          if (out != in) std::memcpy(out + p.rotary_dim, in + p.rotary_dim, size_t(p.head_size - p.rotary_dim) * sizeof(T));
          if (p.interleaved) {
            for (int64_t i = 0; i < half; ++i) {
              out[2 * i] = Narrow<T>(x1[i] * cv[i] - x2[i] * sv[i]);
              out[2 * i + 1] = Narrow<T>(x2[i] * cv[i] + x1[i] * sv[i]);
            }
          } else {
            for (int64_t i = 0; i < half; ++i) {
              out[i] = Narrow<T>(x1[i] * cv[i] - x2[i] * sv[i]);
              out[i + half] = Narrow<T>(x2[i] * cv[i] + x1[i] * sv[i]);
            }
          }
        }
      }
  });
}

}  // namespace onnx_mini
