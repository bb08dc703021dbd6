// The first ops against plain reference computations written here: odd
// sizes, empty dims, broadcasts, every dtype they accept, multi-threaded sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "ops/common.h"
#include "runtime/element.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

// Runs a one-node model on the given inputs and returns output 0.
absl::StatusOr<Tensor> RunOne(int64_t opset, const std::string& op, const std::vector<Tensor>& inputs,
                              const std::function<void(onnx::NodeProto&)>& attrs = {},
                              int threads = 0) {
  ModelBuilder m(opset);
  std::vector<std::string> names;
  std::vector<NamedTensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    m.Input(name, inputs[i].dtype(), inputs[i].shape());
    names.push_back(name);
    feeds.push_back({name, inputs[i]});
  }
  m.Output("out", DType::kUndefined, {}, false);
  onnx::NodeProto& n = m.Node(op, names, {"out"});
  if (attrs) attrs(n);
  SessionOptions o;
  o.threads = threads;
  absl::StatusOr<std::unique_ptr<Session>> s = m.Build(o);
  if (!s.ok()) return s.status();
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(feeds);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

Tensor Random(DType dtype, Shape shape, uint32_t seed) {
  Tensor t = Tensor::Zeros(dtype, std::move(shape));
  std::mt19937 rng(seed);
  const bool is_float = Info(dtype).kind == DTypeKind::kFloat;
  for (int64_t i = 0; i < t.size(); ++i)
    SetDouble(t, i, is_float ? double(int(rng() % 2001) - 1000) / 64.0 : double(rng() % 50 + 1));
  return t;
}

// The reference: explicit multi-index broadcasting in double.
double ReferenceBinary(const std::string& op, double a, double b, bool integer) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  return integer ? std::trunc(a / b) : a / b;
}

TEST(BinaryOps, BroadcastingAcrossDtypesAndShapes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5}, {3, 5}}, {{2, 3, 5}, {5}}, {{2, 1, 5}, {3, 1}}, {{1}, {4, 1, 3}},
      {{}, {7}}, {{2, 0, 3}, {1, 3}}, {{7, 1}, {1, 9}}, {{1, 1, 1}, {}}};
  const std::vector<DType> dtypes = {DType::kFloat, DType::kDouble, DType::kInt32, DType::kInt64,
                                     DType::kUInt8, DType::kInt8, DType::kUInt64, DType::kFloat16,
                                     DType::kBFloat16, DType::kInt16, DType::kUInt16, DType::kUInt32};
  uint32_t seed = 1;
  for (const std::string op : {"Add", "Sub", "Mul", "Div"})
    for (DType dtype : dtypes)
      for (const auto& [sa, sb] : shapes) {
        Tensor a = Random(dtype, sa, seed++), b = Random(dtype, sb, seed++);
        absl::StatusOr<Tensor> out = RunOne(14, op, {a, b});
        ASSERT_TRUE(out.ok()) << op << " " << LowerName(dtype) << ": " << out.status();
        const Shape& os = out->shape();
        const std::vector<int64_t> ia = BroadcastStrides(sa, os), ib = BroadcastStrides(sb, os);
        const bool integer = Info(dtype).kind != DTypeKind::kFloat;
        Tensor expected = Tensor::Zeros(dtype, os);
        for (int64_t o = 0; o < ElementCount(os); ++o) {
          int64_t rem = o, pa = 0, pb = 0;
          for (int64_t d = int64_t(os.size()) - 1; d >= 0; --d) {
            const int64_t idx = rem % os[size_t(d)];
            rem /= os[size_t(d)];
            pa += idx * ia[size_t(d)];
            pb += idx * ib[size_t(d)];
          }
          SetDouble(expected, o, ReferenceBinary(op, GetDouble(a, pa), GetDouble(b, pb), integer));
        }
        for (int64_t o = 0; o < ElementCount(os); ++o) {
          if (integer && (op == "Sub" || op == "Mul")) {
            // Unsigned and narrow types wrap: compare in the type.
            EXPECT_EQ(GetDouble(*out, o), GetDouble(expected, o)) << op << " " << LowerName(dtype);
          } else {
            EXPECT_NEAR(GetDouble(*out, o), GetDouble(expected, o),
                        1e-6 * std::fabs(GetDouble(expected, o)) + 1e-9)
                << op << " " << LowerName(dtype) << " at " << o;
          }
        }
      }
}

TEST(BinaryOps, LargeInputsTakeTheThreadedPathAndAgree) {
  Tensor a = Random(DType::kFloat, {300, 1, 513}, 5), b = Random(DType::kFloat, {7, 513}, 6);
  absl::StatusOr<Tensor> one = RunOne(14, "Mul", {a, b}, {}, 1);
  absl::StatusOr<Tensor> two = RunOne(14, "Mul", {a, b}, {}, 2);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->shape(), Shape({300, 7, 513}));
  EXPECT_EQ(std::memcmp(one->raw(), two->raw(), one->bytes()), 0);
  EXPECT_EQ(one->data<float>()[(299 * 7 + 6) * 513 + 512],
            a.data<float>()[299 * 513 + 512] * b.data<float>()[6 * 513 + 512]);
}

