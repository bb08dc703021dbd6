// ops/math/einsum.cc: the equation parser, the planned evaluation against the
// reference loop across equations, dtypes and shapes, and the op itself.
#include "ops/math/einsum.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/element.h"
#include "tests/ops/budget_util.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Attrs Equation(const std::string& eq) {
  return [eq](onnx::NodeProto& n) { SetAttr(n, "equation", eq); };
}

TEST(Einsum, HandComputedProducts) {
  const Tensor a = F({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = F({1, 0, 0, 1, 1, 1}, {3, 2});
  auto mm = RunNode(12, "Einsum", {a, b}, 1, Equation("ij,jk->ik"));
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_THAT(Values((*mm)[0]), ElementsAre(4, 5, 10, 11));
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {a}, Equation("ij->ji"))), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {a}, Equation("ij->"))), ElementsAre(21));
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {a}, Equation("ij->j"))), ElementsAre(5, 7, 9));
  const Tensor sq = F({1, 2, 3, 4}, {2, 2});
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {sq}, Equation("ii->i"))), ElementsAre(1, 4));
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {sq}, Equation("ii"))), ElementsAre(5));  // implicit: the trace
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {F({1, 2}, {2}), F({3, 4}, {2})}, Equation("i,i"))), ElementsAre(11));
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {F({1, 2}, {2}), F({3, 4, 5}, {3})}, Equation("i,j->ij"))),
              ElementsAre(3, 4, 5, 6, 8, 10));
  // Implicit output: the letters used once, sorted ("ba" -> "ab" transposes).
  EXPECT_THAT(Values(*RunOne(12, "Einsum", {a}, Equation("ba"))), ElementsAre(1, 4, 2, 5, 3, 6));
  // Ellipsis batch dims broadcast: [2,1,2] x [3,2] -> [2,1,3] per batch row... here a batched mat-vec.
  auto bmv = RunOne(12, "Einsum", {F({1, 2, 3, 4}, {2, 1, 2}), F({1, 1}, {2})}, Equation("...j,j->..."));
  ASSERT_TRUE(bmv.ok()) << bmv.status();
  EXPECT_EQ(bmv->shape(), Shape({2, 1}));
  EXPECT_THAT(Values(*bmv), ElementsAre(3, 7));
  auto ints = RunOne(12, "Einsum", {I({1, 2, 3, 4}, {2, 2}), I({1, 1}, {2})}, Equation("ij,j->i"));
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ(ints->dtype(), DType::kInt64);
  EXPECT_THAT(Values(*ints), ElementsAre(3, 7));
  auto scalar = RunOne(12, "Einsum", {F({3}, {})}, Equation("->"));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_THAT(Values(*scalar), ElementsAre(3));
  auto empty = RunOne(12, "Einsum", {F({}, {2, 0}), F({}, {0, 3})}, Equation("ij,jk->ik"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(Values(*empty), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(Einsum, Errors) {
  const Tensor a = F({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a}, Equation("ijk->i")).status()), HasSubstr("3 letters for an input of rank 2"));
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a}, Equation("i1->i")).status()), HasSubstr("has '1'"));
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a}, Equation("ij->ik")).status()), HasSubstr("output label 'k' is in no input"));
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a}, Equation("ij->ii")).status()), HasSubstr("is repeated"));
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a, a}, Equation("ij,jk->ik")).status()),
              HasSubstr("label 'j' has size 3 and 2"));
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a, a}, Equation("ij->ij")).status()), HasSubstr("1 operand terms for 2 inputs"));
  EXPECT_THAT(Message(RunOne(12, "Einsum", {a}).status()), HasSubstr("'equation' is required"));
}

