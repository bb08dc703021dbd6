#include "runtime/loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb.h"
#include "runtime/element.h"
#include "runtime/registry.h"
#include "runtime/session.h"
#include "tests/ops/graph_util.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

namespace fs = std::filesystem;

onnx::TensorProto Proto(DType dtype, std::vector<int64_t> dims) {
  onnx::TensorProto p;
  p.set_name("t");
  p.set_data_type(int32_t(dtype));
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

TEST(TensorFromProto, RawData) {
  onnx::TensorProto p = Proto(DType::kFloat, {2});
  const float v[2] = {1.5f, -2};
  p.set_raw_data(v, sizeof(v));
  absl::StatusOr<Tensor> t = TensorFromProto(p, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), Shape({2}));
  EXPECT_EQ(t->data<float>()[1], -2.0f);
}

TEST(TensorFromProto, EveryTypedField) {
  onnx::TensorProto f = Proto(DType::kFloat, {2});
  f.add_float_data(1), f.add_float_data(2);
  EXPECT_EQ(TensorFromProto(f, "")->data<float>()[1], 2.0f);

  onnx::TensorProto d = Proto(DType::kDouble, {1});
  d.add_double_data(0.1);
  EXPECT_EQ(TensorFromProto(d, "")->data<double>()[0], 0.1);

  onnx::TensorProto i64 = Proto(DType::kInt64, {1});
  i64.add_int64_data(-(int64_t(1) << 40));
  EXPECT_EQ(TensorFromProto(i64, "")->data<int64_t>()[0], -(int64_t(1) << 40));

  onnx::TensorProto u64 = Proto(DType::kUInt64, {1});
  u64.add_uint64_data(~uint64_t(0));
  EXPECT_EQ(TensorFromProto(u64, "")->data<uint64_t>()[0], ~uint64_t(0));

  onnx::TensorProto u32 = Proto(DType::kUInt32, {1});
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(TensorFromProto(u32, "")->data<uint32_t>()[0], 4000000000u);

  onnx::TensorProto i8 = Proto(DType::kInt8, {2});
  i8.add_int32_data(-7), i8.add_int32_data(100);
  EXPECT_EQ(TensorFromProto(i8, "")->data<int8_t>()[0], -7);

  onnx::TensorProto b = Proto(DType::kBool, {2});
  b.add_int32_data(0), b.add_int32_data(5);
  EXPECT_EQ(TensorFromProto(b, "")->data<bool>()[1], true);

  onnx::TensorProto h = Proto(DType::kFloat16, {1});
  h.add_int32_data(0x3C00);
  EXPECT_EQ(ToFloat(TensorFromProto(h, "")->data<Float16>()[0]), 1.0f);

  onnx::TensorProto f8 = Proto(DType::kFloat8E5M2, {1});
  f8.add_int32_data(0x3C);  // 1.0
  EXPECT_EQ(ToFloat(TensorFromProto(f8, "")->data<Float8E5M2>()[0]), 1.0f);

  onnx::TensorProto s = Proto(DType::kString, {2});
  s.add_string_data("a"), s.add_string_data("bc");
  EXPECT_EQ(TensorFromProto(s, "")->data<std::string>()[1], "bc");

  onnx::TensorProto c = Proto(DType::kComplex64, {1});
  c.add_float_data(1), c.add_float_data(-1);
  EXPECT_EQ(TensorFromProto(c, "")->data<Complex64>()[0], Complex64(1, -1));
}

