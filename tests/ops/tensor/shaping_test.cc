// ops/tensor/shaping.cc: views, Shape, Size and Transpose.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "runtime/element.h"
#include "tests/ops/element_reference.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Transpose, AllPermutationsOfARank4TensorAndStrings) {
  Tensor x = Random(DType::kInt64, {2, 3, 1, 5}, 3);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    absl::StatusOr<Tensor> out = RunOne(21, "Transpose", {x}, [&](onnx::NodeProto& n) { SetAttr(n, "perm", perm); });
    ASSERT_TRUE(out.ok()) << out.status();
    Shape expected_shape;
    for (int64_t p : perm) expected_shape.push_back(x.dim(p));
    ASSERT_EQ(out->shape(), expected_shape);
    // out[i0,i1,i2,i3] = x[i_{perm^-1}...]: walk x and place.
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t d = 0; d < 5; ++d) {
          const int64_t idx[4] = {a, b, 0, d};
          int64_t o = 0;
          for (int k = 0; k < 4; ++k) o = o * expected_shape[size_t(k)] + idx[perm[size_t(k)]];
          EXPECT_EQ(out->data<int64_t>()[o], x.data<int64_t>()[((a * 3 + b) * 1) * 5 + d]);
        }
  } while (std::next_permutation(perm.begin(), perm.end()));
  Tensor s = Tensor::FromVector<std::string>({"a", "b", "c", "d", "e", "f"}, {2, 3});
  absl::StatusOr<Tensor> st = RunOne(21, "Transpose", {s});
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->data<std::string>()[1], "d");
  absl::StatusOr<Tensor> bad = RunOne(21, "Transpose", {s}, [](onnx::NodeProto& n) { SetAttr(n, "perm", std::vector<int64_t>{0, 0}); });
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("not a permutation"));
}

TEST(Transpose, EveryTypeAgainstAPerElementReference) {
  // Transpose runs on the strided copy: compare with out[i] = in[i permuted],
  // for every permutation of rank 3 and some of rank 4 and 5, odd, empty and
  // size-1 dims, on 1 and 2 threads.
  std::vector<std::pair<Shape, std::vector<int64_t>>> cases;
  for (const Shape& shape : {Shape{17, 33, 5}, Shape{4, 1, 9}, Shape{3, 0, 2}}) {
    std::vector<int64_t> perm = {0, 1, 2};
    do cases.push_back({shape, perm});
    while (std::next_permutation(perm.begin(), perm.end()));
  }
  cases.push_back({{1, 8, 33, 16}, {0, 1, 3, 2}});
  cases.push_back({{2, 5, 3, 7}, {0, 2, 1, 3}});
  cases.push_back({{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}});
  cases.push_back({{3, 1, 2, 1, 5}, {2, 4, 0, 3, 1}});
  for (DType dtype : MovedTypes())
    for (const auto& shape_perm : cases) {
      const Shape& shape = shape_perm.first;  // (no structured binding: lambdas capture these)
      const std::vector<int64_t>& perm = shape_perm.second;
      const Tensor x = Filled(dtype, shape, 2);
      for (int threads : {1, 2}) {
        absl::StatusOr<Tensor> y = RunOne(21, "Transpose", {x}, [&](onnx::NodeProto& n) { SetAttr(n, "perm", perm); }, threads);
        ASSERT_TRUE(y.ok()) << y.status();
        ExpectCopies(*y, [&](const std::vector<int64_t>& index) {
          std::vector<int64_t> at(shape.size());
          for (size_t k = 0; k < perm.size(); ++k) at[size_t(perm[k])] = index[k];
          return std::make_pair(&x, FlatIndex(shape, at));
        }, "Transpose " + ShapeToString(shape) + " by " + ShapeToString(perm) + " " + LowerName(dtype));
      }
    }
}

TEST(Shape, StartAndEndClamp) {
  Tensor x = Random(DType::kFloat, {2, 3, 4, 5}, 1);
  auto shape_of = [&](int64_t opset, std::optional<int64_t> start, std::optional<int64_t> end) {
    absl::StatusOr<Tensor> out = RunOne(opset, "Shape", {x}, [&](onnx::NodeProto& n) {
      if (start) SetAttr(n, "start", *start);
      if (end) SetAttr(n, "end", *end);
    });
    EXPECT_TRUE(out.ok()) << out.status();
    return std::vector<int64_t>(out->data<int64_t>(), out->data<int64_t>() + out->size());
  };
  EXPECT_EQ(shape_of(15, {}, {}), std::vector<int64_t>({2, 3, 4, 5}));
  EXPECT_EQ(shape_of(15, -2, {}), std::vector<int64_t>({4, 5}));
  EXPECT_EQ(shape_of(15, 1, -1), std::vector<int64_t>({3, 4}));
  EXPECT_EQ(shape_of(15, -10, 10), std::vector<int64_t>({2, 3, 4, 5}));
  EXPECT_EQ(shape_of(15, 3, 1), std::vector<int64_t>({}));
}

