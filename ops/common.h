// Helpers shared by the op families: arity and dtype checks, broadcasting,
// and conversions between the arithmetic types.
#pragma once

#include <initializer_list>
#include <type_traits>

#include "runtime/op.h"

namespace onnx_mini {

inline constexpr std::initializer_list<DType> kNumericTypes = {
    DType::kFloat,  DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt8,
    DType::kInt16,  DType::kInt32,  DType::kInt64,   DType::kUInt8,    DType::kUInt16,
    DType::kUInt32, DType::kUInt64};

bool OneOf(DType dtype, std::initializer_list<DType> set);

// Checks the node's input and output counts against the schema.
absl::Status CheckArity(const InferContext& ctx, size_t min_inputs, size_t max_inputs,
                        size_t min_outputs = 1, size_t max_outputs = 1);
// CheckArity, then the element type of input 0 (the common opening of a shape function).
absl::StatusOr<DType> CheckInputs(const InferContext& ctx, size_t min_inputs, size_t max_inputs,
                                  size_t min_outputs = 1, size_t max_outputs = 1);
// Checks that input i is present and has a known dtype, and returns it.
absl::StatusOr<DType> InputDType(const InferContext& ctx, size_t i);
// Fails with "not implemented: ... for <dtype>" unless the dtype is in the set.
absl::Status RequireDType(const KernelInfo& info, size_t input, std::initializer_list<DType> set);

// NumPy broadcasting of two shapes; dims may be unknown.
absl::StatusOr<std::vector<Dim>> BroadcastDims(const InferContext& ctx, const std::vector<Dim>& a,
                                               const std::vector<Dim>& b);

// For an output of shape `out`, the element stride of an input of shape `in`
// (right-aligned) along each output dim: 0 where the input broadcasts.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls f(out_index, a_index, b_index) for every element of `out`, running
// rows in parallel when large. f must be safe to call concurrently.
template <class F>
void ForEachBroadcast(const Shape& out, const std::vector<int64_t>& sa,
                      const std::vector<int64_t>& sb, int threads, F f) {
  const int64_t rank = int64_t(out.size());
  const int64_t total = ElementCount(out);
  if (total == 0) return;
  const int64_t inner = rank ? out.back() : 1;
  const int64_t rows = total / inner;
  const int64_t ia = rank ? sa.back() : 0, ib = rank ? sb.back() : 0;
#pragma omp parallel for num_threads(threads) if (total > (1 << 16) && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t a = 0, b = 0, rem = r;
    for (int64_t d = rank - 2; d >= 0; --d) {
      const int64_t idx = rem % out[size_t(d)];
      rem /= out[size_t(d)];
      a += idx * sa[size_t(d)];
      b += idx * sb[size_t(d)];
    }
    const int64_t base = r * inner;
    for (int64_t k = 0; k < inner; ++k) f(base + k, a + k * ia, b + k * ib);
  }
}

// The element types with arithmetic: numbers and the 16-bit floats (not bool).
template <class T> constexpr bool kIsArithmetic =
    (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) || std::is_same_v<T, Float16> ||
    std::is_same_v<T, BFloat16>;

// The kernel of ops whose output is input 0 relabelled with the shape the
// shape function derived (Identity, Reshape, Flatten, Squeeze, Unsqueeze): no copy.
class ViewKernel : public OpKernel {
 public:
  explicit ViewKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ctx.set_output(0, ctx.input(0)->Reshaped(ctx.output_shape(0)));
    return absl::OkStatus();
  }
};

// Arithmetic view of element types: 16-bit floats compute in float.
template <class T> struct Arith { using type = T; };
template <> struct Arith<Float16> { using type = float; };
template <> struct Arith<BFloat16> { using type = float; };
template <class T> typename Arith<T>::type Widen(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) return ToFloat(v);
  else return v;
}
template <class T> T Narrow(typename Arith<T>::type v) {
  if constexpr (std::is_same_v<T, Float16>) return ToFloat16(v);
  else if constexpr (std::is_same_v<T, BFloat16>) return ToBFloat16(v);
  else return v;
}

}  // namespace onnx_mini
