#include "runtime/dtype.h"

#include "runtime/cpu.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onnx_mini {
namespace {

constexpr DTypeInfo kTable[] = {
    {DType::kUndefined, "UNDEFINED", 0, DTypeKind::kFloat},
    {DType::kFloat, "FLOAT", 32, DTypeKind::kFloat},
    {DType::kUInt8, "UINT8", 8, DTypeKind::kUnsigned},
    {DType::kInt8, "INT8", 8, DTypeKind::kSigned},
    {DType::kUInt16, "UINT16", 16, DTypeKind::kUnsigned},
    {DType::kInt16, "INT16", 16, DTypeKind::kSigned},
    {DType::kInt32, "INT32", 32, DTypeKind::kSigned},
    {DType::kInt64, "INT64", 64, DTypeKind::kSigned},
    {DType::kString, "STRING", 8 * sizeof(std::string), DTypeKind::kString},
    {DType::kBool, "BOOL", 8, DTypeKind::kBool},
    {DType::kFloat16, "FLOAT16", 16, DTypeKind::kFloat},
    {DType::kDouble, "DOUBLE", 64, DTypeKind::kFloat},
    {DType::kUInt32, "UINT32", 32, DTypeKind::kUnsigned},
    {DType::kUInt64, "UINT64", 64, DTypeKind::kUnsigned},
    {DType::kComplex64, "COMPLEX64", 64, DTypeKind::kComplex},
    {DType::kComplex128, "COMPLEX128", 128, DTypeKind::kComplex},
    {DType::kBFloat16, "BFLOAT16", 16, DTypeKind::kFloat},
    {DType::kFloat8E4M3FN, "FLOAT8E4M3FN", 8, DTypeKind::kFloat},
    {DType::kFloat8E4M3FNUZ, "FLOAT8E4M3FNUZ", 8, DTypeKind::kFloat},
    {DType::kFloat8E5M2, "FLOAT8E5M2", 8, DTypeKind::kFloat},
    {DType::kFloat8E5M2FNUZ, "FLOAT8E5M2FNUZ", 8, DTypeKind::kFloat},
    {DType::kUInt4, "UINT4", 4, DTypeKind::kUnsigned},
    {DType::kInt4, "INT4", 4, DTypeKind::kSigned},
    {DType::kFloat4E2M1, "FLOAT4E2M1", 4, DTypeKind::kFloat},
    {DType::kFloat8E8M0, "FLOAT8E8M0", 8, DTypeKind::kFloat},
    {DType::kUInt2, "UINT2", 2, DTypeKind::kUnsigned},
    {DType::kInt2, "INT2", 2, DTypeKind::kSigned},
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kMaxDTypeCode + 1);

// A small binary floating-point format. All formats here share one encoder
// and one decoder; they differ only in how they spell NaN and infinity.
enum class Specials {
  kIeee,       // all-ones exponent: infinity (mantissa 0) or NaN
  kFiniteNan,  // no infinity; only S.1111.111 is NaN (E4M3FN)
  kUnsignedZeroNan,  // no infinity, no -0; 0x80 is the only NaN (FNUZ)
  kNone,       // no infinity, no NaN (E2M1)
};
struct MiniFloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  Specials specials;
};
constexpr MiniFloatFormat kF16{5, 10, 15, Specials::kIeee};
constexpr MiniFloatFormat kBF16{8, 7, 127, Specials::kIeee};
constexpr MiniFloatFormat kE4M3FN{4, 3, 7, Specials::kFiniteNan};
constexpr MiniFloatFormat kE4M3FNUZ{4, 3, 8, Specials::kUnsignedZeroNan};
constexpr MiniFloatFormat kE5M2{5, 2, 15, Specials::kIeee};
constexpr MiniFloatFormat kE5M2FNUZ{5, 2, 16, Specials::kUnsignedZeroNan};
constexpr MiniFloatFormat kE2M1{2, 1, 1, Specials::kNone};

constexpr uint32_t SignBit(const MiniFloatFormat& f) { return 1u << (f.exp_bits + f.man_bits); }
constexpr uint32_t ExpMax(const MiniFloatFormat& f) { return (1u << f.exp_bits) - 1; }
constexpr uint32_t ManMask(const MiniFloatFormat& f) { return (1u << f.man_bits) - 1; }

// Largest finite magnitude code.
constexpr uint32_t MaxCode(const MiniFloatFormat& f) {
  switch (f.specials) {
    case Specials::kIeee: return ((ExpMax(f) - 1) << f.man_bits) | ManMask(f);
    case Specials::kFiniteNan: return (ExpMax(f) << f.man_bits) | (ManMask(f) - 1);
    default: return (ExpMax(f) << f.man_bits) | ManMask(f);
  }
}
// NaN code (with the sign of the input where the format has signed NaNs).
constexpr uint32_t NanCode(const MiniFloatFormat& f, uint32_t sign) {
  switch (f.specials) {
    case Specials::kIeee: return sign | (ExpMax(f) << f.man_bits) | (1u << (f.man_bits - 1));
    case Specials::kFiniteNan: return sign | (ExpMax(f) << f.man_bits) | ManMask(f);
    case Specials::kUnsignedZeroNan: return SignBit(f);
    case Specials::kNone: return SignBit(f);  // E2M1 has no NaN: ONNX writes -0
  }
  return 0;
}

