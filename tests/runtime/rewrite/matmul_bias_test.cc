// runtime/rewrite/matmul_bias.cc: MatMul + bias.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/runtime/rewrite/rewrite_test_util.h"

namespace onnx_mini {
namespace {

TEST(Rewrite, MatMulPlusBiasBecomesFusedMatMul) {
  for (DType dt : {DType::kFloat, DType::kBFloat16, DType::kDouble, DType::kInt32})
    for (bool bias_first : {false, true})
      for (Shape a_shape : {Shape{2, 5, 24}, Shape{24}, Shape{1, 24}}) {
        ModelBuilder m(17);
        m.Input("a", dt, std::vector<int64_t>(a_shape.begin(), a_shape.end())).Output("y", dt, {}, false);
        m.Output("z", dt, {}, false);
        m.Initializer("w", RandomUniform(dt, {24, 7}, 2));
        m.Initializer("b", RandomUniform(dt, {7}, 3));
        m.Initializer("b2", RandomUniform(dt, {1, 7}, 4));
        m.Node("MatMul", {"a", "w"}, {"p"});
        if (bias_first) m.Node("Add", {"b", "p"}, {"y"});
        else m.Node("Add", {"p", "b"}, {"y"});
        // A 2-D bias: left as written.
        m.Node("MatMul", {"a", "w"}, {"q"});
        m.Node("Add", {"q", "b2"}, {"z"});
        const Tensor a = RandomUniform(dt, a_shape, 6);
        EXPECT_THAT(RunBothWays(m, {{"a", a}}, dt == DType::kBFloat16 ? 1e-2 : 1e-5),
                    ::testing::ElementsAre("FusedMatMul", "MatMul", "Add"))
            << LowerName(dt) << " " << ShapeToString(a_shape);
      }
}

}  // namespace
}  // namespace onnx_mini
