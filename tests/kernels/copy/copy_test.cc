// kernels/copy/copy.cc: CopyStrided against the plain per-element reference, for
// every element size, bool and strings, over transposes, broadcasts, slices
// and strided destinations, on 1 and 2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "kernels/copy/copy.h"
#include "runtime/checked.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "tests/ops/element_reference.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

// 1, 2, 4, 8 and 16 bytes, bool and strings.
const DType kTypes[] = {DType::kUInt8, DType::kFloat16, DType::kFloat, DType::kInt64,
                        DType::kComplex128, DType::kBool, DType::kString};

bool SameContents(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.size() != b.size()) return false;
  if (a.dtype() == DType::kString)
    return std::equal(a.data<std::string>(), a.data<std::string>() + a.size(), b.data<std::string>());
  return std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// Copies `src` (at element `offset`) into a destination of `dst_size`
// elements (pre-filled, so untouched positions are compared too) with both
// the fast copy and the reference; expects the same bytes.
void ExpectSameCopy(const Tensor& src, int64_t offset, const Shape& shape, const std::vector<int64_t>& src_strides,
                    int64_t dst_size, const std::vector<int64_t>& dst_strides, int threads, const std::string& what) {
  const DType dtype = src.dtype();
  Tensor fast = Filled(dtype, {dst_size}, 7), slow = Filled(dtype, {dst_size}, 7);
  const void* from = ElementAt(dtype, src.raw(), offset);
  ASSERT_TRUE(CopyStrided(dtype, shape, from, src_strides, fast.raw(), dst_strides, threads).ok());
  ASSERT_TRUE(CopyStridedReference(dtype, shape, from, src_strides, slow.raw(), dst_strides).ok());
  EXPECT_TRUE(SameContents(fast, slow)) << what << " " << LowerName(dtype) << " shape " << ShapeToString(shape)
                                        << " threads " << threads;
}

// A transpose of `in` by `perm`, as Transpose plans it.
void ExpectSameTranspose(DType dtype, const Shape& in, const std::vector<int64_t>& perm, int threads) {
  const Tensor src = Filled(dtype, in, 3);
  const std::vector<int64_t> in_strides = RowMajorStrides(in);
  Shape out;
  std::vector<int64_t> strides;
  for (int64_t p : perm) {
    out.push_back(in[size_t(p)]);
    strides.push_back(in_strides[size_t(p)]);
  }
  std::string what = "transpose of " + ShapeToString(in) + " by " + ShapeToString(perm);
  ExpectSameCopy(src, 0, out, strides, std::max<int64_t>(ElementCount(out), 1), {}, threads, what);
}

// Runs f once per CPU target this machine has (the 4-byte transpose has an
// AVX2 path beside the plain one), restoring the active target after.
template <class F>
void ForEachCpuTarget(F f) {
  for (CpuTarget target : {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512}) {
    if (!CpuTargetUsable(target, HostCpuFeatures())) continue;
    ScopedCpuFeaturesForTesting scope(target);
    SCOPED_TRACE(CpuTargetName(target));
    f();
  }
}

TEST(CopyStrided, EveryPermutationOfRank3) {
  ForEachCpuTarget([] {
  for (DType dtype : kTypes)
    for (const Shape& in : {Shape{17, 33, 5}, Shape{1, 9, 1}, Shape{4, 0, 3}, Shape{64, 31, 2}})
      for (int threads : {1, 2}) {
        std::vector<int64_t> perm = {0, 1, 2};
        do ExpectSameTranspose(dtype, in, perm, threads);
        while (std::next_permutation(perm.begin(), perm.end()));
      }
  });
}

TEST(CopyStrided, PermutationsOfRank4And5) {
  ForEachCpuTarget([] {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{1, 8, 51, 64}, {0, 1, 3, 2}}, {{2, 7, 3, 5}, {0, 2, 1, 3}}, {{2, 7, 3, 5}, {3, 2, 1, 0}},
      {{3, 1, 17, 2}, {2, 0, 3, 1}},  {{2, 3, 4, 5, 6}, {0, 3, 1, 4, 2}}, {{2, 3, 4, 5, 6}, {4, 3, 2, 1, 0}},
      {{5, 1, 2, 1, 9}, {1, 4, 3, 0, 2}}, {{2, 3, 0, 5, 6}, {2, 1, 0, 3, 4}}};
  for (DType dtype : kTypes)
    for (const auto& [in, perm] : cases)
      for (int threads : {1, 2}) ExpectSameTranspose(dtype, in, perm, threads);
  // Every permutation of a rank-4 float tensor with odd sizes.
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do ExpectSameTranspose(DType::kFloat, {3, 5, 7, 11}, perm, 1);
  while (std::next_permutation(perm.begin(), perm.end()));
  // 4-byte transposes with full 8 x 8 tiles, ragged edges and both.
  for (const Shape& in : {Shape{16, 32}, Shape{24, 8}, Shape{9, 17}, Shape{40, 23}, Shape{7, 7}})
    for (int threads : {1, 2}) ExpectSameTranspose(DType::kFloat, in, {1, 0}, threads);
  ExpectSameTranspose(DType::kFloat, {3, 16, 24}, {0, 2, 1}, 1);
  });
}

