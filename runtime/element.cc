#include "runtime/element.h"

namespace onnx_mini {

double GetDouble(const Tensor& t, int64_t i) {
  return VisitDType(t.dtype(), [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, void> || std::is_same_v<T, std::string>) return 0.0;
    else if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>)
      return double(t.data<T>()[i].real());
    else return LoadDouble(t.data<T>(), t.dtype(), i);
  });
}

void SetDouble(Tensor& t, int64_t i, double v) {
  VisitDType(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, void> || std::is_same_v<T, std::string>) return;
    else if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>)
      t.data<T>()[i] = T(typename T::value_type(v), 0);
    else StoreDouble(t.data<T>(), t.dtype(), i, v, CastOptions{});
  });
}

}  // namespace onnx_mini
