// ops/ml/ml.cc: the ai.onnx.ml ops LabelEncoder, Binarizer and
// ArrayFeatureExtractor and TreeEnsemble against hand-computed values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Strings = std::vector<std::string>;

Tensor S(Strings v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
Strings StringsOf(const Tensor& t) { return Strings(t.data<std::string>(), t.data<std::string>() + t.size()); }

void SetStrings(onnx::NodeProto& n, const std::string& name, const Strings& values) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}
void SetFloats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& values) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
}

absl::StatusOr<Tensor> RunMl(int64_t opset, const std::string& op, std::vector<Tensor> inputs,
                             std::function<void(onnx::NodeProto&)> attrs) {
  OpTester t;
  t.op = op;
  t.domain = "ai.onnx.ml";
  t.opset = opset;
  t.inputs = std::move(inputs);
  t.attrs = std::move(attrs);
  return t.RunOne();
}

// ---- LabelEncoder ----

TEST(LabelEncoder, ListsAndDefaults) {
  // string -> int64 with a default; a repeated key: the last one wins.
  absl::StatusOr<Tensor> y = RunMl(2, "LabelEncoder", {S({"a", "b", "", "é", "a"}, {5})}, [](onnx::NodeProto& n) {
    SetStrings(n, "keys_strings", {"a", "é", "b", "a"});
    SetAttr(n, "values_int64s", std::vector<int64_t>{1, 2, 3, 4});
    SetAttr(n, "default_int64", int64_t(-7));
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kInt64);
  EXPECT_THAT(Values(*y), ElementsAre(4, 3, -7, 2, 4));
  // int64 -> string: the default default is "_Unused".
  absl::StatusOr<Tensor> s = RunMl(2, "LabelEncoder", {I({5, 6, 7}, {3, 1})}, [](onnx::NodeProto& n) {
    SetAttr(n, "keys_int64s", std::vector<int64_t>{5, 7});
    SetStrings(n, "values_strings", Strings{"five", "seven"});
  });
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->shape(), Shape({3, 1}));
  EXPECT_EQ(StringsOf(*s), Strings({"five", "_Unused", "seven"}));
  // float -> float: a NaN key matches NaN; the default default is -0.0.
  absl::StatusOr<Tensor> f = RunMl(4, "LabelEncoder", {F({NAN, 1.5f, 2.0f}, {3})}, [](onnx::NodeProto& n) {
    SetFloats(n, "keys_floats", {1.5f, NAN});
    SetFloats(n, "values_floats", {10.f, 20.f});
  });
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(Values(*f), ElementsAre(20, 10, 0));
  EXPECT_TRUE(std::signbit(f->data<float>()[2]));
}

TEST(LabelEncoder, Version1ClassesEitherWay) {
  // default_int64: strings to their first index.
  absl::StatusOr<Tensor> y = RunMl(1, "LabelEncoder", {S({"b", "z", "a", "c"}, {2, 2})}, [](onnx::NodeProto& n) {
    SetStrings(n, "classes_strings", {"a", "b", "a", "c"});
    SetAttr(n, "default_int64", int64_t(-5));
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(1, -5, 0, 3));
  // default_string: indices to strings.
  absl::StatusOr<Tensor> s = RunMl(1, "LabelEncoder", {I({3, 0, 4, -1}, {4})}, [](onnx::NodeProto& n) {
    SetStrings(n, "classes_strings", {"a", "b", "a", "c"});
    SetAttr(n, "default_string", std::string("?"));
  });
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(StringsOf(*s), Strings({"c", "a", "?", "?"}));
  absl::StatusOr<Tensor> neither = RunMl(1, "LabelEncoder", {I({0}, {1})},
                                         [](onnx::NodeProto& n) { SetStrings(n, "classes_strings", {"a"}); });
  EXPECT_THAT(Message(neither.status()), HasSubstr("exactly one of default_int64 and default_string must be set"));
}

TEST(LabelEncoder, TensorAttributes) {
  // int16 keys -> double values, with default_tensor.
  absl::StatusOr<Tensor> y = RunMl(4, "LabelEncoder", {Tensor::FromVector<int16_t>({3, -1, 4}, {3})}, [](onnx::NodeProto& n) {
    SetAttr(n, "keys_tensor", Tensor::FromVector<int16_t>({-1, 3}, {2}));
    SetAttr(n, "values_tensor", Tensor::FromVector<double>({0.25, 0.5}, {2}));
    SetAttr(n, "default_tensor", Tensor::FromVector<double>({9.0}, {1}));
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->dtype(), DType::kDouble);
  EXPECT_THAT(Values(*y), ElementsAre(0.5, 0.25, 9));
  // int32 values without default_tensor default to -1; string keys from a list.
  absl::StatusOr<Tensor> z = RunMl(4, "LabelEncoder", {S({"x", "y"}, {2})}, [](onnx::NodeProto& n) {
    SetStrings(n, "keys_strings", {"x"});
    SetAttr(n, "values_tensor", Tensor::FromVector<int32_t>({8}, {1}));
  });
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->dtype(), DType::kInt32);
  EXPECT_THAT(Values(*z), ElementsAre(8, -1));
  absl::StatusOr<Tensor> empty = RunMl(4, "LabelEncoder", {S({}, {0, 2})}, [](onnx::NodeProto& n) {
    SetStrings(n, "keys_strings", {"x"});
    SetStrings(n, "values_strings", {"y"});
  });
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 2}));
}