TEST(Reshape, ZeroMinusOneAllowZeroAndEmpty) {
  Tensor x = Random(DType::kFloat, {2, 3, 4}, 1);
  auto reshape = [&](const Tensor& in, std::vector<int64_t> shape, int64_t allowzero) {
    Tensor s = Tensor::FromVector<int64_t>(shape, {int64_t(shape.size())});
    return RunOne(14, "Reshape", {in, s}, [&](onnx::NodeProto& n) { SetAttr(n, "allowzero", allowzero); });
  };
  EXPECT_EQ(reshape(x, {0, -1}, 0)->shape(), Shape({2, 12}));
  EXPECT_EQ(reshape(x, {-1}, 0)->shape(), Shape({24}));
  EXPECT_EQ(reshape(x, {4, 0, 2}, 0)->shape(), Shape({4, 3, 2}));
  absl::StatusOr<Tensor> two = reshape(x, {-1, -1}, 0);
  EXPECT_THAT(std::string(two.status().message()), HasSubstr("more than one -1"));
  Tensor empty = Random(DType::kFloat, {0, 3}, 1);
  EXPECT_EQ(reshape(empty, {3, 0}, 1)->shape(), Shape({3, 0}));
  absl::StatusOr<Tensor> both = reshape(empty, {0, -1}, 1);
  EXPECT_THAT(std::string(both.status().message()), HasSubstr("both 0 and -1"));
  absl::StatusOr<Tensor> data = reshape(x, {6, 4}, 0);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(std::memcmp(data->raw(), x.raw(), x.bytes()), 0);
}

TEST(Shaping, DimProductsThatOverflowAreErrors) {
  const int64_t kBig = int64_t(1) << 40;
  const Tensor t = Tensor::Zeros(DType::kFloat, {kBig, kBig, 0});
  // Flatten at axis 2 would be [2^80, 0].
  absl::StatusOr<Tensor> out = RunOne(13, "Flatten", {t}, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(2)); });
  EXPECT_THAT(Message(out.status()), HasSubstr("the product of dims overflows"));
  out = RunOne(13, "Flatten", {t}, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(1)); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), Shape({kBig, 0}));
  // Reshape to [2^40, 2^40, 2^40, 0] has no overflow (0 elements); [-1, 2^40, 2^40] does.
  out = RunOne(14, "Reshape", {t, I({kBig, kBig, kBig, 0}, {4})}, [](onnx::NodeProto& n) { SetAttr(n, "allowzero", int64_t(1)); });
  ASSERT_TRUE(out.ok()) << out.status();
  out = RunOne(13, "Reshape", {F({1}, {1}), I({-1, kBig, kBig}, {3})});
  EXPECT_THAT(Message(out.status()), HasSubstr("overflows"));
  // Transpose of the empty tensor: strides of [0, 2^40, 2^40] overflow, nothing is read.
  out = RunOne(13, "Transpose", {Tensor::Zeros(DType::kFloat, {0, kBig, kBig})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), Shape({kBig, kBig, 0}));
}

TEST(Reshape, TheShapeIsAnAttributeBeforeOpset5) {
  absl::StatusOr<Tensor> y = RunOne(1, "Reshape", {F({1, 2, 3, 4, 5, 6}, {2, 3})}, [](onnx::NodeProto& n) {
    SetAttr(n, "shape", std::vector<int64_t>{3, -1});
    SetAttr(n, "consumed_inputs", std::vector<int64_t>{0});
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  y = RunOne(4, "Reshape", {F({1, 2, 3}, {3})}, [](onnx::NodeProto& n) { SetAttr(n, "shape", std::vector<int64_t>{2}); });
  ASSERT_FALSE(y.ok());
}

TEST(Shaping, AShapeInputDeclaredHugeIsRefusedBeforeAnythingIsBuilt) {
  // int64[1e12] as Reshape's shape input used to make the shape function
  // build a vector that long (std::bad_alloc at session creation).
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2}).Input("shape", DType::kInt64, {1000000000000}).Output("y", DType::kFloat, {}, false);
  m.Node("Reshape", {"x", "shape"}, {"y"});
  EXPECT_THAT(Message(m.Build().status()), HasSubstr("the shape input has 1000000000000 entries; the most is 4096"));
}

}  // namespace
}  // namespace onnx_mini
