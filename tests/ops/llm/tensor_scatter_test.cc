// TensorScatter-24 against a naive reference written here from the spec's
// pseudo-code (SEMANTICS.md TS4): every type, both modes, several axes, with
// and without write_indices; the invalid cases; the in-place paths.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

// Element i of src into element j of dst, for any type (bytes, nibbles or strings).
void CopyElement(const Tensor& src, int64_t i, Tensor& dst, int64_t j) {
  const DTypeInfo& info = Info(src.dtype());
  if (info.packed()) {
    SetPacked(src.dtype(), dst.data<uint8_t>(), j, uint32_t(GetPacked(src.dtype(), src.data<uint8_t>(), i)));
  } else if (src.dtype() == DType::kString) {
    dst.data<std::string>()[j] = src.data<std::string>()[i];
  } else {
    const size_t w = size_t(info.bits / 8);
    std::memcpy(dst.data<char>() + size_t(j) * w, src.data<char>() + size_t(i) * w, w);
  }
}

bool SameElement(const Tensor& a, int64_t i, const Tensor& b, int64_t j) {
  const DTypeInfo& info = Info(a.dtype());
  if (info.packed()) return GetPacked(a.dtype(), a.data<uint8_t>(), i) == GetPacked(b.dtype(), b.data<uint8_t>(), j);
  if (a.dtype() == DType::kString) return a.data<std::string>()[i] == b.data<std::string>()[j];
  const size_t w = size_t(info.bits / 8);
  return std::memcmp(a.data<char>() + size_t(i) * w, b.data<char>() + size_t(j) * w, w) == 0;
}

Tensor RandomTensor(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::Zeros(dtype, shape);
  if (dtype == DType::kString) {
    for (int64_t i = 0; i < t.size(); ++i) t.data<std::string>()[i] = "s" + std::to_string(rng() % 1000);
  } else if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.size(); ++i) t.data<bool>()[i] = rng() % 2;
  } else {
    for (size_t i = 0; i < t.bytes(); ++i) t.data<uint8_t>()[i] = uint8_t(rng());
  }
  return t;
}

// The pseudo-code: out = copy(past); for every update index, write it at
// the same index with the axis coordinate replaced by pos(b, s).
Tensor Reference(const Tensor& past, const Tensor& update, const std::vector<int64_t>& w, int64_t axis,
                 bool circular) {
  Tensor out = Tensor::Zeros(past.dtype(), past.shape());
  for (int64_t i = 0; i < past.size(); ++i) CopyElement(past, i, out, i);
  const Shape& us = update.shape();
  const int64_t m = past.dim(axis);
  std::vector<int64_t> idx(us.size(), 0);
  for (int64_t flat = 0; flat < update.size(); ++flat) {
    int64_t rem = flat;
    for (int64_t d = int64_t(us.size()) - 1; d >= 0; --d) {
      idx[size_t(d)] = rem % us[size_t(d)];
      rem /= us[size_t(d)];
    }
    const int64_t start = w.empty() ? 0 : w[size_t(idx[0])];
    int64_t pos = start + idx[size_t(axis)];
    if (circular) pos = ((pos % m) + m) % m;
    int64_t dst = 0;
    for (size_t d = 0; d < us.size(); ++d)
      dst = dst * past.dim(int64_t(d)) + (int64_t(d) == axis ? pos : idx[d]);
    CopyElement(update, flat, out, dst);
  }
  return out;
}

enum class Indices { kGiven, kOmitted, kEmptyName };

absl::StatusOr<Tensor> RunScatter(const Tensor& past, const Tensor& update, const Tensor* w,
                                  Indices how, std::optional<int64_t> axis, const std::string& mode) {
  OpTester t;
  t.op = "TensorScatter";
  t.opset = 24;
  t.inputs = {past, update};
  if (how == Indices::kGiven) t.inputs.push_back(*w);
  else if (how == Indices::kEmptyName) t.inputs.push_back(Tensor());  // an empty input name
  t.attrs = [&](onnx::NodeProto& n) {
    if (axis) SetAttr(n, "axis", *axis);
    if (!mode.empty()) SetAttr(n, "mode", mode);
  };
  return t.RunOne();
}