TEST(LabelEncoder, BadAttributes) {
  auto error = [](int64_t opset, const Tensor& x, std::function<void(onnx::NodeProto&)> attrs) {
    return Message(RunMl(opset, "LabelEncoder", {x}, std::move(attrs)).status());
  };
  const Tensor x = S({"a"}, {1});
  EXPECT_THAT(error(2, x, [](onnx::NodeProto& n) { SetAttr(n, "values_int64s", std::vector<int64_t>{1}); }),
              HasSubstr("exactly one keys_* attribute must be set, got 0"));
  EXPECT_THAT(error(2, x, [](onnx::NodeProto& n) {
                SetStrings(n, "keys_strings", {"a"});
                SetAttr(n, "keys_int64s", std::vector<int64_t>{1});
                SetAttr(n, "values_int64s", std::vector<int64_t>{1});
              }),
              HasSubstr("exactly one keys_* attribute must be set, got 2"));
  // Version 2 has no tensor attributes.
  EXPECT_THAT(error(2, x, [](onnx::NodeProto& n) {
                SetStrings(n, "keys_strings", {"a"});
                SetAttr(n, "values_tensor", Tensor::FromVector<int64_t>({1}, {1}));
              }),
              HasSubstr("exactly one values_* attribute must be set, got 0"));
  EXPECT_THAT(error(2, x, [](onnx::NodeProto& n) {
                SetStrings(n, "keys_strings", Strings{"a", "b"});
                SetAttr(n, "values_int64s", std::vector<int64_t>{1});
              }),
              HasSubstr("the keys (2) and values (1) must be as many"));
  EXPECT_THAT(error(2, I({1}, {1}), [](onnx::NodeProto& n) {
                SetStrings(n, "keys_strings", {"a"});
                SetAttr(n, "values_int64s", std::vector<int64_t>{1});
              }),
              HasSubstr("X is int64 but the keys are string"));
  EXPECT_THAT(error(4, x, [](onnx::NodeProto& n) {
                SetStrings(n, "keys_strings", {"a"});
                SetAttr(n, "values_tensor", Tensor::FromVector<int64_t>({1}, {1}));
                SetAttr(n, "default_tensor", Tensor::FromVector<float>({1}, {1}));
              }),
              HasSubstr("default_tensor must be one int64 like values_tensor"));
  EXPECT_THAT(error(4, x, [](onnx::NodeProto& n) {
                SetStrings(n, "keys_strings", {"a"});
                SetAttr(n, "values_tensor", Tensor::FromVector<uint8_t>({1}, {1}));
              }),
              HasSubstr("values_tensor must be a tensor of string, int64, float, int32, int16 or double"));
}

// ---- Binarizer ----

TEST(Binarizer, GreaterThanThreshold) {
  absl::StatusOr<Tensor> f = RunMl(1, "Binarizer", {F({0.5f, 0.6f, -1.f, NAN}, {2, 2})},
                                   [](onnx::NodeProto& n) { SetAttr(n, "threshold", 0.5f); });
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*f), ElementsAre(0, 1, 0, 0));
  absl::StatusOr<Tensor> i = RunMl(1, "Binarizer", {Tensor::FromVector<int32_t>({1, 2}, {2})},
                                   [](onnx::NodeProto& n) { SetAttr(n, "threshold", 1.5f); });
  EXPECT_THAT(Values(*i), ElementsAre(0, 1));
  absl::StatusOr<Tensor> d = RunMl(1, "Binarizer", {I({-1, 0, 3}, {3})}, {});
  EXPECT_EQ(d->dtype(), DType::kInt64);
  EXPECT_THAT(Values(*d), ElementsAre(0, 0, 1));
}

