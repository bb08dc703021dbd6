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

// The sum and the sum of squares of floats in eight double partial sums,
// lane l taking elements e = l (mod 8) (the order the plain kernels keep, so
// every build gives the same bits), held as 8 / (kBytes / 8) vectors of the
// target's width: GCC's own split of one 8-lane double vector went through
// the stack on AVX2 (6 cycles an element).
template <int kBytes>
struct HalfAndDouble {
  typedef float H __attribute__((vector_size(kBytes / 2)));  // half a float vector
  typedef double D __attribute__((vector_size(kBytes)));     // its lanes widened
};
template <int kBytes>
struct EightLaneMoments {
  using H = typename HalfAndDouble<kBytes>::H;
  using D = typename HalfAndDouble<kBytes>::D;
  static constexpr int kLanes = kBytes / 8, kParts = 8 / kLanes;
  D s[kParts] = {}, q[kParts] = {};

  // Adds v[0, 8) to lanes 0 to 7.
  [[gnu::always_inline]] void Add8(const float* v) {
    for (int j = 0; j < kParts; ++j) {
      H h;
      std::memcpy(&h, v + j * kLanes, sizeof(h));
      const D d = __builtin_convertvector(h, D);
      s[j] += d;
      q[j] += d * d;
    }
  }
  // Adds the `count` (< 8) floats of `tail` to lanes 0 on, then gives the totals.
  [[gnu::always_inline]] void Finish(const float* tail, int64_t count, double* sum, double* squares) const {
    double ls[8], lq[8];
    std::memcpy(ls, s, sizeof(ls));
    std::memcpy(lq, q, sizeof(lq));
    for (int64_t l = 0; l < count; ++l) {
      const double v = double(tail[l]);
      ls[l] += v;
      lq[l] += v * v;
    }
    *sum = ((ls[0] + ls[1]) + (ls[2] + ls[3])) + ((ls[4] + ls[5]) + (ls[6] + ls[7]));
    *squares = ((lq[0] + lq[1]) + (lq[2] + lq[3])) + ((lq[4] + lq[5]) + (lq[6] + lq[7]));
  }
};

}  // namespace onnx_mini::float_vector