TEST(TensorFromProto, PackedFourBitInInt32DataAndRaw) {
  // 3 int4 elements {1, -2, 7}: bytes 0xE1, 0x07.
  onnx::TensorProto p = Proto(DType::kInt4, {3});
  p.add_int32_data(0xE1), p.add_int32_data(0x07);
  absl::StatusOr<Tensor> t = TensorFromProto(p, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(GetDouble(*t, 0), 1);
  EXPECT_EQ(GetDouble(*t, 1), -2);
  EXPECT_EQ(GetDouble(*t, 2), 7);

  onnx::TensorProto r = Proto(DType::kUInt4, {3});
  r.set_raw_data(std::string("\xE1\x07", 2));
  EXPECT_EQ(GetDouble(*TensorFromProto(r, ""), 1), 14);
  r.set_raw_data(std::string("\xE1", 1));  // one byte short
  EXPECT_FALSE(TensorFromProto(r, "").ok());
}

TEST(TensorFromProto, RejectsMalformed) {
  onnx::TensorProto bad_type = Proto(DType::kFloat, {1});
  bad_type.set_data_type(99);
  EXPECT_NE(TensorFromProto(bad_type, "").status().message().find("invalid element type 99"), std::string::npos);

  onnx::TensorProto short_raw = Proto(DType::kFloat, {4});
  short_raw.set_raw_data(std::string(8, '\0'));
  absl::Status s = TensorFromProto(short_raw, "").status();
  EXPECT_NE(s.message().find("needs 16 bytes, has 8"), std::string::npos) << s;

  onnx::TensorProto wrong_count = Proto(DType::kInt64, {3});
  wrong_count.add_int64_data(1);
  EXPECT_FALSE(TensorFromProto(wrong_count, "").ok());

  onnx::TensorProto negative = Proto(DType::kFloat, {-1});
  EXPECT_FALSE(TensorFromProto(negative, "").ok());

  // A huge declared shape with no data must fail without allocating it.
  onnx::TensorProto huge = Proto(DType::kFloat, {int64_t(1) << 40, int64_t(1) << 20});
  EXPECT_FALSE(TensorFromProto(huge, "").ok());
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onnx_mini_ext_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "model");
    const float v[3] = {1, 2, 3};
    std::ofstream(dir_ / "model" / "w.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(v), sizeof(v));
    std::ofstream(dir_ / "secret.bin", std::ios::binary) << std::string(12, 'x');
  }
  void TearDown() override { fs::remove_all(dir_); }
  onnx::TensorProto External(const std::string& location, const std::string& offset,
                             const std::string& length) {
    onnx::TensorProto p = Proto(DType::kFloat, {2});
    p.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      if (v.empty()) return;
      auto* e = p.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", offset);
    add("length", length);
    return p;
  }
  fs::path dir_;
};

TEST_F(ExternalData, ReadsAtOffset) {
  absl::StatusOr<Tensor> t = TensorFromProto(External("w.bin", "4", "8"), (dir_ / "model").string());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<float>()[0], 2.0f);
  EXPECT_EQ(t->data<float>()[1], 3.0f);
}

TEST_F(ExternalData, RejectsEscapesAndOverruns) {
  const std::string base = (dir_ / "model").string();
  absl::Status up = TensorFromProto(External("../secret.bin", "", "8"), base).status();
  EXPECT_NE(up.message().find("escapes the model folder"), std::string::npos) << up;
  absl::Status abs = TensorFromProto(External((dir_ / "secret.bin").string(), "", "8"), base).status();
  EXPECT_NE(abs.message().find("relative"), std::string::npos) << abs;
  absl::Status past = TensorFromProto(External("w.bin", "8", "8"), base).status();
  EXPECT_NE(past.message().find("past the end"), std::string::npos) << past;
  absl::Status offset = TensorFromProto(External("w.bin", "100", ""), base).status();
  EXPECT_NE(offset.message().find("past the end"), std::string::npos) << offset;
  EXPECT_FALSE(TensorFromProto(External("missing.bin", "", ""), base).ok());
  // A symlink inside the folder that points outside is an escape too.
  fs::create_symlink(dir_ / "secret.bin", dir_ / "model" / "link.bin");
  absl::Status link = TensorFromProto(External("link.bin", "", "8"), base).status();
  EXPECT_NE(link.message().find("symbolic link"), std::string::npos) << link;
}

