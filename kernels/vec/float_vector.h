// GCC vector types of a CPU target's width over float, for kernels written
// once and compiled per target (runtime/cpu.h): the functions using them are
// always inlined into entry points that carry the target attributes.
#pragma once

#include <cstdint>
#include <cstring>

// Vectors pass by value only between always-inlined functions, so the ABI
// notes GCC gives for wide vectors in baseline code do not apply (this
// header is for the per-target kernel files, which say the same).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onnx_mini::float_vector {

template <int kBytes>
struct V {
  typedef float F __attribute__((vector_size(kBytes)));
  typedef int32_t I __attribute__((vector_size(kBytes)));
  static constexpr int64_t kLanes = kBytes / 4;
};

// Unaligned loads and stores.
template <class F>
[[gnu::always_inline]] inline F Load(const float* p) {
  F v;
  std::memcpy(&v, p, sizeof(F));
  return v;
}
template <class F>
[[gnu::always_inline]] inline void Store(float* p, F v) {
  std::memcpy(p, &v, sizeof(F));
}

}  // namespace onnx_mini::float_vector
