// Sequence and optional ops (ops/control/sequence.cc) against plain references:
// SplitToSequence/ConcatFromSequence over dtypes, shapes (odd, empty) and
// axes; positions of SequenceAt/Insert/Erase; SequenceMap; the optionals;
// sequences as graph inputs and outputs.
#include <gtest/gtest.h>

#include "ops/common.h"
#include "tests/ops/budget_util.h"
#include "tests/ops/graph_util.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

// The slice [begin, begin + length) of x along axis, by plain index arithmetic.
Tensor RefSlice(const Tensor& x, int64_t axis, int64_t begin, int64_t length) {
  Shape shape = x.shape();
  shape[size_t(axis)] = length;
  Tensor out = Tensor::Zeros(x.dtype(), shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    // Out index -> in index: unravel, shift the axis coordinate, ravel.
    int64_t rem = i, in = 0, stride = 1;
    for (int64_t d = x.rank() - 1; d >= 0; --d) {
      const int64_t c = rem % shape[size_t(d)];
      rem /= shape[size_t(d)];
      in += (d == axis ? c + begin : c) * stride;
      stride *= x.dim(d);
    }
    SetDouble(out, i, GetDouble(x, in));
  }
  return out;
}

void ExpectSame(const Tensor& want, const Tensor& got) {
  ASSERT_EQ(want.dtype(), got.dtype());
  ASSERT_EQ(want.shape(), got.shape());
  EXPECT_EQ(Values(want), Values(got));
}

ModelBuilder SplitConcat(DType dtype, const Shape& shape, int64_t axis, const Tensor* split, bool keepdims) {
  ModelBuilder m(17);
  std::vector<int64_t> dims(shape.begin(), shape.end());
  m.Input("x", dtype, dims);
  std::vector<std::string> ins = {"x"};
  if (split) {
    m.Initializer("split", *split);
    ins.push_back("split");
  }
  onnx::NodeProto& s = m.Node("SplitToSequence", ins, {"seq"});
  SetAttr(s, "axis", axis);
  if (!keepdims) SetAttr(s, "keepdims", int64_t(0));
  AddValueInfo(m.graph().mutable_output(), "seq", dtype, "sequence");
  m.Node("SequenceLength", {"seq"}, {"n"});
  m.Output("n", DType::kInt64, {});
  onnx::NodeProto& c = m.Node("ConcatFromSequence", {"seq"}, {"y"});
  SetAttr(c, "axis", axis);
  if (!keepdims && !split) SetAttr(c, "new_axis", int64_t(1));
  m.Output("y", dtype, dims);
  return m;
}

TEST(SequenceTest, SplitThenConcatIsIdentityAcrossTypesShapesAndAxes) {
  struct Case {
    Shape shape;
    int64_t axis;
    std::vector<int64_t> lengths;  // empty: no split input; one entry: a scalar chunk
    bool keepdims = true;
  };
  const std::vector<Case> cases = {
      {{5}, 0, {}},          {{3, 7}, 1, {2, 0, 5}}, {{3, 7}, -1, {3}},   {{2, 3, 5}, 1, {}, false},
      {{4, 0, 3}, 2, {1, 2}}, {{4, 1}, 0, {4}},       {{6, 5}, 0, {}, false}, {{1, 9, 2}, 1, {4}},
  };
  for (DType dtype : {DType::kFloat, DType::kInt64, DType::kBool, DType::kFloat16, DType::kUInt8}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(absl::StrCat(LowerName(dtype), " ", ShapeToString(c.shape), " axis ", c.axis));
      const Tensor x = Random(dtype, c.shape, 7);
      Tensor split;
      if (c.lengths.size() == 1) split = I({c.lengths[0]}, {});
      else if (!c.lengths.empty()) split = I(c.lengths, {int64_t(c.lengths.size())});
      ModelBuilder m = SplitConcat(dtype, c.shape, c.axis, split.defined() ? &split : nullptr, c.keepdims);
      auto out = RunModel(m, {{"x", x}});
      ASSERT_TRUE(out.ok()) << out.status();
      const int64_t axis = c.axis < 0 ? c.axis + int64_t(c.shape.size()) : c.axis;
      const int64_t n = c.shape[size_t(axis)];
      // The reference pieces.
      std::vector<int64_t> lengths = c.lengths;
      if (lengths.empty()) lengths.assign(size_t(n), 1);
      if (c.lengths.size() == 1) {
        lengths.clear();
        for (int64_t at = 0; at < n; at += c.lengths[0]) lengths.push_back(std::min(c.lengths[0], n - at));
      }
      const Value& seq = (*out)[0];
      ASSERT_TRUE(seq.is_sequence());
      ASSERT_EQ(seq.sequence().size(), lengths.size());
      int64_t at = 0;
      for (size_t k = 0; k < lengths.size(); ++k) {
        Tensor want = RefSlice(x, axis, at, lengths[k]);
        if (c.lengths.empty() && !c.keepdims) {
          Shape s = want.shape();
          s.erase(s.begin() + axis);
          want = want.Reshaped(s);
        }
        ExpectSame(want, seq.sequence()[k]);
        at += lengths[k];
      }
      EXPECT_EQ(Values((*out)[1].tensor()), std::vector<double>{double(lengths.size())});
      if (n > 0) ExpectSame(x, (*out)[2].tensor());
    }
  }
}