// The planned evaluation against the reference loop.
void Compare(const std::string& eq, const std::vector<Shape>& shapes, DType dtype, uint32_t seed) {
  std::vector<Tensor> operands;
  std::vector<int64_t> ranks;
  for (const Shape& s : shapes) {
    operands.push_back(Random(dtype, s, seed++));
    ranks.push_back(int64_t(s.size()));
  }
  absl::StatusOr<EinsumLabels> labels = ParseEinsum(eq, ranks);
  ASSERT_TRUE(labels.ok()) << eq << ": " << labels.status();
  absl::StatusOr<EinsumProblem> p = ResolveEinsum(*labels, shapes);
  ASSERT_TRUE(p.ok()) << eq << ": " << p.status();
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : operands) ptrs.push_back(&t);
  Tensor planned = Tensor::Zeros(dtype, p->output_shape), reference = Tensor::Zeros(dtype, p->output_shape);
  ASSERT_TRUE(EinsumPlanned(*p, ptrs, planned, 2).ok()) << eq;
  ASSERT_TRUE(EinsumReference(*p, ptrs, reference).ok()) << eq;
  const std::vector<double> x = Values(planned), y = Values(reference);
  ASSERT_EQ(x.size(), y.size());
  // Integers are exact (both wrap); float16 rounds the operands once more in the planner.
  const double rtol = dtype == DType::kFloat16 || dtype == DType::kBFloat16 ? 1e-2 : 1e-5;
  for (size_t i = 0; i < x.size(); ++i) {
    if (Info(dtype).kind != DTypeKind::kFloat) EXPECT_EQ(x[i], y[i]) << eq << " " << LowerName(dtype) << " at " << i;
    else EXPECT_NEAR(x[i], y[i], rtol * (1 + std::abs(y[i]))) << eq << " " << LowerName(dtype) << " at " << i;
  }
}

TEST(Einsum, PlannedMatchesReference) {
  struct Case {
    std::string eq;
    std::vector<Shape> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{3, 5}, {5, 7}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bij,bkj->bik", {{2, 3, 4}, {2, 5, 4}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},
      {"i,j->ij", {{3}, {5}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 2}}},
      {"bii->bi", {{3, 4, 4}}},
      {"iij,jk->ik", {{3, 3, 2}, {2, 5}}},
      {"abc,cd->da", {{2, 3, 4}, {4, 5}}},
      {"ijk,jl->lki", {{2, 3, 4}, {3, 1}}},
      {"ij,jk", {{1, 7}, {7, 1}}},
      {"i,i->", {{9}, {9}}},
      {"ab,ab,ab->b", {{2, 3}, {2, 3}, {2, 3}}},
      {"ij,kl->", {{2, 3}, {0, 2}}},
      {"bij,bjk->bik", {{3, 33, 17}, {3, 17, 29}}},  // odd sizes through oneDNN (float work)
      {"...ik,kj->...ji", {{2, 5, 31, 9}, {9, 13}}},
      {"...k,...k->...", {{3, 1, 5}, {1, 4, 5}}},  // broadcast batch dims, contracted k
      {"...k,...k", {{3, 1, 5}, {4, 5}}},
      {"...ij,...jk->...ik", {{1, 3, 2, 4}, {5, 1, 4, 3}}},
      {"b...,b...->b", {{2, 1, 3}, {2, 4, 1}}},
  };
  uint32_t seed = 1;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64,
                      DType::kUInt8, DType::kInt8})
    for (const Case& c : cases) Compare(c.eq, c.shapes, dtype, seed += 7);
}

// The planned evaluation's intermediate operands (each operand reduced, then
// transposed for the product) count against the session's memory budget.
TEST(Einsum, IntermediatesCountAgainstTheMemoryLimit) {
  // 256 x 256 floats a side: the output (256 KiB) fits 512 KiB, the reduced
  // and transposed copies of both operands beside it do not.
  Tensor a = Tensor::Zeros(DType::kFloat, {256, 256}), b = Tensor::Zeros(DType::kFloat, {256, 256});
  for (int64_t i = 0; i < 256; ++i) a.data<float>()[i * 256 + i] = 2, b.data<float>()[i * 256 + (255 - i)] = 3;
  OpTester t;
  t.op = "Einsum";
  t.opset = 12;
  t.inputs = {a, b};
  t.attrs = Equation("ij,jk->ik");
  ExpectOverBudget(t, size_t(512) << 10);
  // With room: 2 I times 3 times the anti-diagonal.
  t.memory_limit = size_t(8) << 20;
  absl::StatusOr<Tensor> y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  for (int64_t i = 0; i < 256; ++i)
    for (int64_t k = 0; k < 256; ++k) ASSERT_EQ(y->data<float>()[i * 256 + k], k == 255 - i ? 6.0f : 0.0f);
}

}  // namespace
}  // namespace onnx_mini
