#include "kernels/attention/rotate_half.h"

#include <vector>

#include "kernels/vec/arith.h"
#include "runtime/type_set.h"

namespace onnx_mini {
namespace {

template <class F>
void VisitRotateHalfType(DType dtype, F&& f) {
  VisitTypes<TypeList<float, double, Float16, BFloat16>>(dtype, std::forward<F>(f));
}

// Calls f(row, x row offset, cos row offset, sin row offset) for each row of y.
template <class F>
void ForEachRow(const RotateHalfProblem& p, F&& f) {
  int64_t row = 0;
  for (int64_t i = 0; i < p.dims[0]; ++i)
    for (int64_t j = 0; j < p.dims[1]; ++j)
      for (int64_t k = 0; k < p.dims[2]; ++k, ++row)
        f(row, i * p.x_strides[0] + j * p.x_strides[1] + k * p.x_strides[2],
          i * p.cos_strides[0] + j * p.cos_strides[1] + k * p.cos_strides[2],
          i * p.sin_strides[0] + j * p.sin_strides[1] + k * p.sin_strides[2]);
}

}  // namespace

void RotateHalfReference(const RotateHalfProblem& p) {
  VisitRotateHalfType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t h = p.d / 2;
    ForEachRow(p, [&](int64_t row, int64_t xo, int64_t co, int64_t so) {
      const T* x = static_cast<const T*>(p.x) + xo;
      const T* c = static_cast<const T*>(p.cos) + co;
      const T* s = static_cast<const T*>(p.sin) + so;
      T* y = static_cast<T*>(p.y) + row * p.d;
      for (int64_t i = 0; i < p.d; ++i) {
        const double r = p.interleaved ? (i % 2 == 0 ? -double(Widen(x[i + 1])) : double(Widen(x[i - 1])))
                         : i < h       ? -double(Widen(x[i + h]))
                                       : double(Widen(x[i - h]));
        y[i] = Narrow<T>(typename Arith<T>::type(double(Widen(x[i])) * double(Widen(c[i])) +
                                                 r * double(Widen(s[i]))));
      }
    });
  });
}

void RotateHalf(const RotateHalfProblem& p) {
  VisitRotateHalfType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = typename Arith<T>::type;
    const int64_t h = p.d / 2;
    std::vector<A> buf(static_cast<size_t>(3 * p.d));  // a row of x, cos and sin in A
    A* const xa = buf.data();
    A* const ca = xa + p.d;
    A* const sa = ca + p.d;
    ForEachRow(p, [&](int64_t row, int64_t xo, int64_t co, int64_t so) {
      const T* x = static_cast<const T*>(p.x) + xo;
      const T* c = static_cast<const T*>(p.cos) + co;
      const T* s = static_cast<const T*>(p.sin) + so;
      T* y = static_cast<T*>(p.y) + row * p.d;
      for (int64_t i = 0; i < p.d; ++i) xa[i] = A(Widen(x[i])), ca[i] = A(Widen(c[i])), sa[i] = A(Widen(s[i]));
      if (p.interleaved) {
        for (int64_t i = 0; i < p.d; i += 2) {
          y[i] = Narrow<T>(xa[i] * ca[i] - xa[i + 1] * sa[i]);
          y[i + 1] = Narrow<T>(xa[i + 1] * ca[i + 1] + xa[i] * sa[i + 1]);
        }
      } else {
        for (int64_t i = 0; i < h; ++i) y[i] = Narrow<T>(xa[i] * ca[i] - xa[i + h] * sa[i]);
        for (int64_t i = h; i < p.d; ++i) y[i] = Narrow<T>(xa[i] * ca[i] + xa[i - h] * sa[i]);
      }
    });
  });
}

}  // namespace onnx_mini
