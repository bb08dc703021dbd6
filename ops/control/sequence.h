// Moving blocks of elements between tensors, shared by the sequence ops
// (SplitToSequence, ConcatFromSequence) and the scan outputs and inputs of
// Loop and Scan. Unpacked element types only (whole elements per byte).
#pragma once

#include <vector>

#include "runtime/op.h"

namespace onnx_mini {

// Copies `count` elements of src from element src_at to dst at dst_at.
void CopyBlock(const Tensor& src, int64_t src_at, Tensor& dst, int64_t dst_at, int64_t count);

// Concatenates `items` (same dtype and rank, equal dims but `axis`) along
// `axis`; with `stack`, items of equal shape are stacked along a new axis
// at `axis`. The items are checked; errors name the node through ctx.
absl::StatusOr<Tensor> ConcatItems(const KernelContext& ctx, const std::vector<Tensor>& items, int64_t axis,
                                   bool stack);

// The slice [begin, begin + length) of `t` along `axis`, copied (charged to
// the session's budget); with `squeeze` (length 1) the axis is dropped.
absl::StatusOr<Tensor> SliceAxis(const KernelContext& ctx, const Tensor& t, int64_t axis, int64_t begin,
                                 int64_t length, bool squeeze);

// The memory of one item of a sequence or of a loop's kept iterations beyond
// its elements and shape (its Tensor, its Storage and their control block),
// charged to the budget with the elements: millions of empty items are not free.
constexpr size_t kItemOverheadBytes = sizeof(Tensor) + 96;

// Dims that hold for both: equal dims stay, others become unknown (an unknown
// rank when the ranks differ or either is unknown).
std::optional<std::vector<Dim>> MergeDims(const std::optional<std::vector<Dim>>& a,
                                          const std::optional<std::vector<Dim>>& b);

}  // namespace onnx_mini
