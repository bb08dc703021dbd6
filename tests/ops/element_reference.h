// Helpers for tests of the ops that move elements without arithmetic: inputs
// of any unpacked type, and a per-element check of an output against the
// input element each output element must be a copy of.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/checked.h"
#include "runtime/tensor.h"

namespace onnx_mini {

// Element types of every size: 1, 2, 4, 8 and 16 bytes, bool and strings.
inline const std::vector<DType>& MovedTypes() {
  static const std::vector<DType> types = {DType::kUInt8, DType::kFloat16,   DType::kFloat, DType::kInt64,
                                           DType::kDouble, DType::kComplex128, DType::kBool,  DType::kString};
  return types;
}

// A tensor of distinct-looking values: random bytes (0/1 for bool), or strings.
inline Tensor Filled(DType dtype, const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::Zeros(dtype, shape);
  std::mt19937 rng(seed);
  if (dtype == DType::kString) {
    for (int64_t i = 0; i < t.size(); ++i) t.data<std::string>()[i] = "s" + std::to_string(rng() % 100000);
  } else if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.size(); ++i) t.data<bool>()[i] = rng() % 2 != 0;
  } else {
    auto* p = static_cast<unsigned char*>(t.raw());
    for (size_t i = 0; i < t.bytes(); ++i) p[i] = static_cast<unsigned char>(rng());
  }
  return t;
}

// Element i of `t`: its string, or its bytes.
inline std::string ElementOf(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kString) return t.data<std::string>()[i];
  const size_t width = t.bytes() / size_t(t.size());
  return std::string(static_cast<const char*>(t.raw()) + size_t(i) * width, width);
}

// For each index of `got`'s shape, `source(index)` names the tensor and flat
// element it must equal; expects all to match (stops at the first mismatch).
using ElementSource = std::function<std::pair<const Tensor*, int64_t>(const std::vector<int64_t>& index)>;
inline void ExpectCopies(const Tensor& got, const ElementSource& source, const std::string& what) {
  const Shape& shape = got.shape();
  for (int64_t e = 0; e < got.size(); ++e) {
    std::vector<int64_t> index(shape.size());
    int64_t rem = e;
    for (size_t k = shape.size(); k-- > 0;) {
      index[k] = rem % shape[k];
      rem /= shape[k];
    }
    const auto [from, at] = source(index);
    if (ElementOf(got, e) != ElementOf(*from, at)) {
      ADD_FAILURE() << what << ": element " << e << " of " << ShapeToString(shape) << " (" << LowerName(got.dtype())
                    << ") differs from the reference";
      return;
    }
  }
}

// The flat row-major position of `index` in `shape`.
inline int64_t FlatIndex(const Shape& shape, const std::vector<int64_t>& index) {
  int64_t at = 0;
  for (size_t k = 0; k < shape.size(); ++k) at = at * shape[k] + index[k];
  return at;
}

}  // namespace onnx_mini