// ---- ArrayFeatureExtractor ----

TEST(ArrayFeatureExtractor, SelectsAlongTheLastAxis) {
  absl::StatusOr<Tensor> z = RunMl(1, "ArrayFeatureExtractor", {F({0, 1, 2, 3, 4, 5}, {2, 3}), I({2, 0, 2}, {3})}, {});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->shape(), Shape({2, 3}));
  EXPECT_THAT(Values(*z), ElementsAre(2, 0, 2, 5, 3, 5));
  // A 1-D X gives one row; Y's shape is flattened.
  absl::StatusOr<Tensor> one = RunMl(1, "ArrayFeatureExtractor", {S({"a", "b", "c"}, {3}), I({1, 2}, {1, 2})}, {});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->shape(), Shape({1, 2}));
  EXPECT_EQ(StringsOf(*one), Strings({"b", "c"}));
  absl::StatusOr<Tensor> none = RunMl(1, "ArrayFeatureExtractor", {F({0, 1, 2, 3}, {2, 2}), I({}, {0})}, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), Shape({2, 0}));
  absl::StatusOr<Tensor> bad = RunMl(1, "ArrayFeatureExtractor", {F({0, 1, 2, 3}, {2, 2}), I({0, 2}, {2})}, {});
  EXPECT_THAT(Message(bad.status()), HasSubstr("index Y[1] = 2 is outside [0, 2)"));
  absl::StatusOr<Tensor> negative = RunMl(1, "ArrayFeatureExtractor", {F({0, 1}, {2}), I({-1}, {1})}, {});
  EXPECT_THAT(Message(negative.status()), HasSubstr("index Y[0] = -1 is outside [0, 2)"));
}

// ---- TreeEnsemble ----

// Two trees over features x0, x1 and targets t0, t1:
//   node 0: x0 <= 1 ? leaf 0 (10 -> t0) : node 1
//   node 1: x1 in {2, 3} (NaN goes true) ? leaf 1 (20 -> t1) : leaf 2 (30 -> t0)
//   node 2: x1 > 0.5 ? leaf 3 (1 -> t1) : leaf 4 (2 -> t0)
std::function<void(onnx::NodeProto&)> Trees(int64_t aggregate, const std::function<void(onnx::NodeProto&)>& change = {}) {
  return [=](onnx::NodeProto& n) {
    SetAttr(n, "nodes_featureids", std::vector<int64_t>{0, 1, 1});
    SetAttr(n, "nodes_modes", Tensor::FromVector<uint8_t>({0, 6, 3}, {3}));
    SetAttr(n, "nodes_splits", Tensor::FromVector<float>({1.0f, NAN, 0.5f}, {3}));
    SetAttr(n, "nodes_truenodeids", std::vector<int64_t>{0, 1, 3});
    SetAttr(n, "nodes_trueleafs", std::vector<int64_t>{1, 1, 1});
    SetAttr(n, "nodes_falsenodeids", std::vector<int64_t>{1, 2, 4});
    SetAttr(n, "nodes_falseleafs", std::vector<int64_t>{0, 1, 1});
    SetAttr(n, "nodes_missing_value_tracks_true", std::vector<int64_t>{0, 1, 0});
    SetAttr(n, "leaf_targetids", std::vector<int64_t>{0, 1, 0, 1, 0});
    SetAttr(n, "leaf_weights", Tensor::FromVector<float>({10, 20, 30, 1, 2}, {5}));
    SetAttr(n, "membership_values", Tensor::FromVector<float>({2, 3, NAN}, {3}));
    SetAttr(n, "tree_roots", std::vector<int64_t>{0, 2});
    SetAttr(n, "n_targets", int64_t(2));
    SetAttr(n, "aggregate_function", aggregate);
    if (change) change(n);
  };
}

void Drop(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) attrs->DeleteSubrange(i, 1);
}

void Replace(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& values) {
  for (onnx::AttributeProto& a : *n.mutable_attribute())
    if (a.name() == name) {
      a.clear_ints();
      for (int64_t v : values) a.add_ints(v);
    }
}

