#include "kernels/quant/block_format.h"

#include <type_traits>

namespace onnx_mini {
namespace {

// Element e of packed data with `Bits` bits per element (8: one byte).
template <int Bits, bool Signed>
inline int32_t LoadElement(const void* data, int64_t e) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  if constexpr (Bits == 8) {
    return Signed ? int32_t(int8_t(bytes[e])) : int32_t(bytes[e]);
  } else {
    constexpr int kPerByte = 8 / Bits;
    const int32_t code = (bytes[e / kPerByte] >> ((e % kPerByte) * Bits)) & ((1 << Bits) - 1);
    return Signed && (code >> (Bits - 1)) ? code - (1 << Bits) : code;
  }
}

template <int Bits, bool Signed>
void DequantizeRow(const void* q, int64_t first, int64_t n, float scale, float zero, float* out) {
  if constexpr (Bits == 8) {  // a plain loop over bytes vectorizes
    const auto* p = static_cast<const std::conditional_t<Signed, int8_t, uint8_t>*>(q) + first;
    for (int64_t i = 0; i < n; ++i) out[i] = (float(p[i]) - zero) * scale;
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = (float(LoadElement<Bits, Signed>(q, first + i)) - zero) * scale;
  }
}

template <int Bits, bool Signed>
float DotRow(const void* q, int64_t first, int64_t n, float scale, float zero, const float* x) {
  // scale * (sum q x - zero * sum x): the integers are exact in float.
  float qx = 0, sx = 0;
  for (int64_t i = 0; i < n; ++i) {
    qx += float(LoadElement<Bits, Signed>(q, first + i)) * x[i];
    sx += x[i];
  }
  return scale * (qx - zero * sx);
}

template <int Bits, bool Signed>
constexpr BlockFormat Row(const char* name, DType storage, uint8_t forms) {
  return {name,
          storage,
          Bits,
          Signed,
          forms,
          Signed ? 0.0f : float(1 << (Bits - 1)),
          16,
          &LoadElement<Bits, Signed>,
          &DequantizeRow<Bits, Signed>,
          &DotRow<Bits, Signed>};
}

constexpr uint8_t kAllForms = kZeroAbsent | kZeroPacked | kZeroFloat;

const BlockFormat kFormats[] = {
    Row<4, true>("int4", DType::kInt4, kZeroAbsent | kZeroPacked),
    Row<4, false>("uint4", DType::kUInt4, kAllForms),
    Row<8, true>("int8", DType::kInt8, kZeroAbsent | kZeroPacked),
    Row<8, false>("uint8", DType::kUInt8, kAllForms),
    Row<2, true>("int2", DType::kInt2, kZeroAbsent | kZeroPacked),
    Row<2, false>("uint2", DType::kUInt2, kAllForms),
};

}  // namespace

const BlockFormat* BlockFormats(int& count) {
  count = int(sizeof(kFormats) / sizeof(kFormats[0]));
  return kFormats;
}

const BlockFormat* FindBlockFormat(DType storage) {
  for (const BlockFormat& f : kFormats)
    if (f.storage == storage) return &f;
  return nullptr;
}

}  // namespace onnx_mini