const std::vector<DType> kAllScatterTypes = {
    DType::kFloat, DType::kUInt8, DType::kInt8, DType::kUInt16, DType::kInt16, DType::kInt32,
    DType::kInt64, DType::kString, DType::kBool, DType::kFloat16, DType::kDouble, DType::kUInt32,
    DType::kUInt64, DType::kComplex64, DType::kComplex128, DType::kBFloat16, DType::kFloat8E4M3FN,
    DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ, DType::kUInt4, DType::kInt4,
    DType::kFloat4E2M1, DType::kFloat8E8M0};

TEST(TensorScatter, EveryTypeModeAxisAndIndexForm) {
  struct Layout {
    Shape past;
    int64_t axis;       // as given in the attribute
    int64_t update_len;
  };
  // Odd inner sizes (3, 5, 1) make packed rows start and end mid-byte.
  const std::vector<Layout> layouts = {
      {{2, 1, 4, 5}, -2, 1}, {{3, 4, 5}, 1, 2}, {{2, 5, 3}, -2, 5}, {{2, 3, 7, 1}, 2, 3},
      {{3, 2, 2, 3}, 3, 2},  {{4, 6}, 1, 4},    {{2, 3, 4}, -1, 3}, {{1, 2, 3, 3}, 1, 1}};
  std::mt19937 rng(11);
  int checked = 0;
  for (DType dtype : kAllScatterTypes)
    for (const Layout& l : layouts)
      for (const std::string mode : {"linear", "circular"})
        for (Indices how : {Indices::kGiven, Indices::kOmitted, Indices::kEmptyName}) {
          const int64_t rank = int64_t(l.past.size());
          const int64_t axis = l.axis < 0 ? l.axis + rank : l.axis;
          Shape us = l.past;
          us[size_t(axis)] = l.update_len;
          const int64_t m = l.past[size_t(axis)], b = l.past[0];
          Tensor past = RandomTensor(dtype, l.past, rng), update = RandomTensor(dtype, us, rng);
          std::vector<int64_t> w;
          if (how == Indices::kGiven)
            for (int64_t i = 0; i < b; ++i)
              w.push_back(mode == "linear" ? int64_t(rng() % uint32_t(m - l.update_len + 1))
                                           : int64_t(rng() % uint32_t(4 * m)) - 2 * m);
          Tensor wt = Tensor::FromVector(w, {b});
          absl::StatusOr<Tensor> got = RunScatter(past, update, &wt, how, l.axis, mode == "linear" ? "" : mode);
          ASSERT_TRUE(got.ok()) << LowerName(dtype) << " " << mode << ": " << got.status();
          Tensor want = Reference(past, update, w, axis, mode == "circular");
          for (int64_t i = 0; i < want.size(); ++i)
            ASSERT_TRUE(SameElement(*got, i, want, i))
                << LowerName(dtype) << " " << mode << " axis " << l.axis << " shape "
                << ShapeToString(l.past) << " element " << i;
          ++checked;
        }
  EXPECT_EQ(checked, 24 * 8 * 2 * 3);
}

TEST(TensorScatter, CircularWrapsOnlyTheSequenceCoordinate) {
  // Batch 5 with M = 4: prefix indices >= M must not alias (TS6 caution).
  std::mt19937 rng(3);
  Tensor past = RandomTensor(DType::kFloat, {6, 4, 2}, rng), update = RandomTensor(DType::kFloat, {6, 4, 2}, rng);
  Tensor w = Tensor::FromVector<int64_t>({-1, 3, 9, -9, 0, INT64_MIN}, {6});
  absl::StatusOr<Tensor> got = RunScatter(past, update, &w, Indices::kGiven, 1, "circular");
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor want = Reference(past, update, {-1, 3, 9, -9, 0, INT64_MIN}, 1, true);
  EXPECT_EQ(std::memcmp(got->raw(), want.raw(), want.bytes()), 0);
  // S = M overwrites the whole row, rotated.
  EXPECT_EQ(got->data<float>()[(5 * 4 + 0) * 2], update.data<float>()[(5 * 4 + 0) * 2]);  // INT64_MIN mod 4 = 0
}

