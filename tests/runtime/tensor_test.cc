// runtime/tensor: what a new owner of a pooled block sees (never the previous
// owner's contents: the poison pattern when poisoning is on, zeros when the
// block comes from another budget), and which blocks are pooled again.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "runtime/tensor.h"
#include "tests/ops/poison_util.h"

namespace onnx_mini {
namespace {

// Sizes of their own (pooled: 64 KiB and up), so other tests' blocks are not
// in play; one per test.
constexpr int64_t kFloatsA = (int64_t(1) << 18) + 48;
constexpr int64_t kFloatsB = (int64_t(1) << 18) + 96;
constexpr int64_t kFloatsC = (int64_t(1) << 18) + 144;

// A released block full of `byte`, owned by `budget`.
void* FillAndRelease(int64_t floats, unsigned char byte, const std::shared_ptr<MemoryBudget>& budget) {
  absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(DType::kFloat, {floats}, budget);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return nullptr;
  std::memset(t->raw(), byte, t->bytes());
  return t->raw();
}

int64_t BytesEqualTo(const Tensor& t, unsigned char byte) {
  const unsigned char* p = static_cast<const unsigned char*>(t.raw());
  int64_t n = 0;
  for (size_t i = 0; i < t.bytes(); ++i) n += p[i] == byte;
  return n;
}

TEST(BlockPool, PoisonedBlockIsWhatANewOwnerSees) {
  ScopedPoison poison;
  auto a = std::make_shared<MemoryBudget>(size_t(1) << 30);
  auto b = std::make_shared<MemoryBudget>(size_t(1) << 30);
  // Reused by another session, by the same one, and with no budget: the
  // pattern every time, never the 0x11 bytes the last owner left.
  for (const std::shared_ptr<MemoryBudget>& next : {b, a, std::shared_ptr<MemoryBudget>()}) {
    FillAndRelease(kFloatsA, 0x11, a);
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(DType::kFloat, {kFloatsA}, next);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(BytesEqualTo(*t, kPoisonByte), int64_t(t->bytes()));
    EXPECT_EQ(PoisonedElements(*t), kFloatsA);
  }
  // Small blocks (not pooled) too, and every element type's width.
  for (DType d : {DType::kUInt8, DType::kFloat16, DType::kInt32, DType::kDouble, DType::kComplex128}) {
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(d, {5});
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(PoisonedElements(*t), 5) << LowerName(d);
  }
  // Zeroed allocations stay zero.
  absl::StatusOr<Tensor> z = Tensor::Make(DType::kFloat, {kFloatsA}, a);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(BytesEqualTo(*z, 0), int64_t(z->bytes()));
}

TEST(BlockPool, AnotherSessionsBlockIsClearedAndTheSameSessionsIsNot) {
  const bool was = PoisonUninitialized();
  SetPoisonUninitialized(false);  // a release build
  auto a = std::make_shared<MemoryBudget>(size_t(1) << 30);
  auto b = std::make_shared<MemoryBudget>(size_t(1) << 30);
  // Another budget: zeros, not a's bytes.
  FillAndRelease(kFloatsB, 0x11, a);
  {
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(DType::kFloat, {kFloatsB}, b);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(BytesEqualTo(*t, 0), int64_t(t->bytes()));
  }
  // The same budget takes its own block back as it was (a decode loop pays no
  // clearing), even when another's of that size waits beside it.
  void* mine = nullptr;
  {
    absl::StatusOr<Tensor> ta = Tensor::MakeUninitialized(DType::kFloat, {kFloatsB}, a);
    absl::StatusOr<Tensor> tb = Tensor::MakeUninitialized(DType::kFloat, {kFloatsB}, b);
    ASSERT_TRUE(ta.ok() && tb.ok());
    std::memset(ta->raw(), 0x22, ta->bytes());
    std::memset(tb->raw(), 0x33, tb->bytes());
    mine = ta->raw();
  }
  {
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(DType::kFloat, {kFloatsB}, a);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->raw(), mine);
    EXPECT_EQ(BytesEqualTo(*t, 0x22), int64_t(t->bytes()));
  }
  // A budget made after a's end is another owner, even at a's address.
  FillAndRelease(kFloatsC, 0x44, a);
  a.reset();
  auto c = std::make_shared<MemoryBudget>(size_t(1) << 30);
  {
    absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(DType::kFloat, {kFloatsC}, c);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(BytesEqualTo(*t, 0), int64_t(t->bytes()));
  }
  SetPoisonUninitialized(was);
}

}  // namespace
}  // namespace onnx_mini