double Decode(const MiniFloatFormat& f, uint32_t code) {
  const uint32_t sign = code & SignBit(f);
  const uint32_t exp = (code >> f.man_bits) & ExpMax(f);
  const uint32_t man = code & ManMask(f);
  if (f.specials == Specials::kUnsignedZeroNan && code == SignBit(f))
    return std::numeric_limits<double>::quiet_NaN();
  if (f.specials == Specials::kIeee && exp == ExpMax(f))
    return man ? std::numeric_limits<double>::quiet_NaN()
               : (sign ? -HUGE_VAL : HUGE_VAL);
  if (f.specials == Specials::kFiniteNan && exp == ExpMax(f) && man == ManMask(f))
    return std::numeric_limits<double>::quiet_NaN();
  double magnitude =
      exp == 0 ? std::ldexp(double(man), 1 - f.bias - f.man_bits)
               : std::ldexp(double((1u << f.man_bits) + man), int(exp) - f.bias - f.man_bits);
  return sign ? -magnitude : magnitude;
}

uint32_t Encode(const MiniFloatFormat& f, double x, bool saturate) {
  const uint32_t sign = std::signbit(x) ? SignBit(f) : 0;
  const uint32_t max_code = MaxCode(f);
  if (std::isnan(x)) return NanCode(f, sign);
  auto overflow = [&]() -> uint32_t {
    if (saturate || f.specials == Specials::kNone) return sign | max_code;
    if (f.specials == Specials::kIeee) return sign | (ExpMax(f) << f.man_bits);
    return NanCode(f, sign);
  };
  if (std::isinf(x)) return overflow();
  const double a = std::fabs(x);
  if (a == 0) return f.specials == Specials::kUnsignedZeroNan ? 0 : sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int min_exp = 1 - f.bias;  // exponent of the smallest normal binade
  const int binade = std::max(e - 1, min_exp);
  // Round the magnitude to a whole number of units of the last place.
  const int64_t units = static_cast<int64_t>(std::nearbyint(std::ldexp(a, f.man_bits - binade)));
  // Codes are monotonic in magnitude: code = (binade - min_exp) * 2^M + units.
  const int64_t code = (int64_t(binade - min_exp) << f.man_bits) + units;
  if (code > int64_t(max_code)) return overflow();
  if (code == 0 && f.specials == Specials::kUnsignedZeroNan) return 0;
  return sign | uint32_t(code);
}

template <size_t N>
std::vector<float> BuildTable(const MiniFloatFormat& f) {
  std::vector<float> table(N);
  for (size_t i = 0; i < N; ++i) table[i] = float(Decode(f, uint32_t(i)));
  return table;
}

const std::vector<float>& F16Table() {
  static const std::vector<float> table = BuildTable<65536>(kF16);
  return table;
}
template <const MiniFloatFormat* F>
const std::vector<float>& ByteTable() {
  static const std::vector<float> table = BuildTable<256>(*F);
  return table;
}

}  // namespace

bool IsValidDType(int32_t code) { return code >= 1 && code <= kMaxDTypeCode; }

const DTypeInfo& Info(DType dtype) {
  const int code = static_cast<int>(dtype);
  return IsValidDType(code) ? kTable[code] : kTable[0];
}

size_t StorageBytes(DType dtype, int64_t count) {
  const DTypeInfo& info = Info(dtype);
  if (count <= 0) return 0;
  const size_t n = size_t(count);
  if (info.packed()) {
    const size_t per_byte = size_t(info.elements_per_byte());
    return n / per_byte + (n % per_byte != 0);
  }
  const size_t width = size_t(info.bits / 8);
  return n > SIZE_MAX / width ? SIZE_MAX : n * width;  // saturates: callers compare with a limit
}

std::string LowerName(DType dtype) {
  std::string name = Name(dtype);
  for (char& c : name) c = char(std::tolower(c));
  return name;
}