TEST(TensorScatter, InvalidInputsNameTheRuleAndValues) {
  std::mt19937 rng(5);
  Tensor past = RandomTensor(DType::kFloat, {2, 3, 8, 4}, rng);
  Tensor upd = RandomTensor(DType::kFloat, {2, 3, 2, 4}, rng);
  auto error = [&](const Tensor& p, const Tensor& u, std::vector<int64_t> w, std::optional<int64_t> axis,
                   const std::string& mode) {
    Tensor wt = Tensor::FromVector(w, {int64_t(w.size())});
    absl::StatusOr<Tensor> r = RunScatter(p, u, &wt, Indices::kGiven, axis, mode);
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  EXPECT_THAT(error(past, upd, {6, 7}, {}, ""), HasSubstr("write_indices[1] = 7 + update length 2 exceeds the cache length 8"));
  EXPECT_THAT(error(past, upd, {-1, 0}, {}, ""), HasSubstr("write_indices[0] = -1 is negative"));
  EXPECT_THAT(error(past, upd, {0, 0, 0}, {}, ""), HasSubstr("write_indices int64[3] must have shape [2]"));
  EXPECT_THAT(error(past, upd, {0, 0}, {}, "ring"), HasSubstr("mode 'ring' is not 'linear' or 'circular'"));
  EXPECT_THAT(error(past, upd, {0, 0}, 0, ""), HasSubstr("axis 0 is invalid for past_cache of rank 4"));
  EXPECT_THAT(error(past, upd, {0, 0}, -4, ""), HasSubstr("axis -4 is invalid"));
  EXPECT_THAT(error(past, upd, {0, 0}, 4, ""), HasSubstr("axis 4 is invalid"));
  Tensor long_upd = RandomTensor(DType::kFloat, {2, 3, 9, 4}, rng);
  EXPECT_THAT(error(past, long_upd, {0, 0}, {}, "circular"), HasSubstr("the update is longer than the cache"));
  Tensor bad_dim = RandomTensor(DType::kFloat, {2, 2, 2, 4}, rng);
  EXPECT_THAT(error(past, bad_dim, {0, 0}, {}, ""), HasSubstr("dim 1 differs"));
  Tensor bad_type = RandomTensor(DType::kDouble, {2, 3, 2, 4}, rng);
  EXPECT_THAT(error(past, bad_type, {0, 0}, {}, ""), HasSubstr("input 1 is double but input 0 is float: both have type T"));
  Tensor i2 = RandomTensor(DType::kInt2, {2, 4}, rng);
  EXPECT_THAT(error(i2, i2, {0, 0}, 1, ""), HasSubstr("not implemented: ai.onnx::TensorScatter opset 24 for int2"));
}

TEST(TensorScatter, BadIndicesAtRunLeaveTheSessionUsable) {
  // write_indices is a runtime input: the bound check runs on its values.
  ModelBuilder m(24);
  m.Input("past", DType::kFloat, {2, 4, 2}).Input("upd", DType::kFloat, {2, 1, 2}).Input("w", DType::kInt64, {2});
  m.Output("present", DType::kFloat, {2, 4, 2});
  SetAttr(m.Node("TensorScatter", {"past", "upd", "w"}, {"present"}), "axis", int64_t(1));
  std::unique_ptr<Session> s = *m.Build();
  std::vector<float> past_v(16, 0.f), out_v(16, -1.f);
  Tensor past = Tensor::FromVector(past_v, {2, 4, 2});
  Tensor upd = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 1, 2});
  std::vector<Tensor> outputs = {Tensor::Borrow(DType::kFloat, {2, 4, 2}, out_v.data())};
  absl::Status bad = s->Run({{"past", past}, {"upd", upd}, {"w", Tensor::FromVector<int64_t>({0, 4}, {2})}}, &outputs);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("write_indices[1] = 4 + update length 1 exceeds the cache length 4"));
  EXPECT_EQ(out_v[0], -1.f);  // nothing was written
  ASSERT_TRUE(s->Run({{"past", past}, {"upd", upd}, {"w", Tensor::FromVector<int64_t>({0, 3}, {2})}}, &outputs).ok());
  EXPECT_EQ(out_v[0], 1.f);
  EXPECT_EQ(out_v[(1 * 4 + 3) * 2 + 1], 4.f);
}