TEST_F(ExternalData, RefusesWhatIsNotARegularFileInsideTheFolder) {
  const std::string base = (dir_ / "model").string();
  // A directory used to give a size of INT64_MAX and an allocation of that.
  fs::create_directories(dir_ / "model" / "sub");
  absl::Status folder = TensorFromProto(External("sub", "", ""), base).status();
  EXPECT_NE(folder.message().find("is not a regular file"), std::string::npos) << folder;
  // A FIFO used to block the open forever.
  ASSERT_EQ(::mkfifo((dir_ / "model" / "pipe").c_str(), 0600), 0);
  absl::Status fifo = TensorFromProto(External("pipe", "", "8"), base).status();
  EXPECT_NE(fifo.message().find("is not a regular file"), std::string::npos) << fifo;
  // A folder symlink on the way is refused like a file symlink.
  fs::create_directory_symlink(dir_, dir_ / "model" / "up");
  absl::Status via = TensorFromProto(External("up/secret.bin", "", "8"), base).status();
  EXPECT_NE(via.message().find("symbolic link"), std::string::npos) << via;
  // A file in a real subfolder is fine.
  fs::copy_file(dir_ / "model" / "w.bin", dir_ / "model" / "sub" / "w.bin");
  absl::StatusOr<Tensor> t = TensorFromProto(External("sub/./w.bin", "0", "8"), base);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<float>()[1], 2.0f);
}

TEST_F(ExternalData, OffsetAndLengthAreStrictNonNegativeIntegers) {
  const std::string base = (dir_ / "model").string();
  for (const auto& [offset, length] : std::vector<std::pair<std::string, std::string>>{
           {"abc", "8"}, {"4", "-1"}, {"-4", "8"}, {"4x", "8"}, {"4", "8 "}, {"1e0", "8"},
           {"4", "99999999999999999999"}, {"+4", "8"}}) {
    absl::Status s = TensorFromProto(External("w.bin", offset, length), base).status();
    EXPECT_NE(s.message().find("is not a non-negative integer"), std::string::npos)
        << offset << " " << length << ": " << s;
  }
  // The length must be what the shape needs: no "rest of the file".
  absl::Status s = TensorFromProto(External("w.bin", "0", "12"), base).status();
  EXPECT_NE(s.message().find("needs 8 bytes, has 12"), std::string::npos) << s;
  s = TensorFromProto(External("w.bin", "0", ""), base).status();
  EXPECT_NE(s.message().find("needs 8 bytes, has 12"), std::string::npos) << s;
}

TEST(TensorFromProto, AShapeWithoutDataFailsBeforeAllocating) {
  // 2^38 floats (1 TiB): the count is checked first, so this is the missing
  // data, not an attempt to allocate (and zero) the declared size.
  absl::Status s = TensorFromProto(Proto(DType::kFloat, {int64_t(1) << 38}), "").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("holds 0 values, expected 274877906944"), std::string::npos) << s;
  s = TensorFromProto(Proto(DType::kFloat, {500000000}), "").status();
  EXPECT_NE(s.message().find("holds 0 values, expected 500000000"), std::string::npos) << s;
}

