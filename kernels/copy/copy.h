// One strided copy for the ops that move elements without arithmetic
// (Transpose, Expand, Concat, Split, Slice, Tile): a copy described by the
// output's shape and, per dim, a source and a destination stride.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/tensor.h"

namespace onnx_mini {

// For every index i of `shape`, copies the element at
//   src + sum_d i[d] * src_strides[d]
// to
//   dst + sum_d i[d] * dst_strides[d]
// (strides in elements; a source stride 0 broadcasts; an empty `dst_strides`
// means the dense row-major layout of `shape`). The destination positions
// must be distinct and must not overlap the source. `dtype` is any unpacked
// type: the copy works by element size (1, 2, 4, 8 bytes, or a multiple),
// strings by assignment; a packed type is an internal error.
//
// How: size-1 dims are dropped and adjacent dims contiguous in both source
// and destination merged; then a contiguous innermost run is copied whole,
// a broadcast one filled, an innermost transpose (the source's unit stride on
// an outer dim) copied in cache-sized 2-D blocks, and anything else element
// by element. Large copies (see kParallelCopyBytes) split their outer rows
// among up to `threads` threads. Nothing is read or written for an empty shape.
absl::Status CopyStrided(DType dtype, const Shape& shape, const void* src, const std::vector<int64_t>& src_strides,
                         void* dst, const std::vector<int64_t>& dst_strides, int threads);

// The plain per-element copy with the same contract (single-threaded): the
// reference that tests compare CopyStrided with.
absl::Status CopyStridedReference(DType dtype, const Shape& shape, const void* src,
                                  const std::vector<int64_t>& src_strides, void* dst,
                                  const std::vector<int64_t>& dst_strides);

// Bytes a copy must move before CopyStrided runs it on several threads.
inline constexpr int64_t kParallelCopyBytes = int64_t(1) << 18;

// Bytes of one element of an unpacked dtype (sizeof(std::string) for strings).
size_t ElementBytes(DType dtype);

// `p` advanced by `elements` elements of `dtype` (unpacked).
inline const void* ElementAt(DType dtype, const void* p, int64_t elements) {
  return static_cast<const char*>(p) + elements * int64_t(ElementBytes(dtype));
}
inline void* ElementAt(DType dtype, void* p, int64_t elements) {
  return static_cast<char*>(p) + elements * int64_t(ElementBytes(dtype));
}

}  // namespace onnx_mini