TEST(CopyStrided, LargeTransposesRunInParallel) {
  // Above kParallelCopyBytes: the blocks are split among threads.
  ForEachCpuTarget([] {
  for (DType dtype : {DType::kUInt8, DType::kFloat16, DType::kFloat, DType::kDouble}) {
    ExpectSameTranspose(dtype, {2, 8, 513, 64}, {0, 1, 3, 2}, 2);
    ExpectSameTranspose(dtype, {300, 301}, {1, 0}, 2);
  }
  ExpectSameTranspose(DType::kString, {130, 70}, {1, 0}, 2);
  });
}

// Every pattern of broadcast dims of `out`: input dim d is 1 where bit d is set.
void ExpectSameBroadcasts(DType dtype, const Shape& out, int threads) {
  const size_t rank = out.size();
  for (unsigned mask = 0; mask < (1u << rank); ++mask) {
    Shape in = out;
    for (size_t d = 0; d < rank; ++d)
      if (mask & (1u << d)) in[d] = 1;
    const Tensor src = Filled(dtype, in, mask);
    std::vector<int64_t> strides(rank, 0);
    const std::vector<int64_t> in_strides = RowMajorStrides(in);
    for (size_t d = 0; d < rank; ++d) strides[d] = in[d] == 1 ? 0 : in_strides[d];
    ExpectSameCopy(src, 0, out, strides, std::max<int64_t>(ElementCount(out), 1), {}, threads,
                   "broadcast of " + ShapeToString(in));
  }
}

TEST(CopyStrided, EveryBroadcastPattern) {
  for (DType dtype : kTypes)
    for (int threads : {1, 2}) {
      ExpectSameBroadcasts(dtype, {3, 4, 5}, threads);
      ExpectSameBroadcasts(dtype, {2, 1, 17, 3}, threads);
      ExpectSameBroadcasts(dtype, {2, 3, 0, 4}, threads);
    }
  // Large enough to run in parallel, the GQA repeat of a decoder's keys among them.
  for (DType dtype : {DType::kFloat, DType::kString}) ExpectSameBroadcasts(dtype, {2, 4, 129, 64}, 2);
  ExpectSameBroadcasts(DType::kUInt8, {1, 2, 4, 513, 128}, 2);
}

TEST(CopyStrided, SlicesWithStepsAndOffsets) {
  // A [6, 9, 10] input sliced with every step sign, like Slice plans it.
  const Shape in = {6, 9, 10};
  const std::vector<int64_t> s = RowMajorStrides(in);
  struct Case {
    int64_t offset;
    Shape shape;
    std::vector<int64_t> strides;
  };
  const std::vector<Case> cases = {
      {s[0] + 2 * s[1] + 1, {4, 5, 8}, {s[0], s[1], 1}},        // steps 1: runs of 8
      {0, {3, 9, 5}, {2 * s[0], s[1], 2}},                      // step 2 innermost
      {5 * s[0] + 8 * s[1] + 9, {6, 9, 10}, {-s[0], -s[1], -1}},  // every dim reversed
      {3, {6, 1, 4}, {s[0], 0, -1}},                            // a size-1 dim and a reversed run
      {0, {6, 0, 10}, {s[0], s[1], 1}},                         // empty
  };
  for (DType dtype : kTypes) {
    const Tensor src = Filled(dtype, in, 11);
    for (const Case& c : cases)
      for (int threads : {1, 2})
        ExpectSameCopy(src, c.offset, c.shape, c.strides, std::max<int64_t>(ElementCount(c.shape), 1), {}, threads,
                       "slice");
  }
}

TEST(CopyStrided, StridedDestinationsAsConcatAndSplitUseThem) {
  // Input [4, 3, 5] into rows of an output [4, 7, 5] at offset 2 along axis 1,
  // and back out; the gap keeps its fill.
  for (DType dtype : kTypes)
    for (int threads : {1, 2}) {
      const Tensor part = Filled(dtype, {4, 3, 5}, 5);
      ExpectSameCopy(part, 0, {4, 15}, {15, 1}, 4 * 35, {35, 1}, threads, "concat");
      const Tensor whole = Filled(dtype, {4, 7, 5}, 6);
      ExpectSameCopy(whole, 10, {4, 15}, {35, 1}, 4 * 15, {15, 1}, threads, "split");
      // A transposed source into a strided destination.
      ExpectSameCopy(whole, 0, {5, 4, 7}, {1, 35, 5}, 5 * 4 * 9, {36, 9, 1}, threads, "transpose into rows");
    }
  // One long run shared between threads.
  const Tensor big = Filled(DType::kFloat, {1 << 17}, 9);
  ExpectSameCopy(big, 0, {1 << 17}, {1}, 1 << 17, {}, 2, "one run");
  ExpectSameCopy(big, 5, {1 << 16}, {0}, 1 << 16, {}, 2, "one fill");
}

TEST(CopyStrided, ScalarsAndPackedTypes) {
  for (DType dtype : kTypes) {
    const Tensor src = Filled(dtype, {}, 2);
    ExpectSameCopy(src, 0, {}, {}, 1, {}, 1, "scalar");
    ExpectSameCopy(src, 0, {1, 1}, {0, 0}, 1, {}, 1, "ones");
  }
  unsigned char byte = 0x21, out = 0;
  EXPECT_FALSE(CopyStrided(DType::kInt4, {2}, &byte, {1}, &out, {}, 1).ok());
  EXPECT_FALSE(CopyStridedReference(DType::kInt4, {2}, &byte, {1}, &out, {}).ok());
}

}  // namespace
}  // namespace onnx_mini
