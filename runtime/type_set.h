// Sets of element types. A registry row declares its type constraints with
// TypeSets; its kernel dispatches with VisitTypes over the TypeList the set was
// made from, so the declared types and the handled types are one list.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "runtime/dtype.h"

namespace onnx_mini {

// A set of DTypes, as a bit mask over their codes.
class TypeSet {
 public:
  constexpr TypeSet() = default;
  constexpr TypeSet(std::initializer_list<DType> dtypes) {
    for (DType d : dtypes) bits_ |= Bit(d);
  }
  constexpr bool contains(DType d) const { return (bits_ & Bit(d)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr TypeSet operator|(TypeSet other) const { return FromBits(bits_ | other.bits_); }
  constexpr TypeSet operator-(TypeSet other) const { return FromBits(bits_ & ~other.bits_); }
  constexpr bool operator==(TypeSet other) const { return bits_ == other.bits_; }
  // "float, double, int64".
  std::string ToString() const;

 private:
  static constexpr uint32_t Bit(DType d) {
    const int code = int(d);
    return code >= 1 && code <= kMaxDTypeCode ? uint32_t(1) << code : 0;
  }
  static constexpr TypeSet FromBits(uint32_t bits) {
    TypeSet s;
    s.bits_ = bits;
    return s;
  }
  uint32_t bits_ = 0;
};

// A compile-time list of storage types.
template <class... Ts>
struct TypeList {
  template <class T>
  static constexpr bool contains = (std::is_same_v<T, Ts> || ...);
  static constexpr TypeSet set() { return TypeSet{DTypeOf<Ts>::value...}; }
};

template <class A, class B> struct JoinLists;
template <class... A, class... B>
struct JoinLists<TypeList<A...>, TypeList<B...>> { using type = TypeList<A..., B...>; };
// The concatenation of two lists.
template <class A, class B> using Join = typename JoinLists<A, B>::type;

// Calls f(TypeTag<T>{}) when `dtype`'s storage type T is in List; returns
// false, having called nothing, otherwise. Only List's types are instantiated.
template <class List, class F>
bool VisitTypes(DType dtype, F&& f) {
  bool visited = false;
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (List::template contains<T>) {
      f(tag);
      visited = true;
    }
  });
  return visited;
}

// The usual lists.
using FloatTypes = TypeList<float, double, Float16, BFloat16>;
using SignedIntTypes = TypeList<int8_t, int16_t, int32_t, int64_t>;
using UnsignedIntTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = Join<SignedIntTypes, UnsignedIntTypes>;
using IndexTypes = TypeList<int32_t, int64_t>;
// Floats and integers: the types with arithmetic (not bool).
using NumericTypes = Join<FloatTypes, IntTypes>;
using SignedTypes = Join<FloatTypes, SignedIntTypes>;
using Float8Types = TypeList<Float8E4M3FN, Float8E4M3FNUZ, Float8E5M2, Float8E5M2FNUZ>;
// One element per byte or more: every type but the packed 4- and 2-bit ones.
using UnpackedTypes = Join<Join<NumericTypes, TypeList<bool, std::string, Complex64, Complex128>>,
                           Join<Float8Types, TypeList<Float8E8M0>>>;
using PackedTypes = TypeList<UInt4x2, Int4x2, Float4E2M1x2, UInt2x4, Int2x4>;
using AllTypes = Join<UnpackedTypes, PackedTypes>;

}  // namespace onnx_mini
