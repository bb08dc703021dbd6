// Per-element conversions between every arithmetic element type and double
// or int64, following the ONNX Cast rules. Cast's kernel instantiates these
// per type pair; tools and tests use the dtype-dispatched accessors below.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/tensor.h"

namespace onnx_mini {

struct CastOptions {
  bool saturate = true;
  E8M0Rounding e8m0 = E8M0Rounding::kUp;
};

inline bool IsCastable(DType d) {
  const DTypeKind kind = Info(d).kind;
  return IsValidDType(int32_t(d)) && kind != DTypeKind::kString && kind != DTypeKind::kComplex;
}
inline bool IsIntegerLike(DType d) {
  const DTypeKind kind = Info(d).kind;
  return kind == DTypeKind::kSigned || kind == DTypeKind::kUnsigned || kind == DTypeKind::kBool;
}

// Element access as double or as a 64-bit integer, for every castable type.
template <class T>
double LoadDouble(const T* data, DType dtype, int64_t i) {
  if constexpr (kIsPacked<T>) {
    const int32_t code = GetPacked(dtype, reinterpret_cast<const uint8_t*>(data), i);
    return dtype == DType::kFloat4E2M1 ? Float4E2M1ToFloat(uint8_t(code)) : double(code);
  } else if constexpr (kIsMiniFloat<T>) {
    return ToFloat(data[i]);
  } else {
    return double(data[i]);
  }
}
template <class T>
int64_t LoadInt(const T* data, DType dtype, int64_t i) {
  if constexpr (kIsPacked<T>) return GetPacked(dtype, reinterpret_cast<const uint8_t*>(data), i);
  else return int64_t(data[i]);
}

// Float to integer: NaN and out-of-range values have no defined result in
// ONNX; this clamps to int64 and then wraps to the target width as NumPy does
// on x86 for in-range values, and never invokes undefined behaviour.
inline int64_t FloatToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

template <class T>
void StoreDouble(T* data, DType dtype, int64_t i, double v, const CastOptions& o) {
  if constexpr (kIsPacked<T>) {
    uint8_t* bytes = reinterpret_cast<uint8_t*>(data);
    // Packed integers keep the low bits, like every other float-to-integer cast.
    const uint32_t code = dtype == DType::kFloat4E2M1 ? ToFloat4E2M1(v) : uint32_t(FloatToInt64(v));
    SetPacked(dtype, bytes, i, code);
  } else if constexpr (std::is_same_v<T, Float16>) {
    data[i] = ToFloat16(v);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    data[i] = ToBFloat16(v);
  } else if constexpr (std::is_same_v<T, Float8E4M3FN>) {
    data[i] = ToFloat8E4M3FN(v, o.saturate);
  } else if constexpr (std::is_same_v<T, Float8E4M3FNUZ>) {
    data[i] = ToFloat8E4M3FNUZ(v, o.saturate);
  } else if constexpr (std::is_same_v<T, Float8E5M2>) {
    data[i] = ToFloat8E5M2(v, o.saturate);
  } else if constexpr (std::is_same_v<T, Float8E5M2FNUZ>) {
    data[i] = ToFloat8E5M2FNUZ(v, o.saturate);
  } else if constexpr (std::is_same_v<T, Float8E8M0>) {
    data[i] = ToFloat8E8M0(float(v), o.e8m0, o.saturate);
  } else if constexpr (std::is_same_v<T, bool>) {
    data[i] = v != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    data[i] = T(v);
  } else {
    data[i] = T(FloatToInt64(v));
  }
}
template <class T>
void StoreInt(T* data, DType dtype, int64_t i, int64_t v) {
  if constexpr (kIsPacked<T>) {
    SetPacked(dtype, reinterpret_cast<uint8_t*>(data), i, uint32_t(v));  // keeps the low bits
  } else if constexpr (std::is_same_v<T, bool>) {
    data[i] = v != 0;
  } else {
    data[i] = T(v);  // wraps modulo 2^bits, as NumPy's astype
  }
}

// Element i of any numeric or bool tensor as a double (complex: real part;
// strings: 0).
double GetDouble(const Tensor& t, int64_t i);
// Sets element i of any numeric or bool tensor from a double, saturating.
void SetDouble(Tensor& t, int64_t i, double v);

}  // namespace onnx_mini