TEST(LoadModel, RefusesFoldersAndFifos) {
  const fs::path dir = fs::temp_directory_path() / ("onnx_mini_load_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  absl::Status folder = LoadModel(dir.string()).status();
  EXPECT_NE(folder.message().find("is not a regular file"), std::string::npos) << folder;
  ASSERT_EQ(::mkfifo((dir / "m.onnx").c_str(), 0600), 0);
  absl::Status fifo = LoadModel((dir / "m.onnx").string()).status();
  EXPECT_NE(fifo.message().find("is not a regular file"), std::string::npos) << fifo;
  fs::remove_all(dir);
}

TEST(LoadModel, FunctionsThatDoubleAtEveryLevelAreLimitedInExpandedSize) {
  // F0 calls F1 twice, F1 calls F2 twice, ...: 2^30 nodes from a few KB, all
  // within the depth limit. This used to run for a minute and exhaust memory.
  ModelBuilder m(17);
  m.Opset("local", 1);
  m.Input("x", DType::kFloat, {1}).Output("y", DType::kFloat, {1});
  m.Node("F0", {"x"}, {"y"}, "local");
  const int kLevels = 30;
  for (int i = 0; i <= kLevels; ++i) {
    onnx::FunctionProto* f = m.proto().add_functions();
    f->set_name("F" + std::to_string(i));
    f->set_domain("local");
    f->add_input("a");
    f->add_output("b");
    auto* op = f->add_opset_import();
    op->set_domain("");
    op->set_version(17);
    auto* local = f->add_opset_import();
    local->set_domain("local");
    local->set_version(1);
    if (i == kLevels) {
      onnx::NodeProto* n = f->add_node();
      n->set_op_type("Identity");
      n->add_input("a");
      n->add_output("b");
      continue;
    }
    const std::string next = "F" + std::to_string(i + 1);
    onnx::NodeProto* n1 = f->add_node();
    n1->set_op_type(next);
    n1->set_domain("local");
    n1->add_input("a");
    n1->add_output("t");
    onnx::NodeProto* n2 = f->add_node();
    n2->set_op_type(next);
    n2->set_domain("local");
    n2->add_input("t");
    n2->add_output("b");
  }
  absl::Status s = LoadModelFromBytes(m.Serialize(), "").status();
  EXPECT_NE(s.message().find("model-local functions expand to more than 65536 nodes"), std::string::npos) << s;
  // Ten levels (2^10 Identity nodes) are fine.
  m.proto().mutable_functions(10)->clear_node();
  onnx::NodeProto* n = m.proto().mutable_functions(10)->add_node();
  n->set_op_type("Identity");
  n->add_input("a");
  n->add_output("b");
  absl::StatusOr<Graph> g = LoadModelFromBytes(m.Serialize(), "");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes.size(), 1024u);
}

TEST(LoadModel, RejectsGarbage) {
  EXPECT_FALSE(LoadModelFromBytes("", "").ok());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string bytes(size_t(rng() % 400 + 1), '\0');
    for (char& c : bytes) c = char(rng());
    absl::StatusOr<Graph> g = LoadModelFromBytes(bytes, "");
    if (g.ok()) continue;  // random bytes can be a valid (empty) proto; it must not crash
    EXPECT_FALSE(g.status().message().empty());
  }
  ModelBuilder m;
  m.Input("x", DType::kFloat, {2}).Output("y", DType::kFloat, {2});
  m.Node("Identity", {"x"}, {"y"});
  const std::string good = m.Serialize();
  for (size_t cut = 1; cut < good.size(); cut += 3) {
    absl::StatusOr<Graph> g = LoadModelFromBytes(good.substr(0, cut), "");
    if (g.ok()) continue;  // some prefixes are valid protos
    EXPECT_FALSE(g.status().message().empty());
  }
  EXPECT_TRUE(LoadModelFromBytes(good, "").ok());
  EXPECT_EQ(LoadModel("/nonexistent/model.onnx").status().code(), absl::StatusCode::kNotFound);
}

TEST(LoadModel, OpsetsAttributesAndSubgraphs) {
  ModelBuilder m(13, 7);
  m.Opset("com.example", 3);
  m.Input("x", DType::kFloat, {-1, 3}).Output("y", DType::kFloat, {}, false);
  onnx::NodeProto& n = m.Node("Custom", {"x", ""}, {"y"}, "com.example");
  SetAttr(n, "alpha", 0.5f);
  SetAttr(n, "axes", std::vector<int64_t>{1, -1});
  SetAttr(n, "mode", std::string("fast"));
  onnx::AttributeProto* g = n.add_attribute();
  g->set_name("body");
  g->set_type(onnx::AttributeProto::GRAPH);
  g->mutable_g()->set_name("sub");
  g->mutable_g()->add_node()->set_op_type("Identity");
  absl::StatusOr<Graph> graph = LoadModelFromBytes(m.Serialize(), "");
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = graph->nodes[0];
  EXPECT_EQ(node.opset, 3);
  EXPECT_EQ(node.domain, "com.example");
  EXPECT_FALSE(node.has_input(1));
  EXPECT_EQ(node.attr_float("alpha", 0), 0.5f);
  EXPECT_EQ(node.attr_ints("axes"), std::vector<int64_t>({1, -1}));
  EXPECT_EQ(node.attr_string("mode", ""), "fast");
  ASSERT_NE(node.attr("body")->g, nullptr);
  EXPECT_EQ(node.attr("body")->g->nodes[0].op_type, "Identity");
  EXPECT_EQ(graph->inputs[0].type.ToString(), "float[N0,3]");
  EXPECT_FALSE(graph->outputs[0].type.has_rank());
  EXPECT_EQ(graph->ir_version, 7);
}

