// runtime/session/storage_plan.cc: the storage plan alone, over steps made by
// hand (no session, no kernel).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/registry.h"
#include "runtime/session/impl.h"

namespace onnx_mini {
namespace {

using session_detail::PlanStorage;
using session_detail::RootKind;
using session_detail::Step;
using session_detail::StoragePlan;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A step of `row` reading values `in` and writing `out`.
Step MakeStep(const RegisteredOp* row, std::vector<int> in, std::vector<int> out) {
  Step s;
  s.row = row;
  s.inputs = std::move(in);
  s.num_explicit = s.inputs.size();
  s.outputs = std::move(out);
  return s;
}

const RegisteredOp* Row(const char* op) {
  absl::StatusOr<const RegisteredOp*> row = BuiltinOps().Find("", op, 17);
  EXPECT_TRUE(row.ok()) << row.status();
  return row.ok() ? *row : nullptr;
}

// x (caller's) -> a = Neg(x) -> b = Neg(a), c = Neg(a); outputs b and c.
TEST(StoragePlan, AnInputIsTakenInPlaceOnlyByItsLastReader) {
  const RegisteredOp* neg = Row("Neg");
  ASSERT_NE(neg, nullptr);
  std::vector<Step> steps;
  steps.push_back(MakeStep(neg, {0}, {1}));
  steps.push_back(MakeStep(neg, {1}, {2}));
  steps.push_back(MakeStep(neg, {1}, {3}));
  const StoragePlan p = PlanStorage(4, std::vector<Tensor>(4), {0}, {}, steps, {2, 3});
  EXPECT_THAT(p.root, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(p.root_kind, ElementsAre(RootKind::kCaller, RootKind::kSession, RootKind::kSession, RootKind::kSession));
  // The caller's x is never taken; a is taken by its last reader only.
  EXPECT_THAT(p.reuse, ElementsAre(ElementsAre(-1), ElementsAre(-1), ElementsAre(0)));
  EXPECT_THAT(p.release, ElementsAre(ElementsAre(0), IsEmpty(), ElementsAre(1)));
  EXPECT_THAT(p.output_step, ElementsAre(1, 2));
  EXPECT_THAT(p.output_position, ElementsAre(0, 0));
  // A caller's buffer for b or c may not share a's memory (the session's).
  EXPECT_THAT(p.bound_in_place, ElementsAre(-1, -1));
}

// y = Neg(x) with x the caller's: a caller's buffer for y may be x's own
// memory (the step is x's last reader); with a constant w read too, nothing
// of w is released or taken.
TEST(StoragePlan, ACallersOutputBufferMayShareTheInputItsOpUpdatesInPlace) {
  const RegisteredOp* neg = Row("Neg");
  const RegisteredOp* add = Row("Add");
  ASSERT_NE(neg, nullptr);
  ASSERT_NE(add, nullptr);
  std::vector<Tensor> constants(4);
  constants[1] = Tensor::FromVector(std::vector<float>{1}, {1});
  std::vector<Step> steps;
  steps.push_back(MakeStep(neg, {0}, {2}));
  steps.push_back(MakeStep(add, {1, 1}, {3}));
  const StoragePlan p = PlanStorage(4, constants, {0}, {}, steps, {2, 3});
  EXPECT_EQ(p.root_kind[1], RootKind::kConstant);
  EXPECT_THAT(p.bound_in_place, ElementsAre(0, -1));
  // x's reference is dropped after its last read; the constant w's never.
  EXPECT_THAT(p.release, ElementsAre(ElementsAre(0), IsEmpty()));
  EXPECT_THAT(p.reuse, ElementsAre(ElementsAre(-1), ElementsAre(-1)));
}

}  // namespace
}  // namespace onnx_mini