TEST(SequenceTest, SplitLengthsMustSumToTheAxis) {
  const Tensor split = I({2, 2}, {2});
  ModelBuilder m = SplitConcat(DType::kFloat, {5}, 0, &split, true);
  auto out = RunModel(m, {{"x", F({1, 2, 3, 4, 5}, {5})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(Message(out.status()).find("split lengths sum to 4 but the axis has 5"), std::string::npos)
      << out.status();
}

// seq = [a, b]; then Insert(c at p_insert), Erase(p_erase), At(p_at).
absl::StatusOr<std::vector<Value>> EditSequence(int64_t p_insert, int64_t p_erase, int64_t p_at) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {1}).Input("b", DType::kFloat, {2}).Input("c", DType::kFloat, {3});
  m.Initializer("pi", I({p_insert}, {})).Initializer("pe", I({p_erase}, {}));
  m.Initializer("pa", Tensor::FromVector(std::vector<int32_t>{int32_t(p_at)}, {}));
  m.Node("SequenceConstruct", {"a", "b"}, {"s0"});
  m.Node("SequenceInsert", {"s0", "c", "pi"}, {"s1"});
  m.Node("SequenceErase", {"s1", "pe"}, {"s2"});
  m.Node("SequenceAt", {"s2", "pa"}, {"item"});
  AddValueInfo(m.graph().mutable_output(), "s1", DType::kFloat, "sequence");
  AddValueInfo(m.graph().mutable_output(), "s2", DType::kFloat, "sequence");
  m.Output("item", DType::kFloat, {-1});
  return RunModel(m, {{"a", F({1}, {1})}, {"b", F({2, 2}, {2})}, {"c", F({3, 3, 3}, {3})}});
}

std::vector<int64_t> Sizes(const Value& seq) {
  std::vector<int64_t> sizes;
  for (const Tensor& t : seq.sequence()) sizes.push_back(t.size());
  return sizes;
}

TEST(SequenceTest, InsertEraseAtPositions) {
  // A plain model of the list: items named by their size (1, 2, 3).
  for (int64_t pi = -2; pi <= 2; ++pi)
    for (int64_t pe = -3; pe <= 2; ++pe)
      for (int64_t pa = -2; pa <= 1; ++pa) {
        SCOPED_TRACE(absl::StrCat("insert ", pi, " erase ", pe, " at ", pa));
        std::vector<int64_t> list = {1, 2};
        list.insert(list.begin() + (pi < 0 ? pi + 2 : pi), 3);
        std::vector<int64_t> erased = list;
        erased.erase(erased.begin() + (pe < 0 ? pe + 3 : pe));
        auto out = EditSequence(pi, pe, pa);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ(Sizes((*out)[0]), list);
        EXPECT_EQ(Sizes((*out)[1]), erased);
        EXPECT_EQ((*out)[2].tensor().size(), erased[size_t(pa < 0 ? pa + 2 : pa)]);
      }
}

TEST(SequenceTest, PositionsOutOfRangeAreErrors) {
  auto insert = EditSequence(3, 0, 0);
  ASSERT_FALSE(insert.ok());
  EXPECT_NE(Message(insert.status()).find("position 3 is out of range [-2, 2] for a sequence of 2"),
            std::string::npos) << insert.status();
  auto erase = EditSequence(0, -4, 0);
  ASSERT_FALSE(erase.ok());
  EXPECT_NE(Message(erase.status()).find("position -4 is out of range [-3, 2]"), std::string::npos);
  auto at = EditSequence(0, 0, 2);
  ASSERT_FALSE(at.ok());
  EXPECT_NE(Message(at.status()).find("position 2 is out of range [-2, 1]"), std::string::npos);
}

TEST(SequenceTest, ConcatStacksOnANewAxisAndChecksShapes) {
  ModelBuilder m(17);
  AddValueInfo(m.graph().mutable_input(), "seq", DType::kFloat, "sequence");
  onnx::NodeProto& c = m.Node("ConcatFromSequence", {"seq"}, {"y"});
  SetAttr(c, "axis", int64_t(1));
  SetAttr(c, "new_axis", int64_t(1));
  m.Output("y", DType::kFloat, {2, 3, 2}, false);
  const Tensor a = Random(DType::kFloat, {2, 2}, 1), b = Random(DType::kFloat, {2, 2}, 2),
               d = Random(DType::kFloat, {2, 2}, 3);
  auto out = RunModel(m, {{"seq", Seq({a, b, d})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2}));
  const Tensor* items[] = {&a, &b, &d};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t j = 0; j < 2; ++j)
        EXPECT_EQ(y.data<float>()[(i * 3 + k) * 2 + j], items[k]->data<float>()[i * 2 + j]);
  auto bad = RunModel(m, {{"seq", Seq({a, Random(DType::kFloat, {2, 3}, 4)})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(Message(bad.status()).find("item 1 is float[2,3] but item 0 is float[2,2]"), std::string::npos)
      << bad.status();
  auto empty = RunModel(m, {{"seq", Value::Sequence(DType::kFloat, {})}});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(Message(empty.status()).find("cannot concatenate an empty sequence"), std::string::npos);
}

TEST(SequenceTest, SequenceInputsAndOutputsNeedTheValueInterface) {
  ModelBuilder m(17);
  AddValueInfo(m.graph().mutable_input(), "seq", DType::kInt64, "sequence");
  m.Node("SequenceLength", {"seq"}, {"n"});
  m.Output("n", DType::kInt64, {});
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> outputs;
  absl::Status s = (*session)->Run({}, &outputs);
  EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
  std::vector<Value> values;
  ASSERT_TRUE((*session)->RunValues({{"seq", Seq({I({1}, {1}), I({2, 3}, {2})})}}, &values).ok());
  EXPECT_EQ(Values(values[0].tensor()), std::vector<double>{2});
  // The wrong element type is named.
  s = (*session)->RunValues({{"seq", Seq({F({1}, {1})})}}, &values);
  EXPECT_NE(Message(s).find("must be sequence(int64[?]), got a sequence of float"), std::string::npos) << s;
  s = (*session)->RunValues({{"seq", I({1}, {1})}}, &values);
  EXPECT_NE(Message(s).find("got tensor int64[1]"), std::string::npos) << s;
}

TEST(SequenceTest, SequenceMapRunsTheBodyPerItem) {
  // out[k] = seq[k] * w + bias, w a tensor shared by every iteration.
  ModelBuilder body(17);
  body.Input("item", DType::kFloat, {-1}, false).Input("w", DType::kFloat, {}, false);
  body.Node("Mul", {"item", "w"}, {"p"});
  body.Node("Add", {"p", "bias"}, {"out"});  // bias: an outer-scope value
  body.Output("out", DType::kFloat, {}, false);
  ModelBuilder m(17);
  AddValueInfo(m.graph().mutable_input(), "seq", DType::kFloat, "sequence");
  m.Input("w", DType::kFloat, {});
  m.Input("b", DType::kFloat, {});
  m.Node("Neg", {"b"}, {"bias"});
  SetGraph(m.Node("SequenceMap", {"seq", "w"}, {"mapped"}), "body", Body(body));
  AddValueInfo(m.graph().mutable_output(), "mapped", DType::kFloat, "sequence");
  const std::vector<Tensor> items = {F({1, 2, 3}, {3}), F({}, {0}), F({-4, 5}, {2, 1})};
  auto out = RunModel(m, {{"seq", Seq(items)}, {"w", F({2}, {})}, {"b", F({0.5f}, {})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Value& mapped = (*out)[0];
  ASSERT_EQ(mapped.sequence().size(), items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    std::vector<double> want;
    for (double v : Values(items[k])) want.push_back(v * 2 - 0.5);
    EXPECT_EQ(mapped.sequence()[k].shape(), items[k].shape());
    EXPECT_EQ(Values(mapped.sequence()[k]), want);
  }
}

// Optional(x) or an empty Optional, then OptionalHasElement and OptionalGetElement.
TEST(SequenceTest, OptionalsHoldATensorASequenceOrNothing) {
  ModelBuilder m(18);
  AddValueInfo(m.graph().mutable_input(), "opt", DType::kFloat, "optional");
  m.Input("x", DType::kFloat, {2});
  m.Node("OptionalHasElement", {"opt"}, {"has"});
  m.Node("Optional", {"x"}, {"wrapped"});
  m.Node("OptionalGetElement", {"wrapped"}, {"unwrapped"});
  m.Node("OptionalHasElement", {""}, {"absent"});
  m.Output("has", DType::kBool, {}).Output("unwrapped", DType::kFloat, {2}).Output("absent", DType::kBool, {});
  auto with = RunModel(m, {{"opt", F({1}, {1})}, {"x", F({3, 4}, {2})}});
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(Values((*with)[0].tensor()), std::vector<double>{1});
  EXPECT_EQ(Values((*with)[1].tensor()), (std::vector<double>{3, 4}));
  EXPECT_EQ(Values((*with)[2].tensor()), std::vector<double>{0});
  auto without = RunModel(m, {{"opt", Value()}, {"x", F({3, 4}, {2})}});
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(Values((*without)[0].tensor()), std::vector<double>{0});

  // Getting the element of an empty optional (of a sequence type) is an error.
  ModelBuilder e(16);
  onnx::NodeProto& o = e.Node("Optional", {}, {"none"});
  onnx::AttributeProto* type = o.add_attribute();
  type->set_name("type");
  type->set_type(13);  // TYPE_PROTO
  type->mutable_tp()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(1);
  e.Node("OptionalGetElement", {"none"}, {"seq"});
  AddValueInfo(e.graph().mutable_output(), "seq", DType::kFloat, "sequence");
  auto empty = RunModel(e, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(Message(empty.status()).find("the optional input has no element"), std::string::npos) << empty.status();
}

// Storage a sequence holds is never written in place by a later op.
TEST(SequenceTest, ItemsAreNotOverwrittenInPlace) {
  ModelBuilder m(17);
  m.Input("a", DType::kFloat, {3}).Input("b", DType::kFloat, {3});
  m.Node("Add", {"a", "b"}, {"x"});
  m.Node("SequenceConstruct", {"x"}, {"seq"});
  m.Node("Neg", {"x"}, {"y"});  // x's last reader: an in-place candidate
  AddValueInfo(m.graph().mutable_output(), "seq", DType::kFloat, "sequence");
  m.Output("y", DType::kFloat, {3});
  auto out = RunModel(m, {{"a", F({1, 2, 3}, {3})}, {"b", F({1, 1, 1}, {3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0].sequence()[0]), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(Values((*out)[1].tensor()), (std::vector<double>{-2, -3, -4}));
}

// Every element type the rows declare, through every sequence and optional op.
TEST(SequenceTest, EveryDeclaredTypeRuns) {
  for (int code = 1; code <= kMaxDTypeCode; ++code) {
    const DType dtype = DType(code);
    if (!kAllTypes.contains(dtype)) continue;
    SCOPED_TRACE(LowerName(dtype));
    const bool copied = kUnpackedTypes.contains(dtype);  // Split/ConcatFromSequence copy elements
    ModelBuilder m(18);
    m.Input("x", dtype, {2, 2});
    m.Initializer("zero", I({0}, {}));
    SetAttr(m.Node("SequenceEmpty", {}, {"empty"}), "dtype", int64_t(code));
    m.Node("SequenceInsert", {"empty", "x"}, {"one"});
    m.Node("SequenceConstruct", {"x", "x"}, {"two"});
    m.Node("SequenceErase", {"two", "zero"}, {"erased"});
    m.Node("SequenceAt", {"erased", "zero"}, {"at"});
    m.Node("SequenceLength", {"one"}, {"n"});
    m.Node("Optional", {"at"}, {"opt"});
    m.Node("OptionalHasElement", {"opt"}, {"has"});
    m.Node("OptionalGetElement", {"opt"}, {"got"});
    m.Node("Identity", {"two"}, {"same"});
    m.Output("got", dtype, {2, 2}).Output("n", DType::kInt64, {}).Output("has", DType::kBool, {});
    AddValueInfo(m.graph().mutable_output(), "same", dtype, "sequence");
    if (copied) {
      SetAttr(m.Node("SplitToSequence", {"x"}, {"rows"}), "axis", int64_t(0));
      SetAttr(m.Node("ConcatFromSequence", {"rows"}, {"joined"}), "axis", int64_t(0));
      m.Output("joined", dtype, {2, 2});
    }
    const Tensor x = Tensor::Zeros(dtype, {2, 2});
    auto out = RunModel(m, {{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].tensor().dtype(), dtype);
    EXPECT_EQ(Values((*out)[1].tensor()), std::vector<double>{1});
    EXPECT_EQ(Values((*out)[2].tensor()), std::vector<double>{1});
    EXPECT_EQ((*out)[3].sequence().size(), 2u);
    if (copied) {
      EXPECT_EQ((*out)[4].tensor().shape(), (Shape{2, 2}));
    }
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: a sequence's items (their blocks and bookkeeping) and
// the stacked ConcatFromSequence count against the session's memory budget.
TEST(SequenceTest, ItemsCountAgainstTheMemoryLimit) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1, 4});
  onnx::NodeProto& split = m.Node("SplitToSequence", {"x"}, {"seq"});
  split.set_name("split");
  SetAttr(split, "keepdims", int64_t(0));
  m.Node("SequenceLength", {"seq"}, {"n"});
  m.Output("n", DType::kInt64, {});
  SetAttr(m.Node("ConcatFromSequence", {"seq"}, {"y"}), "axis", int64_t(0));
  m.Output("y", DType::kFloat, {-1});
  const auto rows = [](int64_t n) {
    Tensor t = Tensor::Zeros(DType::kFloat, {n, 4});
    for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = float(i);
    return t;
  };
  // 100,000 items of 16 bytes take some 20 MB in blocks and bookkeeping: over 4 MiB.
  const std::vector<Value> out =
      RunOverThenUnderBudget(m, {{"x", rows(100000)}}, size_t(4) << 20, "split", {{"x", rows(100)}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tensor().data<int64_t>()[0], 100000);
  const Tensor& y = out[1].tensor();
  ASSERT_EQ(y.shape(), (Shape{400000}));
  for (int64_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data<float>()[i], float(i));
}

// An axis of 2^40 empty slices: refused before anything is allocated.
TEST(SequenceTest, AHugeAxisOfEmptySlicesIsRefused) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1, 0});
  onnx::NodeProto& split = m.Node("SplitToSequence", {"x"}, {"seq"});
  split.set_name("split");
  AddValueInfo(m.graph().mutable_output(), "seq", DType::kFloat, "sequence");
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  float none = 0;
  std::vector<Value> out;
  const absl::Status s = (*session)->RunValues({{"x", Tensor::Borrow(DType::kFloat, {int64_t(1) << 40, 0}, &none)}}, &out);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_NE(Message(s).find("'split'"), std::string::npos) << s;
}

}  // namespace
}  // namespace onnx_mini
