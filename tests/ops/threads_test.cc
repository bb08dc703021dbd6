// The loops that moved from OpenMP to the kernels' pool (issue 24): each op,
// at a size its loop splits at, gives the same bytes on 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/element.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using Attrs = std::function<void(onnx::NodeProto&)>;

struct Case {
  std::string name;
  OpTester t;
};

OpTester Op(const std::string& op, int64_t opset, std::vector<Tensor> inputs, Attrs attrs = {}, size_t outputs = 1) {
  OpTester t;
  t.op = op;
  t.opset = opset;
  t.inputs = std::move(inputs);
  t.attrs = std::move(attrs);
  t.outputs = outputs;
  return t;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes() == b.bytes() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

std::vector<Case> Cases() {
  const DType f = DType::kFloat, d = DType::kDouble;
  std::vector<Case> c;
  const Tensor image = Random(f, {1, 2, 128, 128}, 1);
  const Tensor scales = F({1, 1, 2, 2}, {4});
  c.push_back({"Resize nearest", Op("Resize", 13, {image, Tensor(), scales})});
  c.push_back({"Resize linear", Op("Resize", 13, {image, Tensor(), scales}, [](onnx::NodeProto& n) {
                 SetAttr(n, "mode", std::string("linear"));
               })});
  const Tensor planes = Random(f, {2, 8, 64, 64}, 2);
  const Tensor ch = RandomUniform(f, {8}, 3, 0.5, 2), ch2 = RandomUniform(f, {8}, 4, -1, 1);
  c.push_back({"LRN", Op("LRN", 13, {planes}, [](onnx::NodeProto& n) { SetAttr(n, "size", int64_t(3)); })});
  c.push_back({"InstanceNormalization", Op("InstanceNormalization", 6, {planes, ch, ch2})});
  c.push_back({"GroupNormalization", Op("GroupNormalization", 21, {planes, ch, ch2}, [](onnx::NodeProto& n) {
                 SetAttr(n, "num_groups", int64_t(4));
               })});
  c.push_back({"BatchNormalization", Op("BatchNormalization", 15, {planes, ch, ch2, ch2, ch})});
  const Tensor xd = Random(d, {1, 8, 32, 32}, 5), wd = RandomUniform(d, {8, 8, 3, 3}, 6, -1, 1);
  const Attrs pads = [](onnx::NodeProto& n) { SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1}); };
  c.push_back({"Conv double", Op("Conv", 11, {xd, wd}, pads)});
  c.push_back({"ConvTranspose double", Op("ConvTranspose", 11, {xd, wd}, pads)});
  const Tensor pd = Random(d, {1, 8, 64, 64}, 7);
  const Attrs k3 = [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{3, 3}); };
  c.push_back({"MaxPool double", Op("MaxPool", 12, {pd}, k3)});
  c.push_back({"AveragePool double", Op("AveragePool", 19, {pd}, k3)});
  for (DType t : {f, d}) {
    const Tensor x = Random(t, {1, 4, 32, 32}, 8), w = RandomUniform(t, {4, 4, 3, 3}, 9, -1, 1);
    const Tensor offset = RandomUniform(t, {1, 18, 30, 30}, 10, -2, 2);
    c.push_back({std::string("DeformConv ") + Info(t).name, Op("DeformConv", 19, {x, w, offset})});
  }
  c.push_back({"DFT", Op("DFT", 20, {RandomUniform(f, {64, 512, 1}, 11, -1, 1)})});
  std::vector<std::string> words;
  for (int i = 0; i < 4096; ++i) words.push_back(std::string(size_t(i % 7), 'a') + (i % 3 ? "b" : "c"));
  c.push_back({"RegexFullMatch", Op("RegexFullMatch", 20, {Tensor::FromVector(words, {4096})},
                                    [](onnx::NodeProto& n) { SetAttr(n, "pattern", std::string("a+b")); })});
  c.push_back({"Einsum double", Op("Einsum", 12, {Random(d, {4, 64, 64}, 12), Random(d, {4, 64, 64}, 13)},
                                   [](onnx::NodeProto& n) { SetAttr(n, "equation", std::string("bij,bjk->bik")); })});
  c.push_back({"MatMul int32", Op("MatMul", 13, {Random(DType::kInt32, {128, 128}, 14),
                                                 Random(DType::kInt32, {128, 128}, 15)})});
  c.push_back({"Gemm double", Op("Gemm", 13, {Random(d, {128, 128}, 16), Random(d, {128, 128}, 17)})});
  const Tensor rows = Random(f, {512, 256}, 18);
  c.push_back({"ReduceSum rows", Op("ReduceSum", 13, {rows, I({1}, {1})})});
  c.push_back({"ReduceLogSumExp columns", Op("ReduceLogSumExp", 18, {rows, I({0}, {1})})});
  c.push_back({"Softmax rows", Op("Softmax", 13, {rows})});
  c.push_back({"Softmax columns", Op("Softmax", 13, {rows}, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(0)); })});
  c.push_back({"Hardmax", Op("Hardmax", 13, {Random(d, {512, 256}, 19)})});
  c.push_back({"TensorScatter", Op("TensorScatter", 24, {Random(f, {4, 8, 256, 64}, 20), Random(f, {4, 8, 64, 64}, 21),
                                                         I({0, 10, 100, 192}, {4})})});
  c.push_back({"SwiGLU", Op("SwiGLU", 28, {rows, Random(f, {512, 256}, 22)})});
  const Tensor zp = Tensor::FromVector<uint8_t>({128}, {});
  c.push_back({"QuantizeLinear", Op("QuantizeLinear", 21, {rows, Tensor::FromVector<float>({0.25f}, {}), zp})});
  c.push_back({"QuantizeLinear per row", Op("QuantizeLinear", 21, {rows, RandomUniform(f, {512}, 27, 0.1, 1)},
                                            [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(0)); })});
  c.push_back({"DynamicQuantizeLinear", Op("DynamicQuantizeLinear", 11, {rows}, {}, 3)});
  const Tensor qa = Random(DType::kUInt8, {128, 128}, 23), qb = Random(DType::kUInt8, {128, 128}, 24);
  c.push_back({"MatMulInteger", Op("MatMulInteger", 10, {qa, qb})});
  c.push_back({"MatMulInteger zero points", Op("MatMulInteger", 10, {qa, qb, zp, zp})});
  const Attrs to_int = [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kInt32)); };
  const Attrs to_int64 = [](onnx::NodeProto& n) { SetAttr(n, "to", int64_t(DType::kInt64)); };
  c.push_back({"Cast float to int32", Op("Cast", 21, {rows}, to_int)});
  c.push_back({"Cast int32 to int64", Op("Cast", 21, {Random(DType::kInt32, {512, 256}, 25)}, to_int64)});
  return c;
}

