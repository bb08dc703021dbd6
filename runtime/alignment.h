// The alignment the caller's memory must have for a tensor's elements (the
// C API's om_tensor_wrap and Session::Run refuse less: kernels load elements
// as their C type, and a misaligned load is undefined behaviour).
#pragma once

#include <cstddef>
#include <string>

#include "runtime/dtype.h"

namespace onnx_mini {

// The element's C type's alignment: the size of a scalar type, of one part of
// a complex one; 1 for 8-bit and packed types.
inline size_t ElementAlignment(DType dtype) {
  if (dtype == DType::kString) return alignof(std::string);
  const DTypeInfo& info = Info(dtype);
  if (info.bits <= 8) return 1;
  return size_t(info.kind == DTypeKind::kComplex ? info.bits / 16 : info.bits / 8);
}

}  // namespace onnx_mini
