// Helpers shared by the op families: the type sets rows declare and the
// dispatch kernels use, index inputs and axes, broadcasting, and conversions
// between the arithmetic types.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <type_traits>

#include "absl/container/inlined_vector.h"
#include "kernels/vec/arith.h"
#include "runtime/op.h"
#include "runtime/thread_pool.h"
#include "runtime/type_set.h"

namespace onnx_mini {

// Type sets for registry rows, from the lists kernels dispatch over.
inline constexpr TypeSet kFloatTypes = FloatTypes::set();
inline constexpr TypeSet kNumericTypes = NumericTypes::set();
inline constexpr TypeSet kSignedTypes = SignedTypes::set();
inline constexpr TypeSet kIndexTypes = IndexTypes::set();
inline constexpr TypeSet kUnpackedTypes = UnpackedTypes::set();
inline constexpr TypeSet kAllTypes = AllTypes::set();
inline constexpr TypeSet kBool = {DType::kBool};
inline constexpr TypeSet kInt64 = {DType::kInt64};
// The schemas' "any tensor type" of the data-movement and indexing ops:
// numbers, bool, string and complex.
using AnyTypes = Join<NumericTypes, TypeList<bool, std::string, Complex64, Complex128>>;
inline constexpr TypeSet kAnyTypes = AnyTypes::set();

// A bad attribute, found when the op is created: "<node>: <rule>".
absl::Status AttributeError(const Node& node, const std::string& rule);

// The product of dims [from, to) of a tensor's shape. Only an empty tensor's
// dims can overflow (0 then); kernels return before using it.
int64_t ShapeProduct(const Shape& shape, int64_t from, int64_t to);

// VisitTypes<List> for a kernel: the session admits only the row's declared
// types, so a type outside List is an internal error, never silent zeros.
template <class List, class F>
absl::Status Dispatch(const KernelContext& ctx, DType dtype, F&& f) {
  if (VisitTypes<List>(dtype, std::forward<F>(f))) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(ctx.node().Describe(), ": the kernel has no case for ", LowerName(dtype)));
}

// The values of an int32 or int64 tensor (rows declare such inputs kIndexTypes).
std::vector<int64_t> IndexValues(const Tensor& t);

// `axis` in [-rank, rank) made non-negative, or an error naming `what`.
absl::StatusOr<int64_t> NormalizeAxis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what);

// NumPy broadcasting of two shapes; dims may be unknown.
absl::StatusOr<std::vector<Dim>> BroadcastDims(const InferContext& ctx, const std::vector<Dim>& a,
                                               const std::vector<Dim>& b);

// The concrete shapes of inputs [0, count) (none for an absent input), and
// whether every given input has one.
bool ConcreteInputShapes(const InferContext& ctx, size_t count, std::vector<std::optional<Shape>>& shapes);

// For an output of shape `out`, the element stride of an input of shape `in`
// (right-aligned) along each output dim: 0 where the input broadcasts.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Calls f(begin, end) over consecutive ranges covering [0, n) of an
// element-wise loop (2 units of work an element): by the pool's size rule,
// in chunks of 16K elements from 32K elements on, else at once.
template <class F>
void ParallelElements(int64_t n, int threads, const F& f) {
  ParallelFor(threads, n, WorkPerIndex{2}, f);
}

// Calls f(out_index, a_index, b_index) for every element of `out`, running
// rows in parallel on the kernels' pool when large. f must be safe to call
// concurrently. Rows where an input is contiguous or constant get loops of
// their own, which the compiler vectorizes.
template <class F>
void ForEachBroadcast(const Shape& out, const std::vector<int64_t>& sa,
                      const std::vector<int64_t>& sb, int threads, F f) {
  const int64_t rank = int64_t(out.size());
  const int64_t total = ElementCount(out);
  if (total == 0) return;
  const int64_t inner = rank ? out.back() : 1;
  const int64_t rows = total / inner;
  const int64_t ia = rank ? sa.back() : 0, ib = rank ? sb.back() : 0;
  auto row = [&](int64_t r, int64_t a, int64_t b) {
    const int64_t base = r * inner;
    if (ia == 1 && ib == 1) for (int64_t k = 0; k < inner; ++k) f(base + k, a + k, b + k);
    else if (ia == 1 && ib == 0) for (int64_t k = 0; k < inner; ++k) f(base + k, a + k, b);
    else if (ia == 0 && ib == 1) for (int64_t k = 0; k < inner; ++k) f(base + k, a, b + k);
    else for (int64_t k = 0; k < inner; ++k) f(base + k, a + k * ia, b + k * ib);
  };
  // The size rule at 2 units an element: ~16K elements per chunk, from 32K on.
  ParallelFor(threads, rows, WorkPerIndex{2.0 * double(inner)}, [&](int64_t r0, int64_t r1) {
    // The first row's index by division, the next ones by counting.
    absl::InlinedVector<int64_t, 8> idx(size_t(std::max<int64_t>(rank - 1, 0)));  // no allocation for the usual ranks
    int64_t a = 0, b = 0, rem = r0;
    for (int64_t d = rank - 2; d >= 0; --d) {
      idx[size_t(d)] = rem % out[size_t(d)];
      rem /= out[size_t(d)];
      a += idx[size_t(d)] * sa[size_t(d)];
      b += idx[size_t(d)] * sb[size_t(d)];
    }
    for (int64_t r = r0; r < r1; ++r) {
      row(r, a, b);
      for (int64_t d = rank - 2; d >= 0; --d) {  // the next row's index
        a += sa[size_t(d)];
        b += sb[size_t(d)];
        if (++idx[size_t(d)] < out[size_t(d)]) break;
        a -= out[size_t(d)] * sa[size_t(d)];
        b -= out[size_t(d)] * sb[size_t(d)];
        idx[size_t(d)] = 0;
      }
    }
  });
}

}  // namespace onnx_mini