TEST(Threads, MovedLoopsGiveTheSameBytesOnOneTwoAndThreeThreads) {
  for (Case& c : Cases()) {
    c.t.threads = 1;
    absl::StatusOr<std::vector<Tensor>> one = c.t.Run();
    ASSERT_TRUE(one.ok()) << c.name << ": " << one.status();
    bool nonzero = false;
    for (const Tensor& t : *one)
      for (int64_t i = 0; i < t.size() && !nonzero; ++i) nonzero = t.dtype() != DType::kString && GetDouble(t, i) != 0;
    EXPECT_TRUE(nonzero) << c.name << ": all zeros, a vacuous case";
    for (int threads : {2, 3}) {
      c.t.threads = threads;
      absl::StatusOr<std::vector<Tensor>> many = c.t.Run();
      ASSERT_TRUE(many.ok()) << c.name << ": " << many.status();
      ASSERT_EQ(many->size(), one->size()) << c.name;
      for (size_t o = 0; o < one->size(); ++o)
        EXPECT_TRUE(SameBytes((*one)[o], (*many)[o])) << c.name << ", output " << o << ", " << threads << " threads";
    }
  }
}

// runtime/tensor.cc's large copies: 2 MiB in 64 KiB chunks on the pool.
TEST(Threads, CopyElementsSplitsLargeCopies) {
  const Tensor src = Random(DType::kFloat, {1 << 19}, 26);
  for (int threads : {1, 2, 3}) {
    Tensor dst = Tensor::Zeros(DType::kFloat, {1 << 19});
    CopyElements(src, dst, threads);
    EXPECT_TRUE(SameBytes(src, dst)) << threads << " threads";
  }
}

}  // namespace
}  // namespace onnx_mini