float ToFloat(Float16 v) { return F16Table()[v.bits]; }
float ToFloat(BFloat16 v) {
  uint32_t bits = uint32_t(v.bits) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float ToFloat(Float8E4M3FN v) { return ByteTable<&kE4M3FN>()[v.bits]; }
float ToFloat(Float8E4M3FNUZ v) { return ByteTable<&kE4M3FNUZ>()[v.bits]; }
float ToFloat(Float8E5M2 v) { return ByteTable<&kE5M2>()[v.bits]; }
float ToFloat(Float8E5M2FNUZ v) { return ByteTable<&kE5M2FNUZ>()[v.bits]; }
float ToFloat(Float8E8M0 v) {
  if (v.bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int(v.bits) - 127);
}

namespace {
#if defined(__x86_64__) || defined(__i386__)
// F16C: 8 values per instruction; returns how many were converted (the
// callers finish the tail with the exact scalar conversions). Every target
// from kAvx2 up has F16C.
[[gnu::target("avx,f16c")]] int64_t Float16ToFloatF16c(const Float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  return i;
}
[[gnu::target("avx,f16c")]] int64_t FloatToFloat16F16c(const float* in, Float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return i;
}
// F16C's bit of ActiveCpuFeatureBits(): the 16-bit rows of a kernel convert
// one short row at a time, so the check is one load and a test.
bool F16cActive() {
  static const uint32_t f16c = [] {
    CpuFeatures f;
    f.f16c = true;
    return f.bits();
  }();
  return (ActiveCpuFeatureBits() & f16c) != 0;
}
#endif
}  // namespace

void Float16ToFloat(const Float16* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (F16cActive()) i = Float16ToFloatF16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = ToFloat(in[i]);
}

void FloatToFloat16(const float* in, Float16* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  if (F16cActive()) i = FloatToFloat16F16c(in, out, n);
#endif
  for (; i < n; ++i) out[i] = ToFloat16(in[i]);
}

float Float4E2M1ToFloat(uint8_t nibble) { return float(Decode(kE2M1, nibble & 0xF)); }

Float16 ToFloat16(double v) { return {uint16_t(Encode(kF16, v, false))}; }

Float16 ToFloat16(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  x &= 0x7FFFFFFF;
  if (x >= 0x7F800000) return {uint16_t(sign | (x > 0x7F800000 ? 0x7E00 : 0x7C00))};
  if (x >= 0x477FF000) return {uint16_t(sign | 0x7C00)};  // rounds to >= 65520: infinity
  if (x < 0x38800000) {  // below 2^-14: a subnormal in units of 2^-24 (exact scaling)
    float f;
    std::memcpy(&f, &x, 4);
    return {uint16_t(sign | uint16_t(std::nearbyint(std::ldexp(f, 24))))};
  }
  x += 0xFFF + ((x >> 13) & 1);  // round the 13 dropped bits to nearest even
  x -= uint32_t(127 - 15) << 23;
  return {uint16_t(sign | (x >> 13))};
}

BFloat16 ToBFloat16(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return {uint16_t((x >> 16) | 0x40)};  // quiet NaN
  x += 0x7FFF + ((x >> 16) & 1);
  return {uint16_t(x >> 16)};
}
BFloat16 ToBFloat16(double v) { return {uint16_t(Encode(kBF16, v, false))}; }
Float8E4M3FN ToFloat8E4M3FN(double v, bool s) { return {uint8_t(Encode(kE4M3FN, v, s))}; }
Float8E4M3FNUZ ToFloat8E4M3FNUZ(double v, bool s) { return {uint8_t(Encode(kE4M3FNUZ, v, s))}; }
Float8E5M2 ToFloat8E5M2(double v, bool s) { return {uint8_t(Encode(kE5M2, v, s))}; }
Float8E5M2FNUZ ToFloat8E5M2FNUZ(double v, bool s) { return {uint8_t(Encode(kE5M2FNUZ, v, s))}; }
uint8_t ToFloat4E2M1(double v) { return uint8_t(Encode(kE2M1, v, true)); }

Float8E8M0 ToFloat8E8M0(float v, E8M0Rounding rounding, bool saturate) {
  // E8M0 shares float32's exponent bias, so the code is float32's exponent
  // field, adjusted by the rounding of the mantissa. There is no sign.
  if (std::isnan(v)) return {0xFF};
  if (std::isinf(v)) return {uint8_t(saturate ? 0xFE : 0xFF)};
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  uint32_t code = (bits >> 23) & 0xFF;
  const uint32_t mantissa = bits & 0x7FFFFF;
  if (code == 0) {
    // float32 subnormals and zero: code 0 is 2^-127, i.e. mantissa 0x400000.
    switch (rounding) {
      case E8M0Rounding::kUp: return {uint8_t(mantissa > 0x400000 ? 1 : 0)};
      case E8M0Rounding::kDown: return {0};
      case E8M0Rounding::kNearest: return {uint8_t(mantissa >= 0x600000 ? 1 : 0)};
    }
  }
  bool up = false;
  switch (rounding) {
    case E8M0Rounding::kUp: up = mantissa != 0; break;
    case E8M0Rounding::kDown: up = false; break;
    case E8M0Rounding::kNearest: up = mantissa >= 0x400000; break;
  }
  if (up) ++code;
  if (code >= 0xFF) return {uint8_t(saturate ? 0xFE : 0xFF)};
  return {uint8_t(code)};
}

int32_t GetPacked(DType dtype, const uint8_t* data, int64_t i) {
  const int bits = Info(dtype).bits;
  const int per_byte = 8 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int32_t code = (data[i / per_byte] >> ((i % per_byte) * bits)) & mask;
  if (Info(dtype).kind == DTypeKind::kSigned && (code >> (bits - 1)))
    return code - (1 << bits);
  return code;
}

void SetPacked(DType dtype, uint8_t* data, int64_t i, uint32_t code) {
  const int bits = Info(dtype).bits;
  const int per_byte = 8 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int shift = int(i % per_byte) * bits;
  uint8_t& byte = data[i / per_byte];
  byte = uint8_t((byte & ~(mask << shift)) | ((code & mask) << shift));
}

}  // namespace onnx_mini
