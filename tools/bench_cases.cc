// bench-cases: writes the benchmark cases of ../shared/bench (same names,
// shapes and attributes as its make_models.py, random normal data, seed 7) in
// the backend-test layout, so onnx-run and onnxruntime time the same files:
//   bench-cases OUT_DIR
//   onnx-run OUT_DIR/CASE/model.onnx --input-dir OUT_DIR/CASE/test_data_set_0 --repeat 10 --threads 2 --json
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/element.h"
#include "runtime/tensor_io.h"
#include "tools/model_builder.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

std::mt19937 rng(7);

Tensor Normal(DType dtype, const Shape& shape) {
  Tensor t = Tensor::Zeros(dtype, shape);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, normal(rng));
  return t;
}

struct Input {
  std::string name;
  Tensor value;
};

void WriteCase(const fs::path& out, const std::string& name,
               const std::function<void(ModelBuilder&)>& nodes, const std::vector<Input>& inputs,
               const std::vector<std::pair<std::string, DType>>& outputs) {
  ModelBuilder m(24, 10);
  for (const Input& in : inputs) m.Input(in.name, in.value.dtype(), in.value.shape());
  for (const auto& [o, dtype] : outputs) m.Output(o, dtype, {}, false);
  nodes(m);
  const fs::path dir = out / name / "test_data_set_0";
  fs::create_directories(dir);
  std::ofstream(out / name / "model.onnx", std::ios::binary) << m.Serialize();
  for (size_t k = 0; k < inputs.size(); ++k)
    std::ofstream(dir / absl::StrCat("input_", k, ".pb"), std::ios::binary)
        << SerializeTensorProto(inputs[k].value, inputs[k].name);
  std::cout << "wrote " << name << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {  // a flag (--help) is not a folder to write into
    std::cerr << "usage: bench-cases OUT_DIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  const DType F32 = DType::kFloat, F16 = DType::kFloat16;
  const int64_t HQ = 32, HKV = 8, D = 128;
  auto attention = [](std::vector<std::string> in, std::vector<std::string> o, bool causal) {
    return [=](ModelBuilder& m) {
      onnx::NodeProto& n = m.Node("Attention", in, o);
      if (causal) SetAttr(n, "is_causal", int64_t(1));
    };
  };
  // The prefill also in bfloat16 (a case of our own: onnxruntime 1.30 has no
  // bfloat16 Attention on CPU), for the AVX-512 BF16 score kernel.
  for (auto [tag, dtype] : {std::pair<const char*, DType>{"f32", F32}, {"bf16", DType::kBFloat16}}) {
    const int64_t B = 1, S = 1024;
    WriteCase(out, absl::StrCat("attn_prefill_gqa_", tag), attention({"Q", "K", "V"}, {"Y"}, true),
              {{"Q", Normal(dtype, {B, HQ, S, D})}, {"K", Normal(dtype, {B, HKV, S, D})},
               {"V", Normal(dtype, {B, HKV, S, D})}},
              {{"Y", dtype}});
  }
  {
    const int64_t B = 4, S = 1024;
    WriteCase(out, "attn_prefill_ragged_f32", attention({"Q", "K", "V", "", "", "", "L"}, {"Y"}, true),
              {{"Q", Normal(F32, {B, HQ, S, D})}, {"K", Normal(F32, {B, HKV, S, D})},
               {"V", Normal(F32, {B, HKV, S, D})}, {"L", Tensor::FromVector<int64_t>({256, 512, 768, 1024}, {B})}},
              {{"Y", F32}});
  }
  const int64_t B = 4, SMAX = 4096;
  const Tensor lens = Tensor::FromVector<int64_t>({1024, 2048, 3072, 4096}, {B});
  const Tensor last = Tensor::FromVector<int64_t>({1023, 2047, 3071, 4095}, {B});
  for (auto [tag, dtype] : {std::pair<const char*, DType>{"f32", F32}, {"f16", F16}})
    WriteCase(out, absl::StrCat("attn_decode_static_", tag), attention({"Q", "K", "V", "", "", "", "L"}, {"Y"}, false),
              {{"Q", Normal(dtype, {B, HQ, 1, D})}, {"K", Normal(dtype, {B, HKV, SMAX, D})},
               {"V", Normal(dtype, {B, HKV, SMAX, D})}, {"L", lens}},
              {{"Y", dtype}});
  auto scatter = [](std::string past, std::string upd, std::string out_name) {
    return [=](ModelBuilder& m) {
      SetAttr(m.Node("TensorScatter", {past, upd, "idx"}, {out_name}), "axis", int64_t(2));
    };
  };
  WriteCase(out, "tensorscatter_decode_f32", scatter("past", "upd", "present"),
            {{"past", Normal(F32, {B, HKV, SMAX, D})}, {"upd", Normal(F32, {B, HKV, 1, D})}, {"idx", last}},
            {{"present", F32}});
  WriteCase(out, "decode_step_static_f32",
            [&](ModelBuilder& m) {
              scatter("pk", "k", "K")(m);
              scatter("pv", "v", "V")(m);
              m.Node("Attention", {"q", "K", "V", "", "", "", "L"}, {"Y"});
            },
            {{"q", Normal(F32, {B, HQ, 1, D})}, {"k", Normal(F32, {B, HKV, 1, D})}, {"v", Normal(F32, {B, HKV, 1, D})},
             {"pk", Normal(F32, {B, HKV, SMAX, D})}, {"pv", Normal(F32, {B, HKV, SMAX, D})}, {"idx", last}, {"L", lens}},
            {{"Y", F32}, {"K", F32}, {"V", F32}});
  const int64_t P = 2048;
  WriteCase(out, "attn_decode_past_f32", attention({"Q", "K", "V", "", "pk", "pv"}, {"Y", "PK", "PV"}, false),
            {{"Q", Normal(F32, {B, HQ, 1, D})}, {"K", Normal(F32, {B, HKV, 1, D})}, {"V", Normal(F32, {B, HKV, 1, D})},
             {"pk", Normal(F32, {B, HKV, P, D})}, {"pv", Normal(F32, {B, HKV, P, D})}},
            {{"Y", F32}, {"PK", F32}, {"PV", F32}});
  return 0;
}
