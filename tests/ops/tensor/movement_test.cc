// ops/tensor/movement.cc: Concat, Expand, Gather, Slice, Split, Pad, Range, ConstantOfShape, Trilu.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "runtime/element.h"
#include "tests/ops/element_reference.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Movement, ConcatGatherSliceSplitWithNegativeAxesAndEmptyTensors) {
  auto concat = RunNode(13, "Concat", {F({1, 2}, {2, 1}), F({}, {2, 0}), F({3, 4, 5, 6}, {2, 2})}, 1,
                        [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-1)); });
  ASSERT_TRUE(concat.ok()) << concat.status();
  EXPECT_EQ((*concat)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(Values((*concat)[0]), ElementsAre(1, 3, 4, 2, 5, 6));
  EXPECT_THAT(Message(RunNode(13, "Concat", {F({1, 2}, {2, 1}), F({1, 2, 3}, {3, 1})}, 1,
                              [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(1)); }).status()),
              HasSubstr("differs from input 0"));

  Tensor data = F({0, 1, 2, 3, 4, 5}, {2, 3});
  auto gather = RunNode(13, "Gather", {data, I({-1, 0}, {2})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(-1)); });
  EXPECT_THAT(Values((*gather)[0]), ElementsAre(2, 0, 5, 3));
  auto empty = RunNode(13, "Gather", {data, I({}, {0})});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].shape(), Shape({0, 3}));
  EXPECT_THAT(Message(RunNode(13, "Gather", {data, I({2}, {1})}).status()), HasSubstr("index 2 is out of range for axis 0 of size 2"));

  auto slice = RunNode(13, "Slice", {data, I({-1}, {1}), I({-4}, {1}), I({-1}, {1}), I({-1}, {1})});
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_THAT(Values((*slice)[0]), ElementsAre(2, 1, 0, 5, 4, 3));
  auto nothing = RunNode(13, "Slice", {data, I({2}, {1}), I({1}, {1})});
  EXPECT_EQ((*nothing)[0].shape(), Shape({0, 3}));

  auto split = RunNode(18, "Split", {F({1, 2, 3, 4, 5}, {5})}, 3, [](onnx::NodeProto& n) {
    SetAttr(n, "axis", int64_t(-1));
    SetAttr(n, "num_outputs", int64_t(3));
  });
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_THAT(Values((*split)[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values((*split)[2]), ElementsAre(5));
  EXPECT_THAT(Message(RunNode(13, "Split", {F({1, 2, 3}, {3}), I({1, 1}, {2})}, 2).status()), HasSubstr("split sizes sum to 2"));
}

TEST(Movement, SqueezeUnsqueezeExpandPadRangeConstantOfShape) {
  auto squeeze = RunNode(13, "Squeeze", {F({1, 2}, {1, 2, 1}), I({-1, 0}, {2})}, 1, {}, {false, true});
  ASSERT_TRUE(squeeze.ok()) << squeeze.status();
  EXPECT_EQ((*squeeze)[0].shape(), Shape({2}));
  EXPECT_THAT(Message(RunNode(13, "Squeeze", {F({1, 2}, {1, 2}), I({1}, {1})}, 1, {}, {false, true}).status()),
              HasSubstr("its size is 2"));
  auto unsqueeze = RunNode(13, "Unsqueeze", {F({1, 2}, {2}), I({-1, 0}, {2})}, 1, {}, {false, true});
  EXPECT_EQ((*unsqueeze)[0].shape(), Shape({1, 2, 1}));
  auto expand = RunNode(13, "Expand", {F({1, 2}, {2, 1}), I({2, 1, 3}, {3})}, 1, {}, {false, true});
  ASSERT_TRUE(expand.ok()) << expand.status();
  EXPECT_EQ((*expand)[0].shape(), Shape({2, 2, 3}));
  EXPECT_THAT(Values((*expand)[0]), ElementsAre(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
  // Pad with a negative (cropping) pad and each mode.
  Tensor x = F({1, 2, 3}, {3});
  auto pad = [&](const char* mode, std::vector<int64_t> pads) {
    return RunNode(19, "Pad", {x, I(pads, {2})}, 1, [&](onnx::NodeProto& n) { SetAttr(n, "mode", std::string(mode)); });
  };
  EXPECT_THAT(Values((*pad("constant", {2, -1}))[0]), ElementsAre(0, 0, 1, 2));
  EXPECT_THAT(Values((*pad("reflect", {2, 2}))[0]), ElementsAre(3, 2, 1, 2, 3, 2, 1));
  EXPECT_THAT(Values((*pad("edge", {1, 2}))[0]), ElementsAre(1, 1, 2, 3, 3, 3));
  EXPECT_THAT(Values((*pad("wrap", {1, 1}))[0]), ElementsAre(3, 1, 2, 3, 1));
  EXPECT_THAT(Message(pad("constant", {-2, -2}).status()), HasSubstr("below 0"));
  auto range = RunNode(11, "Range", {F({1}, {}), F({2}, {}), F({0.25f}, {})});
  EXPECT_THAT(Values((*range)[0]), ElementsAre(1, 1.25, 1.5, 1.75));
  EXPECT_EQ((*RunNode(11, "Range", {I({5}, {}), I({1}, {}), I({1}, {})}))[0].size(), 0);
  EXPECT_THAT(Message(RunNode(11, "Range", {I({0}, {}), I({1}, {}), I({0}, {})}).status()), HasSubstr("delta must not be 0"));
  auto zeros = RunNode(9, "ConstantOfShape", {I({2, 0}, {2})});
  EXPECT_EQ((*zeros)[0].shape(), Shape({2, 0}));
  EXPECT_EQ((*zeros)[0].dtype(), DType::kFloat);
}

TEST(Pad, TheConstantValueHasTheDataType) {
  // A double constant on int8 data used to be reinterpreted (padding 0, not 7).
  Tensor data = Tensor::FromVector<int8_t>({1, 2}, {2});
  absl::StatusOr<Tensor> out =
      RunOne(18, "Pad", {data, I({1, 1}, {2}), Tensor::FromVector<double>({7}, {})});
  EXPECT_THAT(Message(out.status()), HasSubstr("input 2 is double but input 0 is int8: both have type T"));
  out = RunOne(18, "Pad", {data, I({1, 1}, {2}), Tensor::FromVector<int8_t>({7}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(7, 1, 2, 7));
}

TEST(Movement, IndexInputsOfOtherTypesAreRefusedNotReinterpreted) {
  // Any non-int32 tensor used to be read as int64.
  absl::StatusOr<Tensor> out = RunOne(13, "Expand", {F({1, 2}, {2}), Tensor::FromVector<int32_t>({2, 2}, {2})});
  EXPECT_EQ(Message(out.status()), "not implemented: ai.onnx::Expand opset 13 for int32");
  out = RunOne(13, "Gather", {F({1, 2, 3}, {3}), Tensor::FromVector<int32_t>({2, 0}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(3, 1));
  out = RunOne(13, "Gather", {F({1, 2, 3}, {3}), Tensor::FromVector<uint8_t>({2}, {1})});
  EXPECT_EQ(Message(out.status()), "not implemented: ai.onnx::Gather opset 13 for uint8");
}

TEST(Pad, ConstantModeMatchesAPerElementReferenceForEveryType) {
  // Constant Pad is a fill and a strided copy of the kept part: compare with
  // out[i] = in[i - before] inside the input, else the constant.
  for (DType dtype : MovedTypes())
    for (const std::vector<int64_t>& pads : {std::vector<int64_t>{1, 0, 2, 2, 3, 1}, std::vector<int64_t>{-1, 2, -3, 1, -2, 2},
                                             std::vector<int64_t>{0, 0, 0, 0, 0, 0}, std::vector<int64_t>{0, -5, 0, 0, 0, 0}})
      for (int threads : {1, 2}) {
        const Tensor x = Filled(dtype, {4, 5, 6}, 12), value = Filled(dtype, {}, 13);
        absl::StatusOr<Tensor> y = RunOne(18, "Pad", {x, I(pads, {6}), value}, {}, threads);
        ASSERT_TRUE(y.ok()) << y.status();
        ExpectCopies(*y, [&](std::vector<int64_t> index) {
          for (size_t d = 0; d < 3; ++d) {
            index[d] -= pads[d];
            if (index[d] < 0 || index[d] >= x.dim(int64_t(d))) return std::make_pair(&value, int64_t(0));
          }
          return std::make_pair(&x, FlatIndex(x.shape(), index));
        }, "Pad " + ShapeToString(pads) + " " + LowerName(dtype));
      }
  // An empty input padded to a non-empty output is all constant.
  absl::StatusOr<Tensor> y = RunOne(18, "Pad", {F({}, {2, 0}), I({0, 1, 0, 2}, {4}), F({7}, {})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2, 3}));
  EXPECT_THAT(Values(*y), ElementsAre(7, 7, 7, 7, 7, 7));
}

TEST(Pad, ReflectEdgeWrapMatchAPerElementReference) {
  // Row by row, the kept middle copied whole: compare with out[i] = in[map(i - before)]
  // per dim, the mapping written out here (pads past the dim reflect and wrap again).
  const auto map = [](const std::string& mode, int64_t i, int64_t n) {
    if (i >= 0 && i < n) return i;
    if (mode == "edge") return i < 0 ? int64_t(0) : n - 1;
    if (mode == "wrap") return ((i % n) + n) % n;
    const int64_t period = 2 * (n - 1);
    if (period == 0) return int64_t(0);
    i = ((i % period) + period) % period;
    return i >= n ? period - i : i;
  };
  for (const std::string mode : {"reflect", "edge", "wrap"})
    for (DType dtype : {DType::kFloat, DType::kInt64, DType::kString})
      for (const std::vector<int64_t>& pads :
           {std::vector<int64_t>{1, 0, 2, 2, 3, 4}, std::vector<int64_t>{-1, 2, -3, 1, -2, 2},
            std::vector<int64_t>{0, 0, 64, 0, 0, 64}, std::vector<int64_t>{0, 0, -6, 0, 0, 9},
            std::vector<int64_t>{0, 0, 0, 0, 0, 0}})
        for (int threads : {1, 2}) {
          const Tensor x = Filled(dtype, {3, 4, 6}, 12);
          absl::StatusOr<Tensor> y = RunOne(18, "Pad", {x, I(pads, {6})}, [&](onnx::NodeProto& n) {
            SetAttr(n, "mode", mode);
          }, threads);
          ASSERT_TRUE(y.ok()) << y.status();
          ExpectCopies(*y, [&](std::vector<int64_t> index) {
            for (size_t d = 0; d < 3; ++d) index[d] = map(mode, index[d] - pads[d], x.dim(int64_t(d)));
            return std::make_pair(&x, FlatIndex(x.shape(), index));
          }, "Pad " + mode + " " + ShapeToString(pads) + " " + LowerName(dtype));
        }
  // One element along the reflected dim: every pad reads it.
  absl::StatusOr<Tensor> one = RunOne(18, "Pad", {F({5, 6}, {2, 1}), I({0, 2, 0, 1}, {4})}, [](onnx::NodeProto& n) {
    SetAttr(n, "mode", std::string("reflect"));
  });
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(Values(*one), ElementsAre(5, 5, 5, 5, 6, 6, 6, 6));
  // A scalar: nothing to pad.
  one = RunOne(18, "Pad", {F({7}, {}), I({}, {0})}, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("edge")); });
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(Values(*one), ElementsAre(7));
}

TEST(Trilu, AnEmptyKIsAClearError) {
  absl::StatusOr<Tensor> out = RunOne(14, "Trilu", {F({1, 2, 3, 4}, {2, 2}), I({}, {0})});
  EXPECT_THAT(Message(out.status()), HasSubstr("k must hold one value, got shape [0]"));
  out = RunOne(14, "Trilu", {F({1, 2, 3, 4}, {2, 2}), I({1}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(0, 2, 0, 0));
}

TEST(Movement, ExtremeParametersNeitherOverflowNorAllocate) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  // Slice with a step past the dim takes the first element.
  absl::StatusOr<Tensor> out = RunOne(13, "Slice", {F({1, 2, 3}, {3}), I({0}, {1}), I({3}, {1}), I({0}, {1}), I({kMax}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(1));
  out = RunOne(13, "Slice", {F({1, 2, 3}, {3}), I({-1}, {1}), I({-kMax}, {1}), I({0}, {1}), I({-kMax}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAre(3));
  // Pads that overflow the dim are an error, not a wrapped shape.
  out = RunOne(13, "Pad", {F({1, 2}, {2}), I({kMax, kMax}, {2})});
  EXPECT_THAT(Message(out.status()), HasSubstr("overflow"));
  // A shape input declared with 10^12 entries is refused before anything is built.
  ModelBuilder m(17);
  m.Input("shape", DType::kInt64, {1000000000000}).Output("y", DType::kFloat, {}, false);
  m.Node("ConstantOfShape", {"shape"}, {"y"});
  EXPECT_THAT(Message(m.Build().status()), HasSubstr("the shape input has 1000000000000 entries; the most is 4096"));
}

TEST(Movement, EmptyTensorsWithHugeDimsNeitherOverflowNorLoop) {
  // No elements, but dim products past int64 (or loops of 2^60 empty
  // iterations) if a kernel multiplied or iterated over the dims.
  const int64_t kBig = int64_t(1) << 40;
  const Tensor a = Tensor::Zeros(DType::kFloat, {kBig, kBig, 0});
  const Tensor b = Tensor::Zeros(DType::kFloat, {0, kBig, kBig});
  const auto axis = [](int64_t v) { return [v](onnx::NodeProto& n) { SetAttr(n, "axis", v); }; };
  absl::StatusOr<std::vector<Tensor>> out = RunNode(13, "Concat", {a, a}, 1, axis(2));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({kBig, kBig, 0}));
  out = RunNode(13, "Gather", {a, I({0, 0}, {2})}, 1, axis(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({kBig, 2, 0}));
  out = RunNode(13, "Split", {b, I({kBig / 2, kBig / 2}, {2})}, 2, axis(2));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), Shape({0, kBig, kBig / 2}));
  out = RunNode(13, "Slice", {b, I({1, 1}, {2}), I({kBig, kBig}, {2}), I({1, 2}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, kBig - 1, kBig - 1}));
  out = RunNode(13, "Expand", {F({}, {0, 1, 1}), I({0, kBig, kBig}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].size(), 0);
  // Pads that crop the huge dims to 1 and pad the empty one: a [1, 1, 1] of the constant.
  out = RunNode(13, "Pad", {b, I({1, 0, 0, 0, 1 - kBig, 1 - kBig}, {6}), F({7}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(7));
  // Concatenated sizes that overflow are an error.
  const Tensor c = Tensor::Zeros(DType::kFloat, {0, std::numeric_limits<int64_t>::max() / 2 + 1});
  EXPECT_THAT(Message(RunNode(13, "Concat", {c, c}, 1, axis(1)).status()), HasSubstr("overflows"));
}

// The ops that run on the strided copy (kernels/copy/copy.cc), against per-element
// references, for every element size, bool and strings, on 1 and 2 threads.
TEST(Movement, CopiesMatchAPerElementReferenceForEveryType) {
  auto axis = [](int64_t a) { return [a](onnx::NodeProto& n) { SetAttr(n, "axis", a); }; };
  for (DType dtype : MovedTypes())
    for (int threads : {1, 2}) {
      const std::string type = LowerName(dtype) + (threads > 1 ? " on 2 threads" : "");
      // Expand: every broadcast pattern of a [2, 3, 4, 5] target (input dims 1 or
      // full, and fewer dims), and a wider target than the input.
      const Shape target = {2, 3, 4, 5};
      for (unsigned mask = 0; mask < 16; ++mask) {
        Shape in;
        for (size_t d = 0; d < 4; ++d) in.push_back(mask & (1u << d) ? 1 : target[d]);
        if (mask == 1) in.erase(in.begin());  // rank 3
        const Tensor x = Filled(dtype, in, mask);
        absl::StatusOr<Tensor> y = RunOne(13, "Expand", {x, I(target, {4})}, {}, threads);
        ASSERT_TRUE(y.ok()) << y.status();
        ASSERT_EQ(y->shape(), target);
        ExpectCopies(*y, [&](const std::vector<int64_t>& index) {
          std::vector<int64_t> at(index.end() - int64_t(in.size()), index.end());
          for (size_t k = 0; k < in.size(); ++k) if (in[k] == 1) at[k] = 0;
          return std::make_pair(&x, FlatIndex(in, at));
        }, "Expand " + ShapeToString(in) + " " + type);
      }
      // Concat along each axis of [3, 4, 5]-like inputs, one of them empty there.
      for (int64_t a = 0; a < 3; ++a) {
        std::vector<Tensor> parts;
        for (int64_t n : {2, 0, 3}) {
          Shape shape = {3, 4, 5};
          shape[size_t(a)] = n;
          parts.push_back(Filled(dtype, shape, uint32_t(n + 10 * a)));
        }
        absl::StatusOr<Tensor> y = RunOne(13, "Concat", parts, axis(a), threads);
        ASSERT_TRUE(y.ok()) << y.status();
        ExpectCopies(*y, [&](std::vector<int64_t> index) {
          size_t p = 0;
          while (index[size_t(a)] >= parts[p].dim(a)) index[size_t(a)] -= parts[p++].dim(a);
          return std::make_pair(&parts[p], FlatIndex(parts[p].shape(), index));
        }, "Concat axis " + std::to_string(a) + " " + type);
      }
      // Split [4, 7, 5] along axis 1 into 2, 0 and 5, and back into Concat's inputs.
      const Tensor whole = Filled(dtype, {4, 7, 5}, 3);
      absl::StatusOr<std::vector<Tensor>> pieces = RunNode(13, "Split", {whole, I({2, 0, 5}, {3})}, 3, axis(1), {}, threads);
      ASSERT_TRUE(pieces.ok()) << pieces.status();
      for (int64_t p = 0, offset = 0; p < 3; offset += (*pieces)[size_t(p)].dim(1), ++p)
        ExpectCopies((*pieces)[size_t(p)], [&](std::vector<int64_t> index) {
          index[1] += offset;
          return std::make_pair(&whole, FlatIndex(whole.shape(), index));
        }, "Split piece " + std::to_string(p) + " " + type);
      // Slice [6, 9, 10] with steps 1 (contiguous runs), 2 and -1 and -3.
      const Tensor data = Filled(dtype, {6, 9, 10}, 4);
      struct Case { std::vector<int64_t> starts, ends, axes, steps; };
      for (const Case& c : {Case{{1, 2, 1}, {5, 7, 9}, {0, 1, 2}, {1, 1, 1}}, Case{{0, 1}, {6, 10}, {2, 0}, {2, 1}},
                            Case{{-1, 8}, {-100, 0}, {0, 1}, {-1, -3}}, Case{{3}, {4}, {1}, {1}}}) {
        absl::StatusOr<Tensor> y = RunOne(13, "Slice", {data, I(c.starts, {int64_t(c.starts.size())}),
                                                        I(c.ends, {int64_t(c.ends.size())}), I(c.axes, {int64_t(c.axes.size())}),
                                                        I(c.steps, {int64_t(c.steps.size())})}, {}, threads);
        ASSERT_TRUE(y.ok()) << y.status();
        std::vector<int64_t> start(3, 0), step(3, 1);
        for (size_t i = 0; i < c.axes.size(); ++i) {
          const int64_t d = data.dim(c.axes[i]);
          start[size_t(c.axes[i])] = std::min(c.starts[i] < 0 ? c.starts[i] + d : c.starts[i], c.steps[i] < 0 ? d - 1 : d);
          step[size_t(c.axes[i])] = c.steps[i];
        }
        ExpectCopies(*y, [&](std::vector<int64_t> index) {
          for (size_t k = 0; k < 3; ++k) index[k] = start[k] + index[k] * step[k];
          return std::make_pair(&data, FlatIndex(data.shape(), index));
        }, "Slice " + type);
      }
      // Gather rows (axis 0, an embedding lookup) and columns (axis 1).
      const Tensor table = Filled(dtype, {7, 8, 3}, 5);
      const Tensor ids = I({6, 0, -1, 3, 3, 2}, {2, 3});
      for (int64_t a : {0, 1}) {
        absl::StatusOr<Tensor> y = RunOne(13, "Gather", {table, ids}, axis(a), threads);
        ASSERT_TRUE(y.ok()) << y.status();
        ExpectCopies(*y, [&](const std::vector<int64_t>& index) {
          // index = outer dims, the ids' two dims, inner dims.
          int64_t id = ids.data<int64_t>()[index[size_t(a)] * 3 + index[size_t(a) + 1]];
          if (id < 0) id += table.dim(a);
          std::vector<int64_t> at(index.begin(), index.begin() + a);
          at.push_back(id);
          at.insert(at.end(), index.begin() + a + 2, index.end());
          return std::make_pair(&table, FlatIndex(table.shape(), at));
        }, "Gather axis " + std::to_string(a) + " " + type);
      }
    }
}

TEST(Movement, LegacyForms) {
  // Concat-1: axis defaults to 1.
  absl::StatusOr<Tensor> y = RunOne(1, "Concat", {F({1, 2}, {2, 1}), F({3, 4}, {2, 1})});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{2, 2}));
  EXPECT_THAT(Values(*y), ElementsAre(1, 3, 2, 4));
  EXPECT_FALSE(RunOne(4, "Concat", {F({1}, {1}), F({2}, {1})}).ok());
  // Pad-1: the attribute is `paddings`.
  y = RunOne(1, "Pad", {F({1, 2}, {1, 2})}, [](onnx::NodeProto& n) {
    SetAttr(n, "paddings", std::vector<int64_t>{0, 1, 0, 0});
    SetAttr(n, "value", 7.0f);
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(Values(*y), ElementsAre(7, 1, 2));
  // Split-1: the sizes as an attribute or as a second input of the data's type.
  absl::StatusOr<std::vector<Tensor>> parts = RunNode(1, "Split", {F({1, 2, 3, 4, 5}, {5}), F({2, 3}, {2})}, 2);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_THAT(Values((*parts)[1]), ElementsAre(3, 4, 5));
  parts = RunNode(1, "Split", {F({1, 2, 3, 4, 5}, {5})}, 2, [](onnx::NodeProto& n) { SetAttr(n, "split", std::vector<int64_t>{4, 1}); });
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_THAT(Values((*parts)[1]), ElementsAre(5));
}

}  // namespace
}  // namespace onnx_mini