TEST(TensorScatter, InPlaceWhenTheOutputIsThePastBuffer) {
  // The caller binds present to past's memory: only the update slices change.
  const int64_t B = 3, H = 2, M = 64, D = 5;
  ModelBuilder m(24);
  m.Input("past", DType::kFloat, {B, H, M, D}).Input("upd", DType::kFloat, {B, H, 1, D}).Input("w", DType::kInt64, {B});
  m.Output("present", DType::kFloat, {B, H, M, D});
  m.Node("TensorScatter", {"past", "upd", "w"}, {"present"});
  std::unique_ptr<Session> s = *m.Build();
  std::vector<float> cache(size_t(B * H * M * D));
  for (size_t i = 0; i < cache.size(); ++i) cache[i] = float(i);
  const std::vector<float> before = cache;
  std::vector<float> upd(size_t(B * H * D), -7.f);
  Tensor past = Tensor::Borrow(DType::kFloat, {B, H, M, D}, cache.data());
  std::vector<Tensor> outputs = {past};
  for (int step = 0; step < 3; ++step) {
    Tensor w = Tensor::FromVector<int64_t>({10 + step, 20 + step, 63 - step}, {B});
    ASSERT_TRUE(s->Run({{"past", past}, {"upd", Tensor::Borrow(DType::kFloat, {B, H, 1, D}, upd.data())}, {"w", w}},
                       &outputs).ok());
    EXPECT_EQ(outputs[0].raw(), static_cast<void*>(cache.data()));
  }
  size_t changed = 0;
  for (size_t i = 0; i < cache.size(); ++i)
    if (cache[i] != before[i]) {
      ++changed;
      EXPECT_EQ(cache[i], -7.f);
    }
  EXPECT_EQ(changed, size_t(3 * B * H * D));  // three steps, one token per (b, h)
  EXPECT_EQ(cache[((0 * H + 1) * M + 12) * D + 4], -7.f);
  EXPECT_EQ(cache[((2 * H + 0) * M + 61) * D], -7.f);
}

TEST(TensorScatter, InPlaceOnAnIntermediateInsideAGraph) {
  // past = x + 0 is an intermediate read only by TensorScatter: the executor
  // lets TensorScatter reuse its buffer. The result must still be right.
  ModelBuilder m(24);
  m.Input("x", DType::kInt32, {2, 3, 2}).Input("upd", DType::kInt32, {2, 1, 2});
  m.Initializer("zero", Tensor::FromVector<int32_t>({0}, {}));
  m.Output("present", DType::kInt32, {2, 3, 2}).Output("x_plus", DType::kInt32, {2, 3, 2});
  m.Node("Add", {"x", "zero"}, {"past"});
  SetAttr(m.Node("TensorScatter", {"past", "upd"}, {"present"}), "axis", int64_t(1));
  m.Node("Add", {"x", "zero"}, {"x_plus"});
  std::unique_ptr<Session> s = *m.Build();
  Tensor x = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2});
  Tensor upd = Tensor::FromVector<int32_t>({-1, -2, -3, -4}, {2, 1, 2});
  absl::StatusOr<std::vector<Tensor>> out = s->Run({{"x", x}, {"upd", upd}});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<int32_t> want = {-1, -2, 3, 4, 5, 6, -3, -4, 9, 10, 11, 12};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ((*out)[0].data<int32_t>()[i], want[i]);
  EXPECT_EQ((*out)[1].data<int32_t>()[0], 1);  // x itself is untouched
  EXPECT_EQ(x.data<int32_t>()[0], 1);
}

TEST(TensorScatter, LargeCopyUsesThreadsAndAgrees) {
  std::mt19937 rng(9);
  Tensor past = RandomTensor(DType::kFloat16, {2, 4, 300, 130}, rng);
  Tensor upd = RandomTensor(DType::kFloat16, {2, 4, 7, 130}, rng);
  Tensor w = Tensor::FromVector<int64_t>({0, 293}, {2});
  absl::StatusOr<Tensor> got = RunScatter(past, upd, &w, Indices::kGiven, {}, "");
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor want = Reference(past, upd, {0, 293}, 2, false);
  EXPECT_EQ(std::memcmp(got->raw(), want.raw(), want.bytes()), 0);
}

}  // namespace
}  // namespace onnx_mini
