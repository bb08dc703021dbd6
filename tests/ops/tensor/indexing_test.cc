// ops/tensor/indexing.cc: GatherElements, GatherND, Scatter, ScatterElements,
// ScatterND, OneHot, Compress, NonZero, Unique. Expected values by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/element.h"
#include "tests/ops/op_tester.h"
#include "tests/ops/poison_util.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Axis(int64_t axis) {
  return [axis](onnx::NodeProto& n) { SetAttr(n, "axis", axis); };
}
Attrs Reduction(const std::string& r, int64_t axis = 0) {
  return [r, axis](onnx::NodeProto& n) {
    SetAttr(n, "reduction", r);
    SetAttr(n, "axis", axis);
  };
}
Tensor S(std::vector<std::string> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
std::vector<std::string> Strings(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.size());
}

TEST(GatherElements, AlongEachAxisWithNegativeIndices) {
  auto a1 = RunOne(13, "GatherElements", {F({1, 2, 3, 4}, {2, 2}), I({0, 0, 1, 0}, {2, 2})}, Axis(1));
  ASSERT_TRUE(a1.ok()) << a1.status();
  EXPECT_THAT(Values(*a1), ElementsAre(1, 1, 4, 3));
  const Tensor data = F({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  auto a0 = RunOne(13, "GatherElements", {data, I({1, 2, 0, 2, 0, 0}, {2, 3})});
  ASSERT_TRUE(a0.ok()) << a0.status();
  EXPECT_EQ(a0->shape(), Shape({2, 3}));
  EXPECT_THAT(Values(*a0), ElementsAre(4, 8, 3, 7, 2, 3));
  auto neg = RunOne(13, "GatherElements", {data, I({-1, -2, 0, -2, 0, 0}, {2, 3})});
  EXPECT_THAT(Values(*neg), ElementsAre(7, 5, 3, 4, 2, 3));
  // int32 indices, strings.
  auto s = RunOne(11, "GatherElements", {S({"a", "b", "c"}, {3}), Tensor::FromVector<int32_t>({2, 0}, {2})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(Strings(*s), ElementsAre("c", "a"));
  auto empty = RunOne(13, "GatherElements", {data, I({}, {0, 3})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 3}));
}

TEST(GatherElements, BadIndicesAndShapes) {
  const Tensor data = F({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT(Message(RunOne(13, "GatherElements", {data, I({0, 3}, {1, 2})}, Axis(1)).status()),
              HasSubstr("index 3 (indices element 1) is out of range for axis 1 of size 3: valid are -3 to 2"));
  EXPECT_THAT(Message(RunOne(13, "GatherElements", {data, I({-4}, {1, 1})}, Axis(-1)).status()),
              HasSubstr("index -4"));
  EXPECT_THAT(Message(RunOne(13, "GatherElements", {data, I({0}, {1})}).status()), HasSubstr("must have the rank"));
  EXPECT_THAT(Message(RunOne(13, "GatherElements", {data, I({0, 0, 0, 0}, {1, 4})}).status()),
              HasSubstr("exceed data"));
  EXPECT_THAT(Message(RunOne(13, "GatherElements", {data, I({0}, {1, 1})}, Axis(2)).status()),
              HasSubstr("axis 2 is out of range for rank 2"));
  // An index into an empty axis.
  EXPECT_THAT(Message(RunOne(13, "GatherElements", {F({}, {0, 2}), I({0}, {1, 1})}).status()),
              HasSubstr("it has no valid index"));
}

TEST(GatherND, TuplesSlicesBatchDimsAndNegatives) {
  const Tensor d2 = Tensor::FromVector<int32_t>({0, 1, 2, 3}, {2, 2});
  auto elems = RunOne(13, "GatherND", {d2, I({0, 0, 1, 1}, {2, 2})});
  ASSERT_TRUE(elems.ok()) << elems.status();
  EXPECT_EQ(elems->dtype(), DType::kInt32);
  EXPECT_THAT(Values(*elems), ElementsAre(0, 3));
  auto rows = RunOne(13, "GatherND", {d2, I({1, 0}, {2, 1})});
  EXPECT_EQ(rows->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*rows), ElementsAre(2, 3, 0, 1));
  const Tensor d3 = F({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  auto nested = RunOne(13, "GatherND", {d3, I({0, 1, 1, 0}, {2, 1, 2})});
  EXPECT_EQ(nested->shape(), Shape({2, 1, 2}));
  EXPECT_THAT(Values(*nested), ElementsAre(2, 3, 4, 5));
  auto batched = RunOne(13, "GatherND", {d3, I({1, 0}, {2, 1})},
                        [](onnx::NodeProto& n) { SetAttr(n, "batch_dims", int64_t(1)); });
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_EQ(batched->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*batched), ElementsAre(2, 3, 4, 5));
  auto neg = RunOne(13, "GatherND", {d2, I({-1, -2}, {1, 2})});
  EXPECT_THAT(Values(*neg), ElementsAre(2));
  auto empty = RunOne(13, "GatherND", {d2, I({}, {0, 2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0}));
  EXPECT_THAT(Message(RunOne(13, "GatherND", {d2, I({0, 0, 2, 0}, {2, 2})}).status()),
              HasSubstr("index 2 (indices element 2) is out of range for data dim 0 of size 2"));
  EXPECT_THAT(Message(RunOne(13, "GatherND", {d2, I({0, 0, 0}, {1, 3})}).status()),
              HasSubstr("last dim 3 exceeds the rank of data 2"));
  EXPECT_THAT(Message(RunOne(13, "GatherND", {d2, I({0}, {1, 1})},
                             [](onnx::NodeProto& n) { SetAttr(n, "batch_dims", int64_t(2)); })
                          .status()),
              HasSubstr("batch_dims 2 must be less than"));
  EXPECT_THAT(Message(RunOne(13, "GatherND", {d3, I({0, 0, 0}, {3, 1})},
                             [](onnx::NodeProto& n) { SetAttr(n, "batch_dims", int64_t(1)); })
                          .status()),
              HasSubstr("batch dim 0 differs"));
}

TEST(ScatterElements, EveryReduction) {
  const Tensor data = F({1, 2, 3, 4, 5}, {1, 5});
  const Tensor upd = F({1.5f, 2.5f}, {1, 2});
  auto none = RunOne(18, "ScatterElements", {data, I({1, 3}, {1, 2}), upd}, Axis(1));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(Values(*none), ElementsAre(1, 1.5, 3, 2.5, 5));
  auto neg = RunOne(18, "ScatterElements", {data, I({1, -3}, {1, 2}), upd}, Axis(1));
  EXPECT_THAT(Values(*neg), ElementsAre(1, 1.5, 2.5, 4, 5));
  const Tensor dup = I({1, 1}, {1, 2});
  auto run = [&](const std::string& r) { return RunOne(18, "ScatterElements", {data, dup, upd}, Reduction(r, 1)); };
  EXPECT_THAT(Values(*run("add")), ElementsAre(1, 6, 3, 4, 5));
  EXPECT_THAT(Values(*run("mul")), ElementsAre(1, 7.5, 3, 4, 5));
  EXPECT_THAT(Values(*run("max")), ElementsAre(1, 2.5, 3, 4, 5));
  EXPECT_THAT(Values(*run("min")), ElementsAre(1, 1.5, 3, 4, 5));
  // Integers wrap; bool add is or, mul is and.
  auto wrap = RunOne(18, "ScatterElements",
                     {Tensor::FromVector<int32_t>({std::numeric_limits<int32_t>::max()}, {1}), I({0}, {1}),
                      Tensor::FromVector<int32_t>({1}, {1})},
                     Reduction("add"));
  ASSERT_TRUE(wrap.ok()) << wrap.status();
  EXPECT_EQ(wrap->data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  auto bor = RunOne(18, "ScatterElements", {B({false, true}, {2}), I({0, 1}, {2}), B({true, false}, {2})},
                    Reduction("add"));
  EXPECT_THAT(Values(*bor), ElementsAre(1, 1));
  auto band = RunOne(18, "ScatterElements", {B({false, true}, {2}), I({0, 1}, {2}), B({true, false}, {2})},
                     Reduction("mul"));
  EXPECT_THAT(Values(*band), ElementsAre(0, 0));
  auto f16 = RunOne(18, "ScatterElements",
                    {Tensor::FromVector<Float16>({ToFloat16(1.0f)}, {1}), I({0}, {1}),
                     Tensor::FromVector<Float16>({ToFloat16(0.5f)}, {1})},
                    Reduction("add"));
  EXPECT_THAT(Values(*f16), ElementsAre(1.5));
  auto str = RunOne(13, "ScatterElements", {S({"a", "b"}, {2}), I({1}, {1}), S({"z"}, {1})});
  ASSERT_TRUE(str.ok()) << str.status();
  EXPECT_THAT(Strings(*str), ElementsAre("a", "z"));
}

TEST(ScatterElements, DeprecatedScatterAndErrors) {
  auto s = RunOne(10, "Scatter", {F(std::vector<float>(9, 0), {3, 3}), I({1, 0, 2, 0, 2, 1}, {2, 3}),
                                  F({1, 1.1f, 1.2f, 2, 2.1f, 2.2f}, {2, 3})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(Values(*s), ElementsAre(2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f));
  const Tensor data = F({1, 2, 3}, {3});
  EXPECT_THAT(Message(RunOne(18, "ScatterElements", {data, I({0, 3}, {2}), F({7, 8}, {2})}).status()),
              HasSubstr("index 3 (indices element 1) is out of range for axis 0 of size 3"));
  EXPECT_THAT(Message(RunOne(18, "ScatterElements", {data, I({0, 1}, {2}), F({7}, {1})}).status()),
              HasSubstr("must have the shape of indices"));
  EXPECT_THAT(Message(RunOne(16, "ScatterElements", {data, I({0}, {1}), F({7}, {1})}, Reduction("max")).status()),
              HasSubstr("reduction 'max' is not one of none, add, mul (opset 16)"));
  EXPECT_THAT(Message(RunOne(13, "ScatterElements", {data, I({0}, {1}), F({7}, {1})}, Reduction("add")).status()),
              HasSubstr("is not one of none (opset 13)"));
  EXPECT_THAT(Message(RunOne(18, "ScatterElements", {S({"a"}, {1}), I({0}, {1}), S({"b"}, {1})}, Reduction("add"))
                          .status()),
              HasSubstr("reduction 'add' is not defined for string"));
  auto empty = RunOne(18, "ScatterElements", {data, I({}, {0}), F({}, {0})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(Values(*empty), ElementsAre(1, 2, 3));
}

TEST(ScatterElements, UpdatesTheInputInPlaceWhenBoundToIt) {
  Tensor data = F({1, 2, 3}, {3});
  OpTester t;
  t.op = "ScatterElements";
  t.opset = 18;
  t.inputs = {data, I({2}, {1}), F({9}, {1})};
  t.bound = {data};
  auto out = t.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(1, 2, 9));
  EXPECT_THAT(Values(data), ElementsAre(1, 2, 9));
  // A bad index leaves the bound input untouched.
  t.inputs = {data, I({0, 5}, {2}), F({0, 0}, {2})};
  t.bound = {data};
  EXPECT_FALSE(t.Run().ok());
  EXPECT_THAT(Values(data), ElementsAre(1, 2, 9));
}

TEST(ScatterND, ElementsSlicesReductionsAndErrors) {
  auto elems = RunOne(18, "ScatterND", {F({1, 2, 3, 4, 5, 6, 7, 8}, {8}), I({4, 3, 1, 7}, {4, 1}), F({9, 10, 11, 12}, {4})});
  ASSERT_TRUE(elems.ok()) << elems.status();
  EXPECT_THAT(Values(*elems), ElementsAre(1, 11, 3, 10, 9, 6, 7, 12));
  const Tensor d2 = F({1, 2, 3, 4}, {2, 2});
  auto rows = RunOne(18, "ScatterND", {d2, I({-1}, {1, 1}), F({5, 6}, {1, 2})});
  EXPECT_THAT(Values(*rows), ElementsAre(1, 2, 5, 6));
  auto run = [&](const std::string& r) {
    return RunOne(18, "ScatterND", {d2, I({0, 0, 0, 0, 1, 1}, {3, 2}), F({5, 2, 0}, {3})},
                  [r](onnx::NodeProto& n) { SetAttr(n, "reduction", r); });
  };
  EXPECT_THAT(Values(*run("add")), ElementsAre(8, 2, 3, 4));
  EXPECT_THAT(Values(*run("mul")), ElementsAre(10, 2, 3, 0));
  EXPECT_THAT(Values(*run("max")), ElementsAre(5, 2, 3, 4));
  EXPECT_THAT(Values(*run("min")), ElementsAre(1, 2, 3, 0));
  EXPECT_THAT(Values(*run("none")), ElementsAre(2, 2, 3, 0));  // the last of duplicates, in order
  EXPECT_THAT(Message(RunOne(18, "ScatterND", {d2, I({0, 2}, {1, 2}), F({5}, {1})}).status()),
              HasSubstr("index 2 (indices element 1) is out of range for data dim 1 of size 2"));
  EXPECT_THAT(Message(RunOne(18, "ScatterND", {d2, I({0}, {1, 1}), F({5}, {1})}).status()),
              HasSubstr("must have shape [1,2]"));
  EXPECT_THAT(Message(RunOne(18, "ScatterND", {d2, I({0, 0, 0}, {1, 3}), F({5}, {1})}).status()),
              HasSubstr("exceeds the rank of data 2"));
  auto empty = RunOne(18, "ScatterND", {d2, I({}, {0, 2}), F({}, {0})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(Values(*empty), ElementsAre(1, 2, 3, 4));
}

TEST(OneHot, AxesNegativeIndicesAndTypes) {
  auto last = RunOne(11, "OneHot", {I({0, -1, 3}, {3}), F({3}, {}), F({0, 1}, {2})});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->shape(), Shape({3, 3}));
  EXPECT_THAT(Values(*last), ElementsAre(1, 0, 0, 0, 0, 1, 0, 0, 0));
  // OneHot-9 takes no negative indices: all off.
  auto v9 = RunOne(9, "OneHot", {I({0, -1}, {2}), F({3}, {}), F({0, 1}, {2})});
  EXPECT_THAT(Values(*v9), ElementsAre(1, 0, 0, 0, 0, 0));
  auto first = RunOne(11, "OneHot", {F({1.7f, 0}, {2}), I({2}, {1}), Tensor::FromVector<int32_t>({5, 7}, {2})}, Axis(0));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->dtype(), DType::kInt32);
  EXPECT_EQ(first->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*first), ElementsAre(5, 7, 7, 5));
  auto mid = RunOne(11, "OneHot", {I({1, 0, 2, 1}, {2, 2}), F({3}, {}), F({0, 1}, {2})}, Axis(1));
  EXPECT_EQ(mid->shape(), Shape({2, 3, 2}));
  EXPECT_THAT(Values(*mid), ElementsAre(0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0));
  auto big = RunOne(11, "OneHot", {Tensor::FromVector<uint64_t>({~uint64_t(0), 1}, {2}), F({2}, {}), F({0, 1}, {2})});
  EXPECT_THAT(Values(*big), ElementsAre(0, 0, 0, 1));
  auto empty = RunOne(11, "OneHot", {I({}, {0}), F({4}, {}), F({0, 1}, {2})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 4}));
  EXPECT_THAT(Message(RunOne(11, "OneHot", {I({0}, {1}), F({0}, {}), F({0, 1}, {2})}).status()),
              HasSubstr("depth must be positive, got 0"));
  EXPECT_THAT(Message(RunOne(11, "OneHot", {I({0}, {1}), F({2}, {}), F({0, 1, 2}, {3})}).status()),
              HasSubstr("values must be [off_value, on_value]"));
  EXPECT_THAT(Message(RunOne(11, "OneHot", {I({0}, {1}), F({2}, {}), F({0, 1}, {2})}, Axis(2)).status()),
              HasSubstr("axis 2 is out of range for rank 2"));
}

TEST(Compress, AxesFlattenedAndErrors) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {3, 2});
  auto a0 = RunOne(11, "Compress", {x, B({false, true, true}, {3})}, Axis(0));
  ASSERT_TRUE(a0.ok()) << a0.status();
  EXPECT_EQ(a0->shape(), Shape({2, 2}));
  EXPECT_THAT(Values(*a0), ElementsAre(3, 4, 5, 6));
  auto a1 = RunOne(11, "Compress", {x, B({false, true}, {2})}, Axis(-1));
  EXPECT_EQ(a1->shape(), Shape({3, 1}));
  EXPECT_THAT(Values(*a1), ElementsAre(2, 4, 6));
  auto flat = RunOne(11, "Compress", {x, B({false, true, false, false, true}, {5})});
  EXPECT_EQ(flat->shape(), Shape({2}));
  EXPECT_THAT(Values(*flat), ElementsAre(2, 5));
  // Longer than the axis is fine while the extra entries are false.
  auto longer = RunOne(11, "Compress", {x, B({true, false, false, false}, {4})}, Axis(0));
  EXPECT_THAT(Values(*longer), ElementsAre(1, 2));
  auto none = RunOne(11, "Compress", {x, B({false, false}, {2})}, Axis(0));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), Shape({0, 2}));
  EXPECT_THAT(Message(RunOne(11, "Compress", {x, B({false, false, false, true}, {4})}, Axis(0)).status()),
              HasSubstr("condition[3] is true but axis 0 has 3 entries"));
  EXPECT_THAT(Message(RunOne(11, "Compress", {x, B({true}, {1, 1})}).status()), HasSubstr("condition must be 1-D"));
}

TEST(NonZero, CoordinatesScalarsAndEmpty) {
  auto b = RunOne(13, "NonZero", {B({true, false, true, true}, {2, 2})});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->shape(), Shape({2, 3}));
  EXPECT_THAT(Values(*b), ElementsAre(0, 1, 1, 0, 0, 1));
  auto f = RunOne(13, "NonZero", {F({0, -0.0f, std::nanf(""), 2}, {4})});
  EXPECT_THAT(Values(*f), ElementsAre(2, 3));
  auto s = RunOne(13, "NonZero", {S({"", "a"}, {2})});
  EXPECT_THAT(Values(*s), ElementsAre(1));
  auto scalar = RunOne(13, "NonZero", {F({5}, {})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->shape(), Shape({0, 1}));
  auto empty = RunOne(13, "NonZero", {F({}, {0, 3})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({2, 0}));
}

// bool memory from a caller may hold bytes other than 0 and 1 (a 0/255 mask):
// the count that sizes the output and the pass that fills it agree on every
// byte (non-zero is true), so no output entry is left unwritten. A mask large
// enough to take a pooled block, with poisoning on so an unwritten entry shows,
// at one thread and two.
TEST(NonZero, BoolBytesOtherThanOneCountOnceEach) {
  ScopedPoison poison;
  const int64_t rows = 512, cols = 256;
  Tensor mask = Tensor::Zeros(DType::kBool, {rows, cols});
  unsigned char* bytes = static_cast<unsigned char*>(mask.raw());
  std::vector<int64_t> expect_r, expect_c;
  for (int64_t i = 0; i < mask.size(); ++i) {
    if (i % 5 == 0 || i % 7 == 0) {
      bytes[i] = i % 2 ? 255 : 2;
      expect_r.push_back(i / cols);
      expect_c.push_back(i % cols);
    }
  }
  const int64_t count = int64_t(expect_r.size());
  for (int threads : {1, 2}) {
    auto out = RunOne(13, "NonZero", {mask}, {}, threads);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->shape(), Shape({2, count})) << threads << " threads";
    EXPECT_EQ(PoisonedElements(*out), 0);
    const int64_t* p = out->data<int64_t>();
    EXPECT_EQ(std::vector<int64_t>(p, p + count), expect_r);
    EXPECT_EQ(std::vector<int64_t>(p + count, p + 2 * count), expect_c);
  }
}

TEST(Unique, SortedUnsortedAxesAndAllOutputs) {
  const Tensor x = F({2, 1, 1, 3, 4, 3}, {6});
  auto sorted = RunNode(11, "Unique", {x}, 4);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_THAT(Values((*sorted)[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(Values((*sorted)[1]), ElementsAre(1, 0, 3, 4));
  EXPECT_THAT(Values((*sorted)[2]), ElementsAre(1, 0, 0, 2, 3, 2));
  EXPECT_THAT(Values((*sorted)[3]), ElementsAre(2, 1, 2, 1));
  auto unsorted = RunNode(11, "Unique", {x}, 4, [](onnx::NodeProto& n) { SetAttr(n, "sorted", int64_t(0)); });
  ASSERT_TRUE(unsorted.ok()) << unsorted.status();
  EXPECT_THAT(Values((*unsorted)[0]), ElementsAre(2, 1, 3, 4));
  EXPECT_THAT(Values((*unsorted)[1]), ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(Values((*unsorted)[2]), ElementsAre(0, 1, 1, 2, 3, 2));
  EXPECT_THAT(Values((*unsorted)[3]), ElementsAre(1, 2, 2, 1));
  auto rows = RunNode(11, "Unique", {F({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3})}, 4, Axis(0));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(Values((*rows)[0]), ElementsAre(1, 0, 0, 2, 3, 4));
  EXPECT_THAT(Values((*rows)[1]), ElementsAre(0, 2));
  EXPECT_THAT(Values((*rows)[2]), ElementsAre(0, 0, 1));
  EXPECT_THAT(Values((*rows)[3]), ElementsAre(2, 1));
  // Slices along the middle axis of [2, 4, 2], compared across the whole slice.
  auto mid = RunNode(11, "Unique", {F({1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1}, {2, 4, 2})}, 4, Axis(-2));
  ASSERT_TRUE(mid.ok()) << mid.status();
  EXPECT_EQ((*mid)[0].shape(), Shape({2, 3, 2}));
  EXPECT_THAT(Values((*mid)[0]), ElementsAre(0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1));
  EXPECT_THAT(Values((*mid)[1]), ElementsAre(1, 0, 2));
  EXPECT_THAT(Values((*mid)[2]), ElementsAre(1, 0, 2, 0));
  EXPECT_THAT(Values((*mid)[3]), ElementsAre(2, 1, 1));
}

TEST(Unique, NaNStringsEmptyAndErrors) {
  auto nan = RunNode(11, "Unique", {F({std::nanf(""), 1, std::nanf("")}, {3})}, 4);
  ASSERT_TRUE(nan.ok()) << nan.status();
  ASSERT_EQ((*nan)[0].size(), 2);
  EXPECT_EQ(Values((*nan)[0])[0], 1);
  EXPECT_TRUE(std::isnan(Values((*nan)[0])[1]));
  EXPECT_THAT(Values((*nan)[3]), ElementsAre(1, 2));
  auto s = RunNode(11, "Unique", {S({"b", "a", "b"}, {3})}, 3);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(Strings((*s)[0]), ElementsAre("a", "b"));
  EXPECT_THAT(Values((*s)[2]), ElementsAre(1, 0, 1));
  // Only some outputs requested.
  OpTester t;
  t.op = "Unique";
  t.opset = 11;
  t.inputs = {I({3, 3, 1}, {3})};
  t.output_names = {"y", "", "", "counts"};
  auto some = t.Run();
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_THAT(Values((*some)[0]), ElementsAre(1, 3));
  EXPECT_THAT(Values((*some)[1]), ElementsAre(1, 2));
  auto empty = RunNode(11, "Unique", {F({}, {0})}, 4);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].shape(), Shape({0}));
  EXPECT_EQ((*empty)[2].shape(), Shape({0}));
  EXPECT_THAT(Message(RunNode(11, "Unique", {F({1}, {1})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "sorted", int64_t(2)); })
                          .status()),
              HasSubstr("sorted must be 0 or 1, got 2"));
  EXPECT_THAT(Message(RunNode(11, "Unique", {F({1}, {1})}, 1, Axis(1)).status()),
              HasSubstr("axis 1 is out of range for rank 1"));
}

}  // namespace
}  // namespace onnx_mini
