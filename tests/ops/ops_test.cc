// The built-in op table (ops/ops.cc): every row runs its smoke case
// (tests/ops/<family>/smoke.cc) for every element type it declares, so a row
// never promises a type its kernel does not handle (that would be an
// internal "no case" error, or a crash).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"
#include "tests/ops/op_tester.h"
#include "tests/ops/poison_util.h"
#include "tests/ops/smoke.h"

namespace onnx_mini {
namespace {

// The element types chosen for one case: one per type constraint.
using Chosen = std::vector<DType>;

// The default type of a constraint that is not the one under test.
DType Default(const TypeSet& set) {
  for (DType d : {DType::kFloat, DType::kInt64, DType::kBool, DType::kInt32, DType::kUInt8})
    if (set.contains(d)) return d;
  for (int code = 1; code <= kMaxDTypeCode; ++code)
    if (set.contains(DType(code))) return DType(code);
  return DType::kUndefined;
}

absl::Status RunSmoke(const Smoke& smoke, const RegisteredOp& row, Chosen chosen) {
  if (smoke.tie_types) smoke.tie_types(chosen);
  const RegisteredOp::Formal* out = row.output(0);
  const RegisteredOp::Formal* in = row.input(0);
  const SmokeCase c = smoke.make({row, row.def.since_version, in ? chosen[size_t(in->constraint)] : DType::kUndefined,
                                  out ? chosen[size_t(out->constraint)] : DType::kUndefined});
  OpTester t;
  t.op = row.def.op_type;
  t.domain = row.def.domain;
  t.opset = row.def.since_version;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const RegisteredOp::Formal* f = row.input(i);
    if (f == nullptr) return absl::InvalidArgumentError("the smoke case has too many inputs");
    t.inputs.push_back(Filled(chosen[size_t(f->constraint)], c.inputs[i]));
  }
  t.outputs = c.outputs;
  t.attrs = c.attrs;
  absl::StatusOr<std::vector<Tensor>> outputs = t.Run();
  if (!outputs.ok()) return outputs.status();
  // Run with poisoning on: an element the kernel did not write shows.
  for (size_t o = 0; o < outputs->size(); ++o)
    if (const int64_t n = PoisonedElements((*outputs)[o]))
      return absl::InternalError(absl::StrCat("output ", o, " has ", n, " of ", (*outputs)[o].size(),
                                              " elements unwritten (the poison pattern)"));
  return absl::OkStatus();
}

TEST(BuiltinOps, EveryRowRunsEveryTypeItDeclares) {
  ScopedPoison poison;  // and writes every element of its outputs
  OpRegistry registry;
  ASSERT_TRUE(RegisterBuiltinOps(registry).ok());
  const std::vector<Smoke> smoke = AllSmoke();
  int cases = 0;
  for (const RegisteredOp* row : registry.rows()) {
    // Rows over sequences, optionals and subgraphs: sequence_test.cc and
    // control_flow_test.cc run each with every type it declares.
    if (row->def.makes_outputs) continue;
    std::string why;
    const Smoke* found = FindSmoke(smoke, row->def, &why);
    if (found == nullptr) {
      ADD_FAILURE() << why;
      continue;
    }
    Chosen defaults;
    for (const TypeConstraint& c : row->def.types) defaults.push_back(Default(c.types));
    for (size_t c = 0; c < row->def.types.size(); ++c) {
      for (int code = 1; code <= kMaxDTypeCode; ++code) {
        if (!row->def.types[c].types.contains(DType(code))) continue;
        Chosen chosen = defaults;
        chosen[c] = DType(code);
        const absl::Status s = RunSmoke(*found, *row, chosen);
        EXPECT_TRUE(s.ok()) << DomainName(row->def.domain) << "::" << row->def.op_type << "-"
                            << row->def.since_version << " with " << row->def.types[c].name << " = " << LowerName(DType(code)) << ": " << s;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 300);
}

// Every smoke case serves a built-in row (a case whose op, domain or versions
// went stale would otherwise sit unused).
TEST(BuiltinOps, EverySmokeCaseServesARow) {
  const std::vector<Smoke> smoke = AllSmoke();
  std::set<const Smoke*> used;
  for (const RegisteredOp* row : BuiltinOps().rows()) {
    std::string why;
    if (const Smoke* s = FindSmoke(smoke, row->def, &why)) used.insert(s);
  }
  for (const Smoke& s : smoke)
    EXPECT_TRUE(used.count(&s)) << DomainName(s.domain) << "::" << s.op << " " << s.versions.since << ".."
                                << s.versions.last << " serves no row";
}

// Cases are keyed by (domain, op, versions), not by op type alone: a row of
// the same op in another domain finds no case, nor does a row whose versions
// no one case covers.
TEST(BuiltinOps, SmokeCasesMatchDomainAndVersions) {
  const std::vector<Smoke> smoke = AllSmoke();
  std::string why;
  const OpDef& onnx_rotary = BuiltinOps().Find(kOnnxDomain, "RotaryEmbedding", 23).value()->def;
  const Smoke* found = FindSmoke(smoke, onnx_rotary, &why);
  ASSERT_NE(found, nullptr) << why;
  EXPECT_EQ(found->domain, kOnnxDomain);
  EXPECT_EQ(found->op, "RotaryEmbedding");

  OpDef ms_rotary = onnx_rotary;  // another domain's RotaryEmbedding takes other inputs (com.microsoft's has a row)
  ms_rotary.domain = kPreviewDomain;
  EXPECT_EQ(FindSmoke(smoke, ms_rotary, &why), nullptr);
  EXPECT_THAT(why, testing::HasSubstr("ai.onnx.preview::RotaryEmbedding versions 23..: no smoke case"));
  // A row of the same op running the ai.onnx case would fail the registry
  // test's run with a wrong case; failing the lookup says what is missing.
  OpRegistry mine(&BuiltinOps());
  ASSERT_TRUE(mine.Add(ms_rotary).ok());
  EXPECT_EQ(FindSmoke(smoke, mine.Find(kPreviewDomain, "RotaryEmbedding", 23).value()->def, &why), nullptr);

  // Reshape's cases are 1..4 (shape as an attribute) and 5.. (an input).
  OpDef reshape = BuiltinOps().Find(kOnnxDomain, "Reshape", 5).value()->def;
  EXPECT_NE(FindSmoke(smoke, reshape, &why), nullptr) << why;
  reshape.since_version = 3;
  reshape.last_version = 6;
  EXPECT_EQ(FindSmoke(smoke, reshape, &why), nullptr);
  reshape.since_version = 1;
  reshape.last_version = 4;
  const Smoke* old = FindSmoke(smoke, reshape, &why);
  ASSERT_NE(old, nullptr) << why;
  EXPECT_EQ(old->versions.last, 4);
}

// Ops whose outputs are written in parts by design (the positions found,
// the rows kept, the pads around the copy, the scattered entries over a copy,
// the cache rows past the new ones, the steps past a sequence's length...),
// at sizes that take pooled blocks and on two threads: with poisoning on, no
// output element may be left as the pattern.
TEST(BuiltinOps, OutputsWrittenInPartsAreWrittenInFull) {
  ScopedPoison poison;
  // A float input with zeros, -0.0 and NaN among its values.
  Tensor x = Random(DType::kFloat, {256, 128}, 7);
  for (int64_t i = 0; i < x.size(); i += 3) x.data<float>()[i] = i % 2 ? -0.0f : 0.0f;
  x.data<float>()[5] = std::nanf("");
  Tensor cond = Tensor::Zeros(DType::kBool, {256});
  for (int64_t i = 0; i < 256; i += 3) cond.data<bool>()[i] = true;
  Tensor i1 = I({3, 0, 255, 17}, {4, 1});  // ScatterND rows
  Tensor rows = Random(DType::kFloat, {4, 128}, 8);
  Tensor cols = Tensor::Zeros(DType::kInt64, {256, 2});  // ScatterElements along axis 1
  for (int64_t i = 0; i < cols.size(); ++i) cols.data<int64_t>()[i] = (i * 37) % 128;
  Tensor upd = Random(DType::kFloat, {256, 2}, 9);
  Tensor img = Random(DType::kFloat, {1, 2, 64, 64}, 10);
  Tensor q = Random(DType::kFloat, {1, 2, 4, 16}, 11), k = Random(DType::kFloat, {1, 2, 4, 16}, 12);
  Tensor v = Random(DType::kFloat, {1, 2, 4, 16}, 13);
  Tensor past_k = Random(DType::kFloat, {1, 2, 1020, 16}, 14), past_v = Random(DType::kFloat, {1, 2, 1020, 16}, 15);
  Tensor cache = Random(DType::kFloat, {2, 2, 1024, 16}, 16);
  Tensor seq = Random(DType::kFloat, {64, 4, 8}, 17);
  Tensor w = RandomUniform(DType::kFloat, {1, 4 * 64, 8}, 18, -0.5, 0.5);
  Tensor r = RandomUniform(DType::kFloat, {1, 4 * 64, 64}, 19, -0.5, 0.5);
  Tensor w3 = RandomUniform(DType::kFloat, {1, 3 * 64, 8}, 18, -0.5, 0.5);
  Tensor r3 = RandomUniform(DType::kFloat, {1, 3 * 64, 64}, 19, -0.5, 0.5);
  Tensor lens = Tensor::FromVector<int32_t>({64, 10, 0, 33}, {4});
  Tensor boxes = Tensor::Zeros(DType::kFloat, {1, 200, 4});
  for (int64_t b = 0; b < 200; ++b) {
    float* p = boxes.data<float>() + b * 4;
    p[0] = p[1] = float(b % 50) * 0.5f;
    p[2] = p[3] = p[0] + 1.0f;
  }
  Tensor scores = RandomUniform(DType::kFloat, {1, 1, 200}, 20, 0, 1);
  Tensor rev_lens = Tensor::Zeros(DType::kInt64, {128});
  for (int64_t i = 0; i < 128; ++i) rev_lens.data<int64_t>()[i] = (i * 53) % 257;
  struct Case {
    std::string name;
    OpTester t;
  };
  auto node = [](std::string op, int64_t opset, std::vector<Tensor> in, size_t outs = 1, Attrs a = {}) {
    OpTester t;
    t.op = std::move(op);
    t.opset = opset;
    t.inputs = std::move(in);
    t.outputs = outs;
    t.attrs = std::move(a);
    t.threads = 2;
    return t;
  };
  const std::vector<Case> cases = {
      {"NonZero", node("NonZero", 13, {x})},
      {"Compress axis 0", node("Compress", 11, {x, cond}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(0)); })},
      {"Compress flat", node("Compress", 11, {x, Tensor::FromVector<bool>({true, false, true}, {3})})},
      {"TopK", node("TopK", 11, {x, I({100}, {1})}, 2)},
      {"Unique", node("Unique", 11, {x}, 4)},
      {"Pad constant", node("Pad", 13, {x, I({5, 7, 9, 11}, {4})})},
      {"Pad reflect", node("Pad", 13, {x, I({5, 7, 9, 11}, {4})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("reflect")); })},
      {"Pad edge", node("Pad", 13, {x, I({5, 7, 9, 11}, {4})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("edge")); })},
      {"Pad wrap", node("Pad", 19, {x, I({5, 7, 9, 11}, {4})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("wrap")); })},
      {"Pad negative", node("Pad", 13, {x, I({-5, 7, 9, -11}, {4})})},
      {"CenterCropPad", node("CenterCropPad", 18, {x, I({300, 100}, {2})})},
      {"ScatterND", node("ScatterND", 16, {x, i1, rows})},
      {"ScatterElements", node("ScatterElements", 16, {x, cols, upd}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(1)); })},
      {"ScatterElements add", node("ScatterElements", 16, {x, cols, upd}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "axis", int64_t(1));
         SetAttr(n, "reduction", std::string("add"));
       })},
      {"Resize linear", node("Resize", 19, {img, Tensor(), F({1, 1, 2.5f, 1.5f}, {4})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("linear")); })},
      {"Resize nearest", node("Resize", 19, {img, Tensor(), F({1, 1, 0.5f, 3}, {4})})},
      {"Resize cubic", node("Resize", 19, {img, Tensor(), F({1, 1, 1.5f, 2}, {4})}, 1, [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("cubic")); })},
      {"Resize crop", node("Resize", 19, {img, F({0, 0, 0.1f, 0.2f, 1, 1, 0.7f, 0.9f}, {8}), F({1, 1, 2, 2}, {4})}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "coordinate_transformation_mode", std::string("tf_crop_and_resize"));
         SetAttr(n, "mode", std::string("linear"));
       })},
      {"ConstantOfShape", node("ConstantOfShape", 20, {I({300, 200}, {2})})},
      {"Trilu", node("Trilu", 14, {x})},
      {"EyeLike", node("EyeLike", 9, {x})},
      {"OneHot", node("OneHot", 11, {I({0, 5, 900, -1}, {4}), I({1000}, {}), F({0, 1}, {2})})},
      {"Attention with past", node("Attention", 23, {q, k, v, Tensor(), past_k, past_v}, 3)},
      {"TensorScatter", node("TensorScatter", 24, {cache, Random(DType::kFloat, {2, 2, 3, 16}, 21), I({5, 1021}, {2})})},
      {"LSTM short sequences", node("LSTM", 14, {seq, w, r, Tensor(), lens}, 3, [](onnx::NodeProto& n) { SetAttr(n, "hidden_size", int64_t(64)); })},
      {"GRU short sequences", node("GRU", 14, {seq, w3, r3, Tensor(), lens}, 2, [](onnx::NodeProto& n) { SetAttr(n, "hidden_size", int64_t(64)); })},
      {"RNN bidirectional short", node("RNN", 14, {seq, RandomUniform(DType::kFloat, {2, 64, 8}, 22, -0.5, 0.5), RandomUniform(DType::kFloat, {2, 64, 64}, 23, -0.5, 0.5), Tensor(), lens}, 2, [](onnx::NodeProto& n) {
         SetAttr(n, "hidden_size", int64_t(64));
         SetAttr(n, "direction", std::string("bidirectional"));
       })},
      {"MaxPool indices", node("MaxPool", 12, {img}, 2, [](onnx::NodeProto& n) {
         SetAttr(n, "kernel_shape", std::vector<int64_t>{3, 3});
         SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1});
         SetAttr(n, "strides", std::vector<int64_t>{2, 2});
       })},
      {"MaxUnpool", node("MaxUnpool", 11, {Random(DType::kFloat, {1, 2, 32, 32}, 24), Tensor::Zeros(DType::kInt64, {1, 2, 32, 32})}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2});
         SetAttr(n, "strides", std::vector<int64_t>{2, 2});
       })},
      {"ConvTranspose strided", node("ConvTranspose", 11, {img, RandomUniform(DType::kFloat, {2, 2, 2, 2}, 25)}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "strides", std::vector<int64_t>{3, 3});
       })},
      {"Col2Im", node("Col2Im", 18, {Random(DType::kFloat, {1, 4, 1024}, 26), I({64, 64}, {2}), I({2, 2}, {2})}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "strides", std::vector<int64_t>{2, 2});
       })},
      {"NonMaxSuppression", node("NonMaxSuppression", 11, {boxes, scores, I({150}, {1}), F({0.5f}, {1})})},
      {"ReverseSequence", node("ReverseSequence", 10, {x, rev_lens}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "batch_axis", int64_t(1));
         SetAttr(n, "time_axis", int64_t(0));
       })},
      {"Slice strided", node("Slice", 13, {x, I({250, 1}, {2}), I({-300, 128}, {2}), I({0, 1}, {2}), I({-3, 5}, {2})})},
      {"Split uneven", node("Split", 18, {x}, 3, [](onnx::NodeProto& n) { SetAttr(n, "num_outputs", int64_t(3)); })},
      {"Tile", node("Tile", 13, {x, I({2, 3}, {2})})},
      {"Concat", node("Concat", 13, {x, x, x}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(1)); })},
      {"DepthToSpace", node("DepthToSpace", 13, {Random(DType::kFloat, {1, 16, 32, 32}, 27)}, 1, [](onnx::NodeProto& n) { SetAttr(n, "blocksize", int64_t(2)); })},
      {"CumSum reverse exclusive", node("CumSum", 14, {x, I({1}, {})}, 1, [](onnx::NodeProto& n) {
         SetAttr(n, "reverse", int64_t(1));
         SetAttr(n, "exclusive", int64_t(1));
       })},
      {"ArgMax", node("ArgMax", 13, {x})},
      {"Einsum", node("Einsum", 12, {x, x}, 1, [](onnx::NodeProto& n) { SetAttr(n, "equation", std::string("ij,kj->ik")); })},
      {"DFT onesided", node("DFT", 20, {Random(DType::kFloat, {4, 1024, 1}, 28)}, 1, [](onnx::NodeProto& n) { SetAttr(n, "onesided", int64_t(1)); })},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Tensor>> out = c.t.Run();
    EXPECT_TRUE(out.ok()) << c.name << ": " << out.status();
    if (!out.ok()) continue;
    for (size_t o = 0; o < out->size(); ++o)
      EXPECT_EQ(PoisonedElements((*out)[o]), 0) << c.name << " output " << o << " of " << (*out)[o].size() << " elements";
  }
}


