// Element types: the one table that describes every ONNX element type, the C++
// storage type of each, exact conversions to and from float, and the single
// place that dispatches on a runtime dtype (VisitDType).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnx_mini {

// TensorProto.DataType codes.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};
constexpr int kMaxDTypeCode = 26;

enum class DTypeKind { kFloat, kSigned, kUnsigned, kBool, kString, kComplex };

// One row of the dtype table.
struct DTypeInfo {
  DType dtype;
  const char* name;       // the TensorProto enum name, e.g. "FLOAT16"
  int bits;               // bits per element; 4 and 2 for the packed types
  DTypeKind kind;
  bool packed() const { return bits < 8; }
  int elements_per_byte() const { return bits < 8 ? 8 / bits : 1; }
};

// True for the codes 1..26.
bool IsValidDType(int32_t code);
// The table row of a valid dtype; kUndefined and invalid codes get a row named "UNDEFINED".
const DTypeInfo& Info(DType dtype);
inline const char* Name(DType dtype) { return Info(dtype).name; }
// Bytes needed to store `count` elements (packed types round up to whole
// bytes; 0 for count <= 0; SIZE_MAX when the product overflows).
size_t StorageBytes(DType dtype, int64_t count);
// Lower-case name as used in error messages ("float16").
std::string LowerName(DType dtype);

// ---- Storage types of the non-native element types (bit patterns) ----
struct Float16 { uint16_t bits; };
struct BFloat16 { uint16_t bits; };
struct Float8E4M3FN { uint8_t bits; };
struct Float8E4M3FNUZ { uint8_t bits; };
struct Float8E5M2 { uint8_t bits; };
struct Float8E5M2FNUZ { uint8_t bits; };
struct Float8E8M0 { uint8_t bits; };
// Packed types: one byte holding 2 (4-bit) or 4 (2-bit) elements, element 0 in
// the lowest bits. Kernels that support them work on bytes and nibbles.
struct UInt4x2 { uint8_t bits; };
struct Int4x2 { uint8_t bits; };
struct Float4E2M1x2 { uint8_t bits; };
struct UInt2x4 { uint8_t bits; };
struct Int2x4 { uint8_t bits; };
using Complex64 = std::complex<float>;
using Complex128 = std::complex<double>;

// ---- Exact conversions ----
// Decoding is exact (every value of these formats is a float, except that
// float8e8m0 0x00 = 2^-127 is a float subnormal, still exact).
float ToFloat(Float16 v);
float ToFloat(BFloat16 v);
float ToFloat(Float8E4M3FN v);
float ToFloat(Float8E4M3FNUZ v);
float ToFloat(Float8E5M2 v);
float ToFloat(Float8E5M2FNUZ v);
float ToFloat(Float8E8M0 v);
float Float4E2M1ToFloat(uint8_t nibble);

// Encoding rounds to nearest even. `saturate` follows ONNX Cast: out-of-range
// finite values (and infinities, for the formats with no infinity or E5M2)
// become the largest finite value of the right sign; without it they become
// infinity where the format has one, NaN otherwise.
Float16 ToFloat16(double v);
BFloat16 ToBFloat16(double v);
// The same from float, with bit arithmetic (hot paths round through these).
Float16 ToFloat16(float v);
BFloat16 ToBFloat16(float v);
Float8E4M3FN ToFloat8E4M3FN(double v, bool saturate = true);
Float8E4M3FNUZ ToFloat8E4M3FNUZ(double v, bool saturate = true);
Float8E5M2 ToFloat8E5M2(double v, bool saturate = true);
Float8E5M2FNUZ ToFloat8E5M2FNUZ(double v, bool saturate = true);
// float4e2m1 always saturates to ±6; NaN becomes -0 (the format has no NaN).
uint8_t ToFloat4E2M1(double v);

// float8e8m0 holds only powers of two; ONNX Cast rounds "up" by default.
enum class E8M0Rounding { kUp, kDown, kNearest };
Float8E8M0 ToFloat8E8M0(float v, E8M0Rounding rounding = E8M0Rounding::kUp,
                        bool saturate = true);

// Bulk float16 <-> float conversions (round to nearest even), with the CPU's
// F16C instructions when the active CPU features have them (runtime/cpu.h).
void Float16ToFloat(const Float16* in, float* out, int64_t n);
void FloatToFloat16(const float* in, Float16* out, int64_t n);

// Reading and writing element `i` of a packed tensor (4-bit or 2-bit).
// Signed types are sign-extended.
int32_t GetPacked(DType dtype, const uint8_t* data, int64_t i);
void SetPacked(DType dtype, uint8_t* data, int64_t i, uint32_t code);

// ---- Compile-time mapping and dispatch ----
template <class T> struct TypeTag { using type = T; };