TEST(TreeEnsemble, AggregatesLeavesPerTarget) {
  const float big = std::numeric_limits<float>::max();
  const Tensor x = F({0.5f, 0, 2, 3, 5, NAN}, {3, 2});
  const std::vector<std::pair<int64_t, std::vector<double>>> cases = {
      {1, {12, 0, 0, 21, 2, 20}},                       // SUM
      {0, {6, 0, 0, 10.5, 1, 10}},                      // AVERAGE over the 2 trees
      {2, {2, big, big, 1, 2, 20}},                     // MIN; no leaf: the type's max
      {3, {10, -big, -big, 20, 2, 20}},                 // MAX
  };
  for (const auto& [aggregate, want] : cases) {
    absl::StatusOr<Tensor> y = RunMl(5, "TreeEnsemble", {x}, Trees(aggregate));
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), Shape({3, 2}));
    EXPECT_EQ(Values(*y), want) << "aggregate_function " << aggregate;
  }
  absl::StatusOr<Tensor> d = RunMl(5, "TreeEnsemble", {Tensor::FromVector<double>({0.5, 0, 2, 3, 5, NAN}, {3, 2})}, Trees(1));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->dtype(), DType::kDouble);
  EXPECT_EQ(Values(*d), std::vector<double>({12, 0, 0, 21, 2, 20}));
  absl::StatusOr<Tensor> empty = RunMl(5, "TreeEnsemble", {F({}, {0, 2})}, Trees(1));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 2}));
  // A root whose two branches are the same leaf is that leaf: its feature is never read.
  absl::StatusOr<Tensor> leaf = RunMl(5, "TreeEnsemble", {F({7}, {1, 1})}, Trees(1, [](onnx::NodeProto& n) {
    Replace(n, "nodes_featureids", {99, 1, 1});
    Replace(n, "nodes_falsenodeids", {0, 2, 4});
    Replace(n, "nodes_falseleafs", {1, 1, 1});
    Replace(n, "tree_roots", {0});
  }));
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(Values(*leaf), std::vector<double>({10, 0}));
}

TEST(TreeEnsemble, BadTreesFailAtCreation) {
  auto error = [](const std::function<void(onnx::NodeProto&)>& change, Shape shape = {1, 2}) {
    return Message(RunMl(5, "TreeEnsemble", {Tensor::Zeros(DType::kFloat, shape)}, Trees(1, change)).status());
  };
  EXPECT_THAT(error([](onnx::NodeProto& n) {  // node 1's false branch back to node 0
                Replace(n, "nodes_falsenodeids", {1, 0, 4});
                Replace(n, "nodes_falseleafs", {0, 0, 1});
              }),
              HasSubstr("the trees have a cycle through node 0"));
  EXPECT_THAT(error([](onnx::NodeProto& n) { Replace(n, "nodes_truenodeids", {5, 1, 3}); }),
              HasSubstr("node 0's true leaf id 5 is outside [0, 5)"));
  EXPECT_THAT(error([](onnx::NodeProto& n) { Replace(n, "nodes_falsenodeids", {3, 2, 4}); }),
              HasSubstr("node 0's false node id 3 is outside [0, 3)"));
  EXPECT_THAT(error([](onnx::NodeProto& n) { Replace(n, "leaf_targetids", {0, 1, 2, 1, 0}); }),
              HasSubstr("leaf_targetids[2] = 2 is outside [0, 2)"));
  EXPECT_THAT(error([](onnx::NodeProto& n) { Replace(n, "tree_roots", {0, 3}); }), HasSubstr("tree root 3 is outside [0, 3)"));
  EXPECT_THAT(error([](onnx::NodeProto& n) { Replace(n, "nodes_truenodeids", {0, 1}); }),
              HasSubstr("every nodes_* attribute must have 3 entries"));
  EXPECT_THAT(error({}, {1, 1}), HasSubstr("a node reads feature 1 of X's 1"));
  EXPECT_THAT(error([](onnx::NodeProto& n) {
                Drop(n, "nodes_modes");
                SetAttr(n, "nodes_modes", Tensor::FromVector<uint8_t>({0, 7, 3}, {3}));
              }),
              HasSubstr("nodes_modes[1] = 7 is not 0 to 6"));
  EXPECT_THAT(error([](onnx::NodeProto& n) {
                Drop(n, "membership_values");
                SetAttr(n, "membership_values", Tensor::FromVector<float>({}, {0}));
              }),
              HasSubstr("membership_values has no set for node 1"));
  EXPECT_THAT(error([](onnx::NodeProto& n) { SetAttr(n, "post_transform", int64_t(1)); }),
              HasSubstr("not implemented"));
}

}  // namespace
}  // namespace onnx_mini
