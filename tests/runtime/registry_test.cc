// The op registry: version ranges, row validation, and ops added from outside.
#include "runtime/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ops/ops.h"
#include "runtime/loader.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(Registry, BuiltinRowsRegisterWithoutOverlaps) {
  OpRegistry registry;
  EXPECT_TRUE(RegisterBuiltinOps(registry).ok());
  EXPECT_GT(registry.rows().size(), 50u);
}

TEST(Registry, OpsetPicksTheVersionRange) {
  const OpRegistry& ops = BuiltinOps();
  absl::StatusOr<const RegisteredOp*> add = ops.Find("", "Add", 14);
  ASSERT_TRUE(add.ok());
  EXPECT_EQ((*add)->def.since_version, 1);  // one row back to Add-1 (legacy broadcasting is the kernel's)
  EXPECT_EQ((*ops.Find("", "Squeeze", 11))->def.last_version, 12);
  EXPECT_EQ((*ops.Find("", "Squeeze", 13))->def.since_version, 13);
  EXPECT_EQ((*ops.Find("", "Gemm", 10))->def.last_version, 10);  // C is required before 11
  EXPECT_TRUE(absl::IsUnimplemented(ops.Find("", "Erf", 8).status()));  // before the op's first version
  EXPECT_EQ(Message(ops.Find("com.other", "Add", 14).status()), "not implemented: com.other::Add opset 14");
}

absl::StatusOr<std::unique_ptr<Op>> NoOp(const Node&) { return absl::UnimplementedError("unused"); }

TEST(Registry, OverlappingAndMalformedRowsAreRefused) {
  OpRegistry registry;
  ASSERT_TRUE(registry.Add({kOnnxDomain, "Foo", Versions{1, 9}, "T", "T", {{"T", {DType::kFloat}}}, NoOp}).ok());
  EXPECT_TRUE(registry.Add({kOnnxDomain, "Foo", Versions{10}, "T", "T", {{"T", {DType::kFloat}}}, NoOp}).ok());
  absl::Status overlap = registry.Add({kOnnxDomain, "Foo", Versions{5, 12}, "T", "T", {{"T", {DType::kFloat}}}, NoOp});
  EXPECT_TRUE(absl::IsAlreadyExists(overlap));
  EXPECT_THAT(Message(overlap), HasSubstr("ai.onnx::Foo: versions 5..12 overlap"));
  EXPECT_THAT(Message(registry.Add({kOnnxDomain, "Bar", Versions{1}, "T U", "T", {{"T", {DType::kFloat}}}, NoOp})),
              HasSubstr("unknown type constraint 'U'"));
  EXPECT_THAT(Message(registry.Add({kOnnxDomain, "Bar", Versions{1}, "T* T", "T", {{"T", {DType::kFloat}}}, NoOp})),
              HasSubstr("only the last position may be variadic"));
  EXPECT_THAT(Message(registry.Add({kOnnxDomain, "Bar", Versions{3, 2}, "T", "T", {{"T", {DType::kFloat}}}, NoOp})),
              HasSubstr("invalid version range"));
  // A registry over the built-in one cannot shadow a built-in row.
  OpRegistry custom(&BuiltinOps());
  EXPECT_TRUE(absl::IsAlreadyExists(custom.Add({kOnnxDomain, "Add", Versions{14}, "T T", "T", {{"T", {DType::kFloat}}}, NoOp})));
}

TEST(Registry, VariadicTailsOfOneOrZeroOrMore) {
  OpRegistry registry;
  ASSERT_TRUE(registry.Add({kOnnxDomain, "Some", Versions{1}, "S V*", "S", {{"S", {DType::kFloat}}, {"V", {DType::kFloat}}}, NoOp}).ok());
  ASSERT_TRUE(registry.Add({kOnnxDomain, "Any", Versions{1}, "S V*?", "S", {{"S", {DType::kFloat}}, {"V", {DType::kFloat}}}, NoOp}).ok());
  const RegisteredOp* some = *registry.Find("", "Some", 1);
  const RegisteredOp* any = *registry.Find("", "Any", 1);
  EXPECT_EQ(some->min_inputs, 2u);
  EXPECT_EQ(any->min_inputs, 1u);
  EXPECT_EQ(any->max_inputs, SIZE_MAX);
  EXPECT_EQ(any->input(5)->constraint, 1);
}

// A custom op from outside ops/: y = x * scale + offset, float only.
class AffineOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const Attribute* scale = node.attr("scale");
    if (scale == nullptr || scale->type != AttrType::kFloat)
      return absl::InvalidArgumentError(node.Describe() + ": attribute 'scale' (a float) is required");
    return std::unique_ptr<Op>(new AffineOp(scale->f, node.attr_float("offset", 0)));
  }
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = x.data<float>()[i] * scale_ + offset_;
    return absl::OkStatus();
  }

 private:
  AffineOp(float scale, float offset) : scale_(scale), offset_(offset) {}
  float scale_, offset_;
};

TEST(Registry, CustomOpRegisteredFromOutsideRuns) {
  OpRegistry ops(&BuiltinOps());
  ASSERT_TRUE(ops.Add({"com.example", "Affine", Versions{1}, "T", "T", {{"T", {DType::kFloat}}}, AffineOp::Create}).ok());
  ModelBuilder m(17);
  m.Opset("com.example", 1);
  m.Input("x", DType::kFloat, {3}).Output("z", DType::kFloat, {3});
  SetAttr(m.Node("Affine", {"x"}, {"y"}, "com.example"), "scale", 2.0f);
  m.Node("Neg", {"y"}, {"z"});  // built-in ops still resolve through the fallback
  absl::StatusOr<Graph> g = LoadModelFromBytes(m.Serialize(), "");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(*std::move(g), ops);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<std::vector<Tensor>> out = (*s)->Run({{"x", Tensor::FromVector<float>({1, 2, 3}, {3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const float* z = (*out)[0].data<float>();
  EXPECT_EQ(z[0], -2);
  EXPECT_EQ(z[1], -4);
  EXPECT_EQ(z[2], -6);

  // The custom row's declared types and attributes are enforced like a built-in's.
  ModelBuilder bad(17);
  bad.Opset("com.example", 1);
  bad.Input("x", DType::kDouble, {3}).Output("y", DType::kDouble, {3});
  SetAttr(bad.Node("Affine", {"x"}, {"y"}, "com.example"), "scale", 2.0f);
  absl::StatusOr<std::unique_ptr<Session>> s2 = Session::Create(*LoadModelFromBytes(bad.Serialize(), ""), ops);
  EXPECT_EQ(Message(s2.status()), "not implemented: com.example::Affine opset 1 for double");
  ModelBuilder no_attr(17);
  no_attr.Opset("com.example", 1);
  no_attr.Input("x", DType::kFloat, {3}).Output("y", DType::kFloat, {3});
  no_attr.Node("Affine", {"x"}, {"y"}, "com.example");
  s2 = Session::Create(*LoadModelFromBytes(no_attr.Serialize(), ""), ops);
  EXPECT_THAT(Message(s2.status()), HasSubstr("attribute 'scale' (a float) is required"));
  // Without the custom registry the op is unknown.
  EXPECT_TRUE(absl::IsUnimplemented(Session::Create(*LoadModelFromBytes(m.Serialize(), ""), BuiltinOps()).status()));
}

}  // namespace
}  // namespace onnx_mini