TEST(BinaryOps, MismatchedDtypesAreRejected) {
  absl::StatusOr<Tensor> out = RunOne(14, "Add", {Random(DType::kFloat, {2}, 1), Random(DType::kDouble, {2}, 2)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("same element type, got float and double"));
}

TEST(Cast, AmongNumericTypesAgainstElementConversions) {
  const std::vector<DType> types = {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
                                    DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64,
                                    DType::kUInt64, DType::kBool, DType::kFloat8E4M3FN,
                                    DType::kFloat8E5M2FNUZ, DType::kInt4, DType::kUInt4,
                                    DType::kFloat4E2M1, DType::kInt2, DType::kFloat8E8M0};
  const std::vector<double> values = {0, 1, -1, 2.5, -3.75, 7, 100, -0.0};
  Tensor src = Tensor::FromVector<double>(values, {int64_t(values.size())});
  for (DType to : types) {
    absl::StatusOr<Tensor> out =
        RunOne(25, "Cast", {src}, [&](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(to)); });
    ASSERT_TRUE(out.ok()) << LowerName(to) << ": " << out.status();
    ASSERT_EQ(out->dtype(), to);
    Tensor expected = Tensor::Zeros(to, src.shape());
    for (int64_t i = 0; i < src.size(); ++i) SetDouble(expected, i, values[size_t(i)]);
    for (int64_t i = 0; i < src.size(); ++i) EXPECT_EQ(GetDouble(*out, i), GetDouble(expected, i)) << LowerName(to) << " " << i;
  }
  // Spot values: truncation toward zero, int4 wrap, float8 saturation.
  EXPECT_EQ(GetDouble(*RunOne(25, "Cast", {src}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kInt32)); }), 4), -3);
  EXPECT_EQ(GetDouble(*RunOne(25, "Cast", {src}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kInt4)); }), 6), 4);   // 100 wraps to 4
  EXPECT_EQ(GetDouble(*RunOne(25, "Cast", {src}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kUInt2)); }), 5), 3);  // 7 -> 3
  Tensor big = Tensor::FromVector<float>({1000.f, -1e9f}, {2});
  absl::StatusOr<Tensor> sat = RunOne(19, "Cast", {big}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kFloat8E4M3FN)); });
  EXPECT_EQ(GetDouble(*sat, 0), 448);
  EXPECT_EQ(GetDouble(*sat, 1), -448);
  absl::StatusOr<Tensor> nosat = RunOne(19, "Cast", {big}, [](onnx::NodeProto& n) {
    SetAttr(n, "to", int64_t(DType::kFloat8E4M3FN));
    SetAttr(n, "saturate", int64_t(0));
  });
  EXPECT_TRUE(std::isnan(GetDouble(*nosat, 0)));
}

TEST(Cast, StringsAndBadTargetsAreRejected) {
  Tensor s = Tensor::FromVector<std::string>({"1"}, {1});
  absl::StatusOr<Tensor> out = RunOne(19, "Cast", {s}, [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(1)); });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(std::string(out.status().message()), "not implemented: ai.onnx::Cast opset 19 for string");
  absl::StatusOr<Tensor> bad = RunOne(19, "Cast", {Random(DType::kFloat, {1}, 1)},
                                      [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(99)); });
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'to' = 99 is not an element type"));
}

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

TEST(Constant, EveryValueAttribute) {
  auto constant = [](const std::function<void(onnx::NodeProto&)>& attrs) {
    ModelBuilder m(13);
    m.Output("out", DType::kUndefined, {}, false);
    attrs(m.Node("Constant", {}, {"out"}));
    absl::StatusOr<std::unique_ptr<Session>> s = m.Build();
    if (!s.ok()) return absl::StatusOr<Tensor>(s.status());
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({});
    if (!out.ok()) return absl::StatusOr<Tensor>(out.status());
    return absl::StatusOr<Tensor>((*out)[0]);
  };
  EXPECT_EQ(constant([](onnx::NodeProto& n) { SetAttr(n, "value_float", 2.5f); })->data<float>()[0], 2.5f);
  EXPECT_EQ(constant([](onnx::NodeProto& n) { SetAttr(n, "value_ints", std::vector<int64_t>{4, 5}); })->shape(), Shape({2}));
  EXPECT_EQ(constant([](onnx::NodeProto& n) { SetAttr(n, "value_string", std::string("hi")); })->data<std::string>()[0], "hi");
  absl::StatusOr<Tensor> none = constant([](onnx::NodeProto&) {});
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("exactly one value attribute"));
}

}  // namespace
}  // namespace onnx_mini