// A model-local function whose body holds a Loop: the loop body reads the
// function's formal input, a value local to the body and an attribute of
// the call. Inlined twice, each copy's names are renamed into its own scope
// (the main graph's own "t" is not the body's "t").
TEST(LoadModel, SubgraphsOfInlinedFunctionsAreRenamed) {
  ModelBuilder loop_body(17);
  loop_body.Input("i", DType::kInt64, {}).Input("c", DType::kBool, {}).Input("v", DType::kFloat, {}, false);
  onnx::NodeProto& scale = loop_body.Node("Constant", {}, {"scale"});
  onnx::AttributeProto* ref = scale.add_attribute();
  ref->set_name("value_float");
  ref->set_type(onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("alpha");
  loop_body.Node("Mul", {"x", "scale"}, {"xs"});      // x: the function's formal input
  loop_body.Node("Add", {"v", "xs"}, {"v_out"});
  loop_body.Node("Add", {"v_out", "zero"}, {"v_next"});  // zero: local to the function body
  loop_body.Node("Identity", {"c"}, {"c_out"});
  loop_body.Output("c_out", DType::kBool, {}).Output("v_next", DType::kFloat, {}, false);

  ModelBuilder m(17);
  m.Opset("local", 1);
  onnx::FunctionProto* f = m.proto().add_functions();
  f->set_name("Scaled");
  f->set_domain("local");
  f->add_input("x");
  f->add_output("y");
  f->add_attribute("alpha");
  auto* opset = f->add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto add = [&](const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs) {
    onnx::NodeProto* n = f->add_node();
    n->set_op_type(op);
    for (auto& s : ins) n->add_input(s);
    for (auto& s : outs) n->add_output(s);
    return n;
  };
  add("Neg", {"x"}, {"t"});
  add("Sub", {"t", "t"}, {"zero"});
  onnx::NodeProto* three = add("Constant", {}, {"m"});
  SetAttr(*three, "value", Tensor::FromVector<int64_t>({3}, {}));
  SetGraph(*add("Loop", {"m", "", "t"}, {"y"}), "body", Body(loop_body));

  m.Input("a", DType::kFloat, {2}).Input("b", DType::kFloat, {2});
  m.Node("Abs", {"a"}, {"t"});  // a main-graph "t"
  SetAttr(m.Node("Scaled", {"t"}, {"y1"}, "local"), "alpha", 2.0f);
  SetAttr(m.Node("Scaled", {"b"}, {"y2"}, "local"), "alpha", 0.5f);
  m.Output("y1", DType::kFloat, {2}).Output("y2", DType::kFloat, {2});
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  // y = -x + 3 * alpha * x
  auto out = (*session)->Run({{"a", Tensor::FromVector<float>({-1, 2}, {2})}, {"b", Tensor::FromVector<float>({4, -8}, {2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[0], 5.0f);
  EXPECT_EQ((*out)[0].data<float>()[1], 10.0f);
  EXPECT_EQ((*out)[1].data<float>()[0], 2.0f);
  EXPECT_EQ((*out)[1].data<float>()[1], -4.0f);
}

}  // namespace
}  // namespace onnx_mini