template <class T> struct DTypeOf;
#define ONNX_MINI_DTYPE_OF(T, D) \
  template <> struct DTypeOf<T> { static constexpr DType value = DType::D; }
ONNX_MINI_DTYPE_OF(float, kFloat);
ONNX_MINI_DTYPE_OF(uint8_t, kUInt8);
ONNX_MINI_DTYPE_OF(int8_t, kInt8);
ONNX_MINI_DTYPE_OF(uint16_t, kUInt16);
ONNX_MINI_DTYPE_OF(int16_t, kInt16);
ONNX_MINI_DTYPE_OF(int32_t, kInt32);
ONNX_MINI_DTYPE_OF(int64_t, kInt64);
ONNX_MINI_DTYPE_OF(std::string, kString);
ONNX_MINI_DTYPE_OF(bool, kBool);
ONNX_MINI_DTYPE_OF(Float16, kFloat16);
ONNX_MINI_DTYPE_OF(double, kDouble);
ONNX_MINI_DTYPE_OF(uint32_t, kUInt32);
ONNX_MINI_DTYPE_OF(uint64_t, kUInt64);
ONNX_MINI_DTYPE_OF(Complex64, kComplex64);
ONNX_MINI_DTYPE_OF(Complex128, kComplex128);
ONNX_MINI_DTYPE_OF(BFloat16, kBFloat16);
ONNX_MINI_DTYPE_OF(Float8E4M3FN, kFloat8E4M3FN);
ONNX_MINI_DTYPE_OF(Float8E4M3FNUZ, kFloat8E4M3FNUZ);
ONNX_MINI_DTYPE_OF(Float8E5M2, kFloat8E5M2);
ONNX_MINI_DTYPE_OF(Float8E5M2FNUZ, kFloat8E5M2FNUZ);
ONNX_MINI_DTYPE_OF(UInt4x2, kUInt4);
ONNX_MINI_DTYPE_OF(Int4x2, kInt4);
ONNX_MINI_DTYPE_OF(Float4E2M1x2, kFloat4E2M1);
ONNX_MINI_DTYPE_OF(Float8E8M0, kFloat8E8M0);
ONNX_MINI_DTYPE_OF(UInt2x4, kUInt2);
ONNX_MINI_DTYPE_OF(Int2x4, kInt2);
#undef ONNX_MINI_DTYPE_OF

// Calls f(TypeTag<T>{}) with the storage type T of `dtype`. This is the one
// place where a runtime dtype becomes a C++ type. `dtype` must be valid.
template <class F>
decltype(auto) VisitDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat: return f(TypeTag<float>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kString: return f(TypeTag<std::string>{});
    case DType::kBool: return f(TypeTag<bool>{});
    case DType::kFloat16: return f(TypeTag<Float16>{});
    case DType::kDouble: return f(TypeTag<double>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    case DType::kComplex64: return f(TypeTag<Complex64>{});
    case DType::kComplex128: return f(TypeTag<Complex128>{});
    case DType::kBFloat16: return f(TypeTag<BFloat16>{});
    case DType::kFloat8E4M3FN: return f(TypeTag<Float8E4M3FN>{});
    case DType::kFloat8E4M3FNUZ: return f(TypeTag<Float8E4M3FNUZ>{});
    case DType::kFloat8E5M2: return f(TypeTag<Float8E5M2>{});
    case DType::kFloat8E5M2FNUZ: return f(TypeTag<Float8E5M2FNUZ>{});
    case DType::kUInt4: return f(TypeTag<UInt4x2>{});
    case DType::kInt4: return f(TypeTag<Int4x2>{});
    case DType::kFloat4E2M1: return f(TypeTag<Float4E2M1x2>{});
    case DType::kFloat8E8M0: return f(TypeTag<Float8E8M0>{});
    case DType::kUInt2: return f(TypeTag<UInt2x4>{});
    case DType::kInt2: return f(TypeTag<Int2x4>{});
    case DType::kUndefined: break;
  }
  return f(TypeTag<void>{});
}

// Type traits used by kernels.
template <class T> constexpr bool kIsPacked =
    std::is_same_v<T, UInt4x2> || std::is_same_v<T, Int4x2> ||
    std::is_same_v<T, Float4E2M1x2> || std::is_same_v<T, UInt2x4> ||
    std::is_same_v<T, Int2x4>;
template <class T> constexpr bool kIsMiniFloat =
    std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> ||
    std::is_same_v<T, Float8E4M3FN> || std::is_same_v<T, Float8E4M3FNUZ> ||
    std::is_same_v<T, Float8E5M2> || std::is_same_v<T, Float8E5M2FNUZ> ||
    std::is_same_v<T, Float8E8M0>;

}  // namespace onnx_mini
