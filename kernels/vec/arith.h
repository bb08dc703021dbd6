// Arithmetic view of element types: the 16-bit floats compute in float.
#pragma once

#include <type_traits>

#include "runtime/dtype.h"

namespace onnx_mini {

// The element types with arithmetic: numbers and the 16-bit floats (not bool).
template <class T> constexpr bool kIsArithmetic =
    (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || std::is_same_v<T, Float16> ||
    std::is_same_v<T, BFloat16>;

// Arithmetic view of element types: 16-bit floats compute in float.
template <class T> struct Arith { using type = T; };
template <> struct Arith<Float16> { using type = float; };
template <> struct Arith<BFloat16> { using type = float; };
template <class T> typename Arith<T>::type Widen(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return ToFloat(v);
  else return v;
}
template <class T> T Narrow(typename Arith<T>::type v) {
  if constexpr (std::is_same_v<T, Float16>) return ToFloat16(v);
  else if constexpr (std::is_same_v<T, BFloat16>) return ToBFloat16(v);
  else return v;
}

}  // namespace onnx_mini
