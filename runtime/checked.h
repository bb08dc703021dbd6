// Checked arithmetic for sizes, shapes and indices. Dims come from untrusted
// models, so every product or sum built from them goes through these helpers:
// an overflow becomes an error the caller names, never undefined behaviour or
// a wrapped size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace onnx_mini {

// a * b and a + b, or nullopt when the result does not fit int64.
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// a + b clamped to the int64 range: for bounds that are only compared
// (window edges, clamped indices), never for sizes.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// The product of dims[from, to): nullopt if a dim is negative or it
// overflows. A 0 dim makes it 0 whatever the others ([2^40, 2^40, 0] is empty).
inline std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& dims, size_t from, size_t to) {
  to = to < dims.size() ? to : dims.size();
  bool empty = false;
  for (size_t i = from; i < to; ++i) {
    if (dims[i] < 0) return std::nullopt;
    empty = empty || dims[i] == 0;
  }
  if (empty) return 0;
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    if (__builtin_mul_overflow(p, dims[i], &p)) return std::nullopt;
  return p;
}
inline std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& dims) {
  return CheckedProduct(dims, 0, dims.size());
}

// A non-negative decimal integer with nothing else around it: "abc", "-1",
// "+1", "1e3", " 1" or a value past int64 give nullopt (sizes and offsets in
// files must not be guessed).
inline std::optional<int64_t> ParseNonNegative(std::string_view text) {
  if (text.empty()) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    std::optional<int64_t> next = CheckedMul(v, 10);
    if (next) next = CheckedAdd(*next, c - '0');
    if (!next) return std::nullopt;
    v = *next;
  }
  return v;
}

// Row-major element strides of a shape. A shape with no elements may have
// dims whose products overflow; nothing is read through such strides, so
// those that overflow are 0.
inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = CheckedMul(strides[d], dims[d]).value_or(0);
  return strides;
}

}  // namespace onnx_mini
