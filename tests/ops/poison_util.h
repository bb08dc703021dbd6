// Test helpers over pooled-memory poisoning (runtime/memory_poison.h).
#pragma once

#include <algorithm>

#include "runtime/memory_poison.h"
#include "runtime/tensor.h"

namespace onnx_mini {

// Poisoning on while it lives: every block a kernel gets uninitialized holds
// kPoisonByte until the kernel writes it.
class ScopedPoison {
 public:
  ScopedPoison() : was_(PoisonUninitialized()) { SetPoisonUninitialized(true); }
  ~ScopedPoison() { SetPoisonUninitialized(was_); }
  ScopedPoison(const ScopedPoison&) = delete;
  ScopedPoison& operator=(const ScopedPoison&) = delete;

 private:
  bool was_;
};

// How many elements of `t` are the poison pattern in every byte: elements no
// kernel wrote (strings are never poisoned; a 4-bit type counts its bytes).
inline int64_t PoisonedElements(const Tensor& t) {
  if (!t.defined() || t.dtype() == DType::kString || t.size() == 0) return 0;
  const size_t bytes = t.bytes();
  const size_t width = std::max<size_t>(1, bytes / size_t(t.size()));
  const unsigned char* p = static_cast<const unsigned char*>(t.raw());
  int64_t n = 0;
  for (size_t e = 0; e + width <= bytes; e += width) {
    size_t b = 0;
    while (b < width && p[e + b] == kPoisonByte) ++b;
    n += b == width;
  }
  return n;
}

}  // namespace onnx_mini