// Degenerate shapes and attributes that leave parts of an output outside
// every loop a kernel runs (a contraction over an empty dim, a reduction of
// nothing, sequences of length 0, windows wholly in the padding, rotary
// embedding over part of a head, a DFT longer than its signal...): with
// poisoning on, every element must still be written.
TEST(BuiltinOps, DegenerateShapesWriteEveryOutputElement) {
  ScopedPoison poison;
  auto N = [](std::string op, int64_t opset, std::vector<Tensor> in, size_t outs = 1, Attrs a = {}) {
    OpTester t;
    t.op = std::move(op);
    t.opset = opset;
    t.inputs = std::move(in);
    t.outputs = outs;
    t.attrs = std::move(a);
    return t;
  };
  auto A = [](Attrs a) { return a; };
  auto Z = [](Shape s) { return Random(DType::kFloat, std::move(s), 3); };
  std::vector<std::pair<std::string, OpTester>> cases = {
    {"MatMul K0", N("MatMul", 13, {Z({4, 0}), Z({0, 5})})},
    {"MatMul K0 big", N("MatMul", 13, {Z({64, 0}), Z({0, 512})})},
    {"MatMul K0 const", [&]{ auto t = N("MatMul", 13, {Z({64, 0}), Z({0, 512})}); t.constant = {false, true}; return t; }()},
    {"MatMul K0 batched", N("MatMul", 13, {Z({3, 4, 0}), Z({0, 5})})},
    {"MatMul int K0", N("MatMul", 13, {Random(DType::kInt32, {4, 0}, 1), Random(DType::kInt32, {0, 5}, 1)})},
    {"MatMul bf16 K0", N("MatMul", 13, {Random(DType::kBFloat16, {4, 0}, 1), Random(DType::kBFloat16, {0, 5}, 1)})},
    {"MatMul f16 K0", N("MatMul", 13, {Random(DType::kFloat16, {4, 0}, 1), Random(DType::kFloat16, {0, 5}, 1)})},
    {"MatMul double K0", N("MatMul", 13, {Random(DType::kDouble, {4, 0}, 1), Random(DType::kDouble, {0, 5}, 1)})},
    {"Gemm K0", N("Gemm", 13, {Z({4, 0}), Z({0, 5}), Z({5})})},
    {"Gemm K0 noC", N("Gemm", 13, {Z({4, 0}), Z({0, 5})})},
    {"Gemm K0 transB", N("Gemm", 13, {Z({4, 0}), Z({5, 0})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "transB", int64_t(1)); }))},
    {"MatMulInteger K0", N("MatMulInteger", 10, {Random(DType::kUInt8, {4, 0}, 1), Random(DType::kUInt8, {0, 5}, 1)})},
    {"QLinearMatMul K0", N("QLinearMatMul", 10, {Random(DType::kUInt8, {4, 0}, 1), F({1}, {}), Tensor::FromVector<uint8_t>({0}, {}), Random(DType::kUInt8, {0, 5}, 1), F({1}, {}), Tensor::FromVector<uint8_t>({0}, {}), F({1}, {}), Tensor::FromVector<uint8_t>({0}, {})})},
    {"Einsum K0", N("Einsum", 12, {Z({4, 0}), Z({0, 5})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "equation", std::string("ij,jk->ik")); }))},
    {"Einsum sum empty", N("Einsum", 12, {Z({4, 0})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "equation", std::string("ij->i")); }))},
    {"ReduceSum empty", N("ReduceSum", 13, {Z({4, 0}), I({1}, {1})})},
    {"ReduceProd empty", N("ReduceProd", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceMax empty", N("ReduceMax", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceMin empty", N("ReduceMin", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceMean empty", N("ReduceMean", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceL1 empty", N("ReduceL1", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceL2 empty", N("ReduceL2", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceLogSumExp empty", N("ReduceLogSumExp", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceSumSquare empty", N("ReduceSumSquare", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceLogSum empty", N("ReduceLogSum", 18, {Z({4, 0}), I({1}, {1})})},
    {"ReduceSum int empty", N("ReduceSum", 13, {Random(DType::kInt64, {4, 0}, 1), I({1}, {1})})},
    {"ReduceMax int empty", N("ReduceMax", 18, {Random(DType::kInt32, {4, 0}, 1), I({1}, {1})})},
    {"ReduceMax bool empty", N("ReduceMax", 20, {Tensor::Zeros(DType::kBool, {4, 0}), I({1}, {1})})},
    {"ReduceSum all empty", N("ReduceSum", 13, {Z({4, 0})})},
    {"ReduceSum f16 empty", N("ReduceSum", 13, {Random(DType::kFloat16, {4, 0}, 1), I({1}, {1})})},
    {"Conv Cin0", N("Conv", 11, {Z({1, 0, 4, 4}), Z({2, 0, 3, 3})})},
    {"Conv Cin0 bias", N("Conv", 11, {Z({1, 0, 4, 4}), Z({2, 0, 3, 3}), Z({2})})},
    {"ConvTranspose Cin0", N("ConvTranspose", 11, {Z({1, 0, 4, 4}), Z({0, 2, 3, 3})})},
    {"ConvTranspose outpad", N("ConvTranspose", 11, {Z({1, 2, 4, 4}), Z({2, 2, 3, 3}), Z({2})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "strides", std::vector<int64_t>{2, 2}); SetAttr(n, "output_padding", std::vector<int64_t>{1, 1}); }))},
    {"ConvTranspose output_shape", N("ConvTranspose", 11, {Z({1, 2, 4, 4}), Z({2, 2, 3, 3})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "strides", std::vector<int64_t>{3, 3}); SetAttr(n, "output_shape", std::vector<int64_t>{14, 14}); }))},
    {"ConvTranspose dil", N("ConvTranspose", 11, {Z({1, 2, 4, 4}), Z({2, 2, 3, 3})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "dilations", std::vector<int64_t>{3, 3}); SetAttr(n, "pads", std::vector<int64_t>{0, 0, 0, 0}); }))},
    {"ConvInteger K0", N("ConvInteger", 10, {Random(DType::kUInt8, {1, 0, 4, 4}, 1), Random(DType::kUInt8, {2, 0, 3, 3}, 1)})},
    {"MaxPool pads big", N("MaxPool", 12, {Z({1, 1, 4, 4})}, 2, A([](onnx::NodeProto& n){ SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1}); SetAttr(n, "ceil_mode", int64_t(1)); SetAttr(n, "strides", std::vector<int64_t>{3, 3}); }))},
    {"MaxPool dil ceil", N("MaxPool", 12, {Z({1, 1, 5, 5})}, 2, A([](onnx::NodeProto& n){ SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); SetAttr(n, "dilations", std::vector<int64_t>{2, 2}); SetAttr(n, "ceil_mode", int64_t(1)); SetAttr(n, "strides", std::vector<int64_t>{2, 2}); }))},
    {"AvgPool ceil pad", N("AveragePool", 19, {Z({1, 1, 4, 4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1}); SetAttr(n, "ceil_mode", int64_t(1)); SetAttr(n, "strides", std::vector<int64_t>{3, 3}); }))},
    {"LpPool", N("LpPool", 18, {Z({1, 1, 4, 4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); SetAttr(n, "pads", std::vector<int64_t>{1, 1, 1, 1}); SetAttr(n, "ceil_mode", int64_t(1)); SetAttr(n, "strides", std::vector<int64_t>{3, 3}); }))},
    {"LSTM all len 0", N("LSTM", 14, {Z({5, 2, 3}), Z({1, 8, 3}), Z({1, 8, 2}), Tensor(), Tensor::FromVector<int32_t>({0, 0}, {2})}, 3, A([](onnx::NodeProto& n){ SetAttr(n, "hidden_size", int64_t(2)); }))},
    {"LSTM lens bidir layout", N("LSTM", 14, {Z({2, 5, 3}), Z({2, 8, 3}), Z({2, 8, 2}), Tensor(), Tensor::FromVector<int32_t>({0, 3}, {2})}, 3, A([](onnx::NodeProto& n){ SetAttr(n, "hidden_size", int64_t(2)); SetAttr(n, "layout", int64_t(1)); SetAttr(n, "direction", std::string("bidirectional")); }))},
    {"GRU lens reverse", N("GRU", 14, {Z({5, 2, 3}), Z({1, 6, 3}), Z({1, 6, 2}), Tensor(), Tensor::FromVector<int32_t>({0, 3}, {2})}, 2, A([](onnx::NodeProto& n){ SetAttr(n, "hidden_size", int64_t(2)); SetAttr(n, "direction", std::string("reverse")); }))},
    {"RNN S0", N("RNN", 14, {Z({0, 2, 3}), Z({1, 2, 3}), Z({1, 2, 2})}, 2, A([](onnx::NodeProto& n){ SetAttr(n, "hidden_size", int64_t(2)); }))},
    {"LSTM S0", N("LSTM", 14, {Z({0, 2, 3}), Z({1, 8, 3}), Z({1, 8, 2})}, 3, A([](onnx::NodeProto& n){ SetAttr(n, "hidden_size", int64_t(2)); }))},
    {"Rotary partial", N("RotaryEmbedding", 23, {Z({1, 2, 3, 8}), Z({1, 3, 2}), Z({1, 3, 2})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "rotary_embedding_dim", int64_t(4)); }))},
    {"Rotary partial 3d", N("RotaryEmbedding", 23, {Z({1, 3, 16}), Z({1, 3, 2}), Z({1, 3, 2})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "rotary_embedding_dim", int64_t(4)); SetAttr(n, "num_heads", int64_t(2)); }))},
    {"Rotary interleaved partial", N("RotaryEmbedding", 23, {Z({1, 2, 3, 8}), Z({1, 3, 2}), Z({1, 3, 2})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "rotary_embedding_dim", int64_t(4)); SetAttr(n, "interleaved", int64_t(1)); }))},
    {"DFT pad", N("DFT", 20, {Z({2, 5, 1}), I({8}, {})}, 1)},
    {"DFT onesided pad", N("DFT", 20, {Z({2, 5, 1}), I({8}, {})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "onesided", int64_t(1)); }))},
    {"DFT inverse", N("DFT", 20, {Z({2, 5, 2}), I({3}, {})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "inverse", int64_t(1)); }))},
    {"STFT", N("STFT", 17, {Z({1, 64, 1}), I({8}, {}), Z({16}), I({16}, {})})},
    {"STFT onesided0", N("STFT", 17, {Z({1, 64, 1}), I({8}, {}), Z({16}), I({16}, {})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "onesided", int64_t(0)); }))},
    {"Pad empty const", N("Pad", 13, {Z({0, 3}), I({2, 1, 2, 1}, {4})})},
    {"Pad empty edge", N("Pad", 13, {Z({2, 0}), I({2, 0, 2, 0}, {4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "mode", std::string("edge")); }))},
    {"Concat empties", N("Concat", 13, {Z({0, 3}), Z({2, 3}), Z({0, 3})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "axis", int64_t(0)); }))},
    {"Attention S0 past", N("Attention", 23, {Z({1, 2, 3, 4}), Z({1, 2, 0, 4}), Z({1, 2, 0, 4}), Tensor(), Z({1, 2, 2, 4}), Z({1, 2, 2, 4})}, 3)},
    {"Attention qk out", N("Attention", 23, {Z({1, 2, 3, 4}), Z({1, 2, 5, 4}), Z({1, 2, 5, 4})}, 4, A([](onnx::NodeProto& n){ SetAttr(n, "qk_matmul_output_mode", int64_t(3)); SetAttr(n, "is_causal", int64_t(1)); }))},
    {"Attention qk out mode0 causal", N("Attention", 23, {Z({1, 2, 3, 4}), Z({1, 2, 5, 4}), Z({1, 2, 5, 4})}, 4, A([](onnx::NodeProto& n){ SetAttr(n, "is_causal", int64_t(1)); }))},
    {"Attention qk out mode1 mask", N("Attention", 23, {Z({1, 2, 3, 4}), Z({1, 2, 5, 4}), Z({1, 2, 5, 4}), Tensor::Zeros(DType::kBool, {3, 5})}, 4, A([](onnx::NodeProto& n){ SetAttr(n, "qk_matmul_output_mode", int64_t(1)); }))},
    {"Attention qk out mode2 softcap", N("Attention", 23, {Z({1, 2, 3, 4}), Z({1, 2, 5, 4}), Z({1, 2, 5, 4})}, 4, A([](onnx::NodeProto& n){ SetAttr(n, "qk_matmul_output_mode", int64_t(2)); SetAttr(n, "softcap", 2.0f); }))},
    {"Attention 3d gqa", N("Attention", 23, {Z({1, 3, 8}), Z({1, 5, 4}), Z({1, 5, 6})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "q_num_heads", int64_t(2)); SetAttr(n, "kv_num_heads", int64_t(1)); }))},
    {"Attention nonpad kv", N("Attention", 24, {Z({2, 2, 3, 4}), Z({2, 2, 5, 4}), Z({2, 2, 5, 4}), Tensor(), Tensor(), Tensor(), I({0, 3}, {2})}, 1)},
    {"Attention bool mask all false", N("Attention", 23, {Z({1, 2, 3, 4}), Z({1, 2, 5, 4}), Z({1, 2, 5, 4}), Tensor::Zeros(DType::kBool, {3, 5})}, 1)},
    {"TensorScatter empty upd", N("TensorScatter", 24, {Z({1, 2, 4, 3}), Z({1, 2, 0, 3})})},
    {"Split zero", N("Split", 18, {Z({4, 3}), I({0, 4, 0}, {3})}, 3)},
    {"Expand", N("Expand", 13, {Z({3, 1}), I({2, 3, 4}, {3})})},
    {"CumSum empty axis", N("CumSum", 14, {Z({0, 3}), I({0}, {})})},
    {"TopK k0", N("TopK", 11, {Z({3, 4}), I({0}, {1})}, 2)},
    {"Unique empty", N("Unique", 11, {Z({0})}, 4)},
    {"RoiAlign empty", N("RoiAlign", 16, {Z({1, 1, 4, 4}), Z({0, 4}), I({}, {0})})},
    {"RoiAlign out of image", N("RoiAlign", 16, {Z({1, 1, 4, 4}), F({10, 10, 20, 20, -5, -5, -1, -1}, {2, 4}), I({0, 0}, {2})})},
    {"GridSample zeros pad", N("GridSample", 20, {Z({1, 1, 4, 4}), F({-3, -3, 3, 3, 0, 0, 1.5f, -1.5f}, {1, 2, 2, 2})})},
    {"GridSample cubic", N("GridSample", 20, {Z({1, 1, 4, 4}), F({-3, -3, 3, 3, 0, 0, 1.5f, -1.5f}, {1, 2, 2, 2})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "mode", std::string("cubic")); }))},
    {"MaxUnpool output_shape", N("MaxUnpool", 11, {Z({1, 1, 2, 2}), I({0, 3, 8, 15}, {1, 1, 2, 2}), I({1, 1, 5, 5}, {4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); SetAttr(n, "strides", std::vector<int64_t>{2, 2}); }))},
    {"LayerNorm empty axis", N("LayerNormalization", 17, {Z({2, 0}), Z({0}), Z({0})}, 3, A([](onnx::NodeProto& n){ SetAttr(n, "axis", int64_t(0)); }))},
    {"LayerNorm mean/invstd", N("LayerNormalization", 17, {Z({2, 3, 4}), Z({4}), Z({4})}, 3)},
    {"GroupNorm", N("GroupNormalization", 21, {Z({2, 4, 3}), Z({4}), Z({4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "num_groups", int64_t(2)); }))},
    {"BatchNorm training", N("BatchNormalization", 15, {Z({2, 3, 4}), Z({3}), Z({3}), Z({3}), Z({3})}, 3, A([](onnx::NodeProto& n){ SetAttr(n, "training_mode", int64_t(1)); }))},
    {"Dropout mask", N("Dropout", 13, {Z({2, 3})}, 2)},
    {"Dropout mask train", N("Dropout", 13, {Z({2, 3}), F({0.5f}, {}), Tensor::FromVector<bool>({true}, {})}, 2)},
    {"NLL loss ignore", N("NegativeLogLikelihoodLoss", 13, {Z({3, 4}), I({0, 1, 2}, {3})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "ignore_index", int64_t(1)); SetAttr(n, "reduction", std::string("none")); }))},
    {"SCE loss log_prob", N("SoftmaxCrossEntropyLoss", 13, {Z({3, 4}), I({0, 1, 2}, {3})}, 2, A([](onnx::NodeProto& n){ SetAttr(n, "ignore_index", int64_t(1)); }))},
    {"DynamicQuantizeLinear empty", N("DynamicQuantizeLinear", 11, {Z({0})}, 3)},
    {"Det empty", N("Det", 11, {Z({0, 0})})},
    {"Det batch empty mat", N("Det", 11, {Z({3, 0, 0})})},
    {"Mel", N("MelWeightMatrix", 17, {I({8}, {}), I({16}, {}), I({8000}, {}), F({0}, {}), F({4000}, {})})},
    {"Hann", N("HannWindow", 17, {I({0}, {})})},
    {"Range", N("Range", 11, {F({0}, {}), F({10}, {}), F({0.3f}, {})})},
    {"EyeLike k big", N("EyeLike", 9, {Z({3, 4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "k", int64_t(10)); }))},
    {"Trilu k big", N("Trilu", 14, {Z({3, 4}), I({-10}, {})})},
    {"Multinomial", N("Multinomial", 7, {Z({2, 3})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "sample_size", int64_t(5)); }))},
    {"SpaceToDepth", N("SpaceToDepth", 13, {Z({1, 2, 4, 4})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "blocksize", int64_t(2)); }))},
    {"AffineGrid 3d", N("AffineGrid", 20, {Z({1, 3, 4}), I({1, 1, 2, 3, 4}, {5})})},
    {"DeformConv mask offset", N("DeformConv", 19, {Z({1, 2, 4, 4}), Z({2, 2, 2, 2}), Z({1, 8, 3, 3})})},
    {"StringSplit", N("StringSplit", 20, {[]{ Tensor t = Tensor::Zeros(DType::kString, {3}); t.data<std::string>()[0] = "a b c"; t.data<std::string>()[1] = ""; t.data<std::string>()[2] = "x"; return t; }()}, 2)},
    {"CenterCropPad odd", N("CenterCropPad", 18, {Z({3, 5}), I({6, 2}, {2})})},
    {"GatherND batch", N("GatherND", 13, {Z({2, 3, 4}), I({0, 1, 2, 0}, {2, 2, 1})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "batch_dims", int64_t(1)); }))},
    {"MeanVarNorm", N("MeanVarianceNormalization", 13, {Z({1, 2, 0, 2})})},
    {"QuantizeLinear blocked", N("QuantizeLinear", 21, {Z({2, 6}), F({1, 2, 3, 4}, {2, 2}), Tensor::FromVector<uint8_t>({0, 0, 0, 0}, {2, 2})}, 1, A([](onnx::NodeProto& n){ SetAttr(n, "axis", int64_t(1)); SetAttr(n, "block_size", int64_t(3)); }))},
  };
  for (auto& [name, t] : cases) {
    absl::StatusOr<std::vector<Tensor>> out = t.Run();
    EXPECT_TRUE(out.ok()) << name << ": " << out.status();
    if (!out.ok()) continue;
    for (size_t o = 0; o < out->size(); ++o)
      EXPECT_EQ(PoisonedElements((*out)[o]), 0) << name << " output " << o << ": " << LowerName((*out)[o].dtype())
                                                 << ShapeToString((*out)[o].shape());
  }
}

}  // namespace
}  // namespace onnx_mini
