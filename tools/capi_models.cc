// The small models of the C API tests (tests/capi), written by make-testdata
// into testdata/capi/.
#include "tools/capi_models.h"

#include <fstream>

#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

void Write(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// Names the dims of graph input or output `value` (as dim_param), in order.
void NameDims(onnx::ValueInfoProto* value, const std::vector<std::string>& names) {
  auto* shape = value->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (size_t i = 0; i < names.size() && int(i) < shape->dim_size(); ++i)
    if (!names[i].empty()) shape->mutable_dim(int(i))->set_dim_param(names[i]);
}

// present = TensorScatter(cache [batch,cache,2], update [batch,1,2], write_indices), axis 1;
// update_neg = Neg(update); with `read_cache_later`, old_neg = Neg(cache) after the scatter.
void Scatter(const std::filesystem::path& path, bool read_cache_later) {
  ModelBuilder m(24, 10);
  m.Input("cache", DType::kFloat, {-1, -1, 2})
      .Input("update", DType::kFloat, {-1, 1, 2})
      .Input("write_indices", DType::kInt64, {-1})
      .Output("present", DType::kFloat, {-1, -1, 2})
      .Output("update_neg", DType::kFloat, {-1, 1, 2});
  NameDims(m.graph().mutable_input(0), {"batch", "cache"});
  NameDims(m.graph().mutable_input(1), {"batch"});
  NameDims(m.graph().mutable_input(2), {"batch"});
  NameDims(m.graph().mutable_output(0), {"batch", "cache"});
  NameDims(m.graph().mutable_output(1), {"batch"});
  m.Node("Neg", {"update"}, {"update_neg"});
  SetAttr(m.Node("TensorScatter", {"cache", "update", "write_indices"}, {"present"}), "axis", int64_t(1));
  if (read_cache_later) {
    m.Output("old_neg", DType::kFloat, {-1, -1, 2});
    NameDims(m.graph().mutable_output(2), {"batch", "cache"});
    m.Node("Neg", {"cache"}, {"old_neg"});
  }
  Write(path, m.Serialize());
}

// z = Neg(com.example::Affine(x, scale=2, offset=1)), x of `dtype` [n]; the
// op's domain and type may be others (domain "": ai.onnx at opset 17, else
// `domain` at opset 1).
void Custom(const std::filesystem::path& path, DType dtype, const std::string& domain = "com.example",
            const std::string& op_type = "Affine") {
  ModelBuilder m(17);
  if (!domain.empty()) m.Opset(domain, 1);
  m.Input("x", dtype, {-1}).Output("z", dtype, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  NameDims(m.graph().mutable_output(0), {"n"});
  onnx::NodeProto& affine = m.Node(op_type, {"x"}, {"y"}, domain);
  affine.set_name("affine");
  SetAttr(affine, "scale", 2.0f);
  SetAttr(affine, "offset", 1.0f);
  m.Node("Neg", {"y"}, {"z"});
  Write(path, m.Serialize());
}

// z = Neg(com.example::Positives(x)): x float [n], z float [?], the
// positive elements of x (a size known only when the op computes).
void CustomPositives(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.Opset("com.example", 1);
  m.Input("x", DType::kFloat, {-1}).Output("z", DType::kFloat, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  m.Node("Positives", {"x"}, {"y"}, "com.example").set_name("positives");
  m.Node("Neg", {"y"}, {"z"});
  Write(path, m.Serialize());
}

// z = Not(com.example::Mask(x)): x float [n], the mask bool [n] (its
// compute callback stores 255 for true).
void CustomMask(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.Opset("com.example", 1);
  m.Input("x", DType::kFloat, {-1}).Output("z", DType::kBool, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  NameDims(m.graph().mutable_output(0), {"n"});
  m.Node("Mask", {"x"}, {"y"}, "com.example").set_name("mask");
  m.Node("Not", {"y"}, {"z"});
  Write(path, m.Serialize());
}

// A graph value of a sequence or optional type whose tensors are float [?]
// (each item its own length).
void SetFloatsType(onnx::ValueInfoProto* value, const std::string& name, bool sequence, bool optional) {
  value->set_name(name);
  onnx::TypeProto* type = value->mutable_type();
  if (optional) type = type->mutable_optional_type()->mutable_elem_type();
  if (sequence) type = type->mutable_sequence_type()->mutable_elem_type();
  onnx::TypeProto::Tensor* tensor = type->mutable_tensor_type();
  tensor->set_elem_type(int32_t(DType::kFloat));
  tensor->mutable_shape()->add_dim();
}

// longer = SequenceInsert(seq, x), count = SequenceLength(longer),
// has = OptionalHasElement(opt), maybe = Identity(opt):
// seq a sequence of float [?], x float [n], opt an optional float [?].
void Sequence(const std::filesystem::path& path) {
  ModelBuilder m(18);
  m.Input("x", DType::kFloat, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  SetFloatsType(m.graph().add_input(), "seq", true, false);
  SetFloatsType(m.graph().add_input(), "opt", false, true);
  SetFloatsType(m.graph().add_output(), "longer", true, false);
  m.Output("count", DType::kInt64, {}).Output("has", DType::kBool, {});
  SetFloatsType(m.graph().add_output(), "maybe", false, true);
  m.Node("SequenceInsert", {"seq", "x"}, {"longer"});
  m.Node("SequenceLength", {"longer"}, {"count"});
  m.Node("OptionalHasElement", {"opt"}, {"has"});
  m.Node("Identity", {"opt"}, {"maybe"});
  Write(path, m.Serialize());
}

// y = Loop(trips, x): the body adds 1 to the carried x, so y = x + trips. A
// trip count of 2^62 runs for ever: the run-options tests stop it.
void CountingLoop(const std::filesystem::path& path) {
  ModelBuilder body(17);
  body.Input("i", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("x_in", DType::kFloat, {-1});
  body.Node("Identity", {"cond_in"}, {"cond_out"});
  body.Node("Add", {"x_in", "one"}, {"x_out"});
  body.Output("cond_out", DType::kBool, {}).Output("x_out", DType::kFloat, {-1});
  onnx::GraphProto body_graph = body.graph();
  body_graph.set_name("body");
  ModelBuilder m(17);
  m.Input("trips", DType::kInt64, {}).Input("x", DType::kFloat, {-1}).Output("y", DType::kFloat, {-1});
  NameDims(m.graph().mutable_input(1), {"n"});
  NameDims(m.graph().mutable_output(0), {"n"});
  Tensor one = Tensor::Zeros(DType::kFloat, {1});
  one.data<float>()[0] = 1;
  m.Initializer("one", one);
  onnx::NodeProto& loop = m.Node("Loop", {"trips", "", "x"}, {"y"});
  loop.set_name("loop");
  onnx::AttributeProto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body_graph;
  Write(path, m.Serialize());
}

// neg = Neg(x), id = Identity(x) (a view of x), in that order; x float [n].
void Alias(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {-1}).Output("neg", DType::kFloat, {-1}).Output("id", DType::kFloat, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  NameDims(m.graph().mutable_output(0), {"n"});
  NameDims(m.graph().mutable_output(1), {"n"});
  m.Node("Neg", {"x"}, {"neg"});
  m.Node("Identity", {"x"}, {"id"});
  Write(path, m.Serialize());
}

// relu = Relu(x), relu_t = Transpose(relu); x float [3,3].
void Chain(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3, 3}).Output("relu", DType::kFloat, {3, 3}).Output("relu_t", DType::kFloat, {3, 3});
  m.Node("Relu", {"x"}, {"relu"});
  m.Node("Transpose", {"relu"}, {"relu_t"});
  Write(path, m.Serialize());
}

// not = Not(m), eq = Equal(m, true), f = Cast(m, float), nz = NonZero(m); m bool [n].
void BoolOps(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.Input("m", DType::kBool, {-1})
      .Output("not", DType::kBool, {-1})
      .Output("eq", DType::kBool, {-1})
      .Output("f", DType::kFloat, {-1})
      .Output("nz", DType::kInt64, {1, -1});
  NameDims(m.graph().mutable_input(0), {"n"});
  for (int i = 0; i < 3; ++i) NameDims(m.graph().mutable_output(i), {"n"});
  m.Initializer("true", Tensor::FromVector<bool>({true}, {}));
  m.Node("Not", {"m"}, {"not"});
  m.Node("Equal", {"m", "true"}, {"eq"});
  SetAttr(m.Node("Cast", {"m"}, {"f"}), "to", int64_t(DType::kFloat));
  m.Node("NonZero", {"m"}, {"nz"});
  Write(path, m.Serialize());
}

// upper = StringNormalizer(text, UPPER), match = RegexFullMatch(text, "[a-z]+"),
// joined = StringConcat(text, "!"), same = Identity(text); text string [n].
void Strings(const std::filesystem::path& path) {
  ModelBuilder m(20);
  m.Input("text", DType::kString, {-1})
      .Output("upper", DType::kString, {-1})
      .Output("match", DType::kBool, {-1})
      .Output("joined", DType::kString, {-1})
      .Output("same", DType::kString, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  for (int i = 0; i < 4; ++i) NameDims(m.graph().mutable_output(i), {"n"});
  m.Initializer("bang", Tensor::FromVector<std::string>({"!"}, {}));
  SetAttr(m.Node("StringNormalizer", {"text"}, {"upper"}), "case_change_action", std::string("UPPER"));
  SetAttr(m.Node("RegexFullMatch", {"text"}, {"match"}), "pattern", std::string("[a-z]+"));
  m.Node("StringConcat", {"text", "bang"}, {"joined"});
  m.Node("Identity", {"text"}, {"same"});
  Write(path, m.Serialize());
}

// A graph value of a sequence of string [?].
void SetStringsType(onnx::ValueInfoProto* value, const std::string& name) {
  value->set_name(name);
  onnx::TypeProto::Tensor* tensor =
      value->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
  tensor->set_elem_type(int32_t(DType::kString));
  tensor->mutable_shape()->add_dim();
}

// longer = SequenceInsert(seq, text), count = SequenceLength(longer):
// seq a sequence of string [?], text string [n].
void StringSequence(const std::filesystem::path& path) {
  ModelBuilder m(20);
  m.Input("text", DType::kString, {-1});
  NameDims(m.graph().mutable_input(0), {"n"});
  SetStringsType(m.graph().add_input(), "seq");
  SetStringsType(m.graph().add_output(), "longer");
  m.Output("count", DType::kInt64, {});
  m.Node("SequenceInsert", {"seq", "text"}, {"longer"});
  m.Node("SequenceLength", {"longer"}, {"count"});
  Write(path, m.Serialize());
}

// y = Neg(x), x float [2]; with `every_field`, every metadata field of the
// model set (producer, domain, doc strings, version, metadata_props, a
// second opset import), else none of them (no producer, no graph name).
void Metadata(const std::filesystem::path& path, bool every_field) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
  m.Node("Neg", {"x"}, {"y"});
  onnx::ModelProto& model = m.proto();
  if (every_field) {
    model.set_producer_name("capi-test");
    model.set_producer_version("1.2.3");
    model.set_domain("org.example");
    model.set_doc_string("A model with every metadata field.");
    model.set_model_version(42);
    m.graph().set_name("negate");
    m.graph().set_doc_string("Negates x.");
    auto* prop = model.add_metadata_props();
    prop->set_key("author");
    prop->set_value("onnx-mini");
    prop = model.add_metadata_props();
    prop->set_key("license");
    prop->set_value("MIT");
    m.Opset("com.example", 3);
  } else {
    model.clear_producer_name();
    m.graph().clear_name();
  }
  Write(path, m.Serialize());
}

// y = Mul(x, s), id = Identity(s): x float [3], s a float scalar.
void Scalar(const std::filesystem::path& path) {
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {3}).Input("s", DType::kFloat, {});
  m.Output("y", DType::kFloat, {3}).Output("id", DType::kFloat, {});
  m.Node("Mul", {"x", "s"}, {"y"});
  m.Node("Identity", {"s"}, {"id"});
  Write(path, m.Serialize());
}

// A graph attribute holding `graph` under `graph_name`.
void SetGraph(onnx::NodeProto& node, const std::string& name, onnx::GraphProto graph, const std::string& graph_name) {
  graph.set_name(graph_name);
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = std::move(graph);
}

// The profiling tests' model, every node named: s = sum(ReduceSum(x)),
// y = If(s > 0) then Relu(x) ("relu") else Neg(x) ("neg"), z = Loop(trips, y)
// whose body ("cond", "add") adds x at each iteration: z = y + trips * x.
// x float [2,3], trips int64 [].
void Profile(const std::filesystem::path& path) {
  ModelBuilder then_branch(17), else_branch(17), body(17);
  then_branch.Node("Relu", {"x"}, {"relu_out"}).set_name("relu");
  then_branch.Output("relu_out", DType::kFloat, {2, 3});
  else_branch.Node("Neg", {"x"}, {"neg_out"}).set_name("neg");
  else_branch.Output("neg_out", DType::kFloat, {2, 3});
  body.Input("i", DType::kInt64, {}).Input("cond_in", DType::kBool, {}).Input("acc_in", DType::kFloat, {2, 3});
  body.Node("Identity", {"cond_in"}, {"cond_out"}).set_name("cond");
  body.Node("Add", {"acc_in", "x"}, {"acc_out"}).set_name("add");
  body.Output("cond_out", DType::kBool, {}).Output("acc_out", DType::kFloat, {2, 3});
  ModelBuilder m(17);
  m.Input("x", DType::kFloat, {2, 3}).Input("trips", DType::kInt64, {}).Output("z", DType::kFloat, {2, 3});
  m.Initializer("zero", Tensor::Zeros(DType::kFloat, {}));
  onnx::NodeProto& sum = m.Node("ReduceSum", {"x"}, {"s"});
  sum.set_name("sum");
  SetAttr(sum, "keepdims", int64_t(0));
  m.Node("Greater", {"s", "zero"}, {"c"}).set_name("gt");
  onnx::NodeProto& branch = m.Node("If", {"c"}, {"y"});
  branch.set_name("if");
  SetGraph(branch, "then_branch", then_branch.graph(), "then");
  SetGraph(branch, "else_branch", else_branch.graph(), "else");
  onnx::NodeProto& loop = m.Node("Loop", {"trips", "", "y"}, {"z"});
  loop.set_name("loop");
  SetGraph(loop, "body", body.graph(), "body");
  Write(path, m.Serialize());
}

}  // namespace

void WriteCapiModels(const std::filesystem::path& dir) {
  Alias(dir / "alias.onnx");
  Chain(dir / "chain.onnx");
  BoolOps(dir / "bool_ops.onnx");
  Scatter(dir / "scatter.onnx", false);
  Scatter(dir / "scatter_read.onnx", true);
  Custom(dir / "custom.onnx", DType::kFloat);
  Custom(dir / "custom_int.onnx", DType::kInt32);
  Custom(dir / "custom_default_domain.onnx", DType::kFloat, "", "AffineCustom");
  Custom(dir / "custom_left.onnx", DType::kFloat, "com.left");
  CustomPositives(dir / "custom_positives.onnx");
  CustomMask(dir / "custom_mask.onnx");
  Sequence(dir / "sequence.onnx");
  CountingLoop(dir / "loop.onnx");
  Strings(dir / "strings.onnx");
  StringSequence(dir / "string_sequence.onnx");
  Metadata(dir / "metadata.onnx", true);
  Metadata(dir / "metadata_none.onnx", false);
  Scalar(dir / "scalar.onnx");
  Profile(dir / "profile.onnx");
}

}  // namespace onnx_mini
