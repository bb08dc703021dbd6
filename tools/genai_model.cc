// The onnxruntime-genai-style decoder folder (see genai_model.h).
#include "tools/genai_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/status_macros.h"
#include "runtime/tensor_io.h"
#include "tools/model_builder.h"

namespace fs = std::filesystem;

namespace onnx_mini {
namespace {

constexpr const char* kDataFile = "model.onnx.data";
constexpr float kEpsilon = 1e-5f;
constexpr double kRopeTheta = 10000.0;

// Initializers' bytes, in order, in one external-data file (64-byte aligned).
class DataFile {
 public:
  void Add(onnx::GraphProto& g, const std::string& name, DType dtype, const std::vector<int64_t>& dims,
           const void* data, size_t bytes) {
    bytes_.resize((bytes_.size() + 63) / 64 * 64, '\0');
    const size_t offset = bytes_.size();
    bytes_.append(static_cast<const char*>(data), bytes);
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(int32_t(dtype));
    for (int64_t d : dims) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair<std::string, std::string>{"location", kDataFile},
                              {"offset", absl::StrCat(offset)},
                              {"length", absl::StrCat(bytes)}}) {
      auto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
  }
  void AddFloats(onnx::GraphProto& g, const std::string& name, const std::vector<int64_t>& dims,
                 const std::vector<float>& values) {
    Add(g, name, DType::kFloat, dims, values.data(), values.size() * sizeof(float));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// Values from std::mt19937 through double arithmetic only (no standard
// distributions, whose results differ between libraries): the same file
// everywhere.
class Random {
 public:
  explicit Random(uint32_t seed) : rng_(seed) {}
  std::vector<float> Uniform(int64_t count, float center, float half_width) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) {
      const double u = double(rng_() >> 8) / 16777216.0;  // [0, 1), 24 bits
      x = float(double(center) + double(half_width) * (2.0 * u - 1.0));
    }
    return v;
  }

 private:
  std::mt19937 rng_;
};

// A [K, N] weight quantized to 4 bits in MatMulNBits' layout: B uint8
// [N, K / block, block / 2] (element 2i in the low nibble), scales float
// [N, K / block], no zero points (8). Symmetric: a block's scale is its
// largest-magnitude value over -8, so that value maps to code 0 exactly.
struct Quantized {
  std::vector<uint8_t> packed;
  std::vector<float> scales;
  std::vector<float> dequantized;  // [K, N], what the 4-bit product computes with
};

Quantized Quantize4(const std::vector<float>& w, int64_t K, int64_t N, int64_t block) {
  const int64_t blocks = K / block;
  Quantized q;
  q.packed.assign(size_t(N * K / 2), 0);
  q.scales.assign(size_t(N * blocks), 0.0f);
  q.dequantized.assign(w.size(), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < blocks; ++b) {
      float extreme = 0.0f;
      for (int64_t k = b * block; k < (b + 1) * block; ++k)
        if (std::fabs(w[size_t(k * N + n)]) > std::fabs(extreme)) extreme = w[size_t(k * N + n)];
      const float scale = extreme / -8.0f;
      q.scales[size_t(n * blocks + b)] = scale;
      for (int64_t k = b * block; k < (b + 1) * block; ++k) {
        int code = 8;
        if (scale != 0.0f) code = int(std::lround(w[size_t(k * N + n)] / scale)) + 8;
        code = std::clamp(code, 0, 15);
        q.dequantized[size_t(k * N + n)] = float(code - 8) * scale;
        uint8_t& byte = q.packed[size_t(n * K / 2 + k / 2)];
        byte = uint8_t(byte | (k % 2 == 0 ? code : code << 4));
      }
    }
  return q;
}

// The mask-free part of the config: what onnxruntime-genai reads.
std::string GenaiConfig(const GenaiModelOptions& o) {
  const int64_t head = o.hidden / o.q_heads;
  return absl::StrCat(R"({
    "model": {
        "bos_token_id": )", o.bos, R"(,
        "context_length": )", o.context_length, R"(,
        "decoder": {
            "session_options": {
                "log_id": "onnxruntime-genai",
                "provider_options": []
            },
            "filename": "model.onnx",
            "head_size": )", head, R"(,
            "hidden_size": )", o.hidden, R"(,
            "inputs": {
                "input_ids": "input_ids",
                "attention_mask": "attention_mask",
                "past_key_names": "past_key_values.%d.key",
                "past_value_names": "past_key_values.%d.value"
            },
            "outputs": {
                "logits": "logits",
                "present_key_names": "present.%d.key",
                "present_value_names": "present.%d.value"
            },
            "num_attention_heads": )", o.q_heads, R"(,
            "num_hidden_layers": )", o.layers, R"(,
            "num_key_value_heads": )", o.kv_heads, R"(
        },
        "eos_token_id": )", o.eos, R"(,
        "pad_token_id": )", o.pad, R"(,
        "type": "llama",
        "vocab_size": )", o.vocab, R"(
    },
    "search": {
        "diversity_penalty": 0.0,
        "do_sample": false,
        "early_stopping": true,
        "length_penalty": 1.0,
        "max_length": )", o.context_length, R"(,
        "min_length": 0,
        "no_repeat_ngram_size": 0,
        "num_beams": 1,
        "num_return_sequences": 1,
        "past_present_share_buffer": )", o.share_buffer ? "true" : "false", R"(,
        "repetition_penalty": 1.0,
        "temperature": 1.0,
        "top_k": 1,
        "top_p": 1.0
    }
}
)");
}

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
              DType dtype, const std::vector<std::string>& dims) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(int32_t(dtype));
  auto* shape = tt->mutable_shape();
  for (const std::string& d : dims) {
    if (!d.empty() && d[0] >= '0' && d[0] <= '9') shape->add_dim()->set_dim_value(std::stoll(d));
    else shape->add_dim()->set_dim_param(d);
  }
}

}  // namespace

absl::Status WriteGenaiModel(const fs::path& dir, const GenaiModelOptions& o) {
  if (o.q_heads <= 0 || o.kv_heads <= 0 || o.hidden % o.q_heads != 0 || o.q_heads % o.kv_heads != 0 ||
      (o.hidden / o.q_heads) % 2 != 0 || o.block_size < 16 || o.hidden % o.block_size != 0 ||
      o.intermediate % o.block_size != 0 || o.layers <= 0 || o.vocab <= 2 || o.context_length <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("genai model: sizes hidden ", o.hidden, " heads ", o.q_heads, "/", o.kv_heads,
                     " intermediate ", o.intermediate, " block ", o.block_size, " do not fit together"));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create '", dir.string(), "': ", ec.message()));

  const int64_t H = o.hidden, D = o.hidden / o.q_heads, kv = o.kv_heads, I = o.intermediate;
  const std::string s_ = "", ms = "com.microsoft";
  ModelBuilder m(/*opset=*/21, /*ir_version=*/10);
  m.Opset(ms, 1);
  onnx::GraphProto& g = m.graph();
  g.set_name("main_graph");
  DataFile data;
  Random rng(o.seed);

  AddValue(g.mutable_input(), "input_ids", DType::kInt64, {"batch_size", "sequence_length"});
  AddValue(g.mutable_input(), "attention_mask", DType::kInt64, {"batch_size", "total_sequence_length"});
  for (int64_t l = 0; l < o.layers; ++l)
    for (const char* kind : {"key", "value"})
      AddValue(g.mutable_input(), absl::StrCat("past_key_values.", l, ".", kind), DType::kFloat,
               {"batch_size", absl::StrCat(kv), "past_sequence_length", absl::StrCat(D)});
  AddValue(g.mutable_output(), "logits", DType::kFloat, {"batch_size", "sequence_length", absl::StrCat(o.vocab)});
  for (int64_t l = 0; l < o.layers; ++l)
    for (const char* kind : {"key", "value"})
      AddValue(g.mutable_output(), absl::StrCat("present.", l, ".", kind), DType::kFloat,
               {"batch_size", absl::StrCat(kv), "total_sequence_length", absl::StrCat(D)});

  // A projection h [.., K] -> [.., N]: MatMulNBits over the 4-bit weight, or
  // MatMul over its dequantized values.
  auto linear = [&](const std::string& name, const std::string& x, int64_t K, int64_t N, const std::string& y) {
    const std::vector<float> w = rng.Uniform(K * N, 0.0f, std::sqrt(3.0f / float(K)));
    const Quantized q = Quantize4(w, K, N, o.block_size);
    if (!o.int4) {
      data.AddFloats(g, name + ".weight", {K, N}, q.dequantized);
      m.Node("MatMul", {x, name + ".weight"}, {y}).set_name(name + "/MatMul");
      return;
    }
    data.Add(g, name + ".weight.qweight", DType::kUInt8, {N, K / o.block_size, o.block_size / 2},
             q.packed.data(), q.packed.size());
    data.AddFloats(g, name + ".weight.scales", {N, K / o.block_size}, q.scales);
    onnx::NodeProto& n = m.Node("MatMulNBits", {x, name + ".weight.qweight", name + ".weight.scales"}, {y}, ms);
    n.set_name(name + "/MatMulNBits");
    SetAttr(n, "K", K);
    SetAttr(n, "N", N);
    SetAttr(n, "bits", int64_t{4});
    SetAttr(n, "block_size", o.block_size);
    SetAttr(n, "accuracy_level", o.accuracy_level);
  };
  auto norm_weight = [&](const std::string& name) {
    data.AddFloats(g, name, {H}, rng.Uniform(H, 1.0f, 0.1f));
    return name;
  };
  auto constant = [&](const std::string& name, const Tensor& value) {
    onnx::NodeProto& n = m.Node("Constant", {}, {name});
    n.set_name(name);
    SetAttr(n, "value", value);
  };

  // seqlens_k = ReduceSum(mask, 1) - 1 and total_sequence_length = mask.shape[1], in int32.
  const std::string mr = "/model/attn_mask_reformat/attn_mask_subgraph/";
  constant(mr + "axes", Tensor::FromVector<int64_t>({1}, {1}));
  constant(mr + "one", Tensor::FromVector<int64_t>({1}, {}));
  SetAttr(m.Node("ReduceSum", {"attention_mask", mr + "axes"}, {mr + "ReduceSum/output_0"}), "keepdims", int64_t{0});
  m.Node("Sub", {mr + "ReduceSum/output_0", mr + "one"}, {mr + "Sub/output_0"});
  SetAttr(m.Node("Cast", {mr + "Sub/output_0"}, {mr + "Sub/Cast/output_0"}), "to", int64_t(DType::kInt32));
  m.Node("Shape", {"attention_mask"}, {mr + "Shape/output_0"});
  SetAttr(m.Node("Gather", {mr + "Shape/output_0", mr + "one"}, {mr + "Gather/output_0"}), "axis", int64_t{0});
  SetAttr(m.Node("Cast", {mr + "Gather/output_0"}, {mr + "Gather/Cast/output_0"}), "to", int64_t(DType::kInt32));
  const std::string seqlens_k = mr + "Sub/Cast/output_0", total_len = mr + "Gather/Cast/output_0";

  // The rotary caches: cos/sin(p * theta^(-2i/D)), [context_length, D/2].
  {
    const int64_t half = D / 2;
    std::vector<float> cos_cache(size_t(o.context_length * half)), sin_cache(cos_cache.size());
    for (int64_t p = 0; p < o.context_length; ++p)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(p) * std::pow(kRopeTheta, -2.0 * double(i) / double(D));
        cos_cache[size_t(p * half + i)] = float(std::cos(angle));
        sin_cache[size_t(p * half + i)] = float(std::sin(angle));
      }
    data.AddFloats(g, "cos_cache", {o.context_length, half}, cos_cache);
    data.AddFloats(g, "sin_cache", {o.context_length, half}, sin_cache);
  }

  data.AddFloats(g, "model.embed_tokens.weight", {o.vocab, H}, rng.Uniform(o.vocab * H, 0.0f, std::sqrt(3.0f)));
  m.Node("Gather", {"model.embed_tokens.weight", "input_ids"}, {"/model/embed_tokens/Gather/output_0"})
      .set_name("/model/embed_tokens/Gather");

  // Each norm after the first adds its skip (the branch's output) to the
  // residual stream and returns the sum as output 3.
  std::string residual = "/model/embed_tokens/Gather/output_0", branch;
  auto norm = [&](const std::string& name, const std::string& weight, const std::string& y, bool last) {
    if (branch.empty()) {
      onnx::NodeProto& n = m.Node("SimplifiedLayerNormalization", {residual, weight}, {y}, s_);
      n.set_name(name + "/LayerNorm");
      SetAttr(n, "axis", int64_t{-1});
      SetAttr(n, "epsilon", kEpsilon);
      SetAttr(n, "stash_type", int64_t{1});
      return;
    }
    const std::string sum = name + "/SkipLayerNorm/output_3";
    std::vector<std::string> outs = {y};
    if (!last) outs.insert(outs.end(), {"", "", sum});
    onnx::NodeProto& n = m.Node("SkipSimplifiedLayerNormalization", {branch, residual, weight}, outs, ms);
    n.set_name(name + "/SkipLayerNorm");
    SetAttr(n, "epsilon", kEpsilon);
    residual = sum;
  };

  for (int64_t l = 0; l < o.layers; ++l) {
    const std::string p = absl::StrCat("/model/layers.", l, "/"), w = absl::StrCat("model.layers.", l, ".");
    norm(p + "input_layernorm", norm_weight(w + "input_layernorm.weight"), p + "input_layernorm/output_0", false);
    const std::string h = p + "input_layernorm/output_0";
    std::vector<std::string> gqa_in;
    if (o.packed_qkv) {
      linear(w + "attn.qkv_proj", h, H, (o.q_heads + 2 * kv) * D, p + "attn/qkv_proj/output_0");
      gqa_in = {p + "attn/qkv_proj/output_0", "", ""};
    } else {
      linear(w + "attn.q_proj", h, H, o.q_heads * D, p + "attn/q_proj/output_0");
      linear(w + "attn.k_proj", h, H, kv * D, p + "attn/k_proj/output_0");
      linear(w + "attn.v_proj", h, H, kv * D, p + "attn/v_proj/output_0");
      gqa_in = {p + "attn/q_proj/output_0", p + "attn/k_proj/output_0", p + "attn/v_proj/output_0"};
    }
    gqa_in.insert(gqa_in.end(), {absl::StrCat("past_key_values.", l, ".key"),
                                 absl::StrCat("past_key_values.", l, ".value"), seqlens_k, total_len, "cos_cache",
                                 "sin_cache"});
    onnx::NodeProto& gqa = m.Node("GroupQueryAttention", gqa_in,
                                  {p + "attn/GroupQueryAttention/output_0", absl::StrCat("present.", l, ".key"),
                                   absl::StrCat("present.", l, ".value")},
                                  ms);
    gqa.set_name(p + "attn/GroupQueryAttention");
    SetAttr(gqa, "num_heads", o.q_heads);
    SetAttr(gqa, "kv_num_heads", kv);
    SetAttr(gqa, "do_rotary", int64_t{1});
    SetAttr(gqa, "rotary_interleaved", int64_t{0});
    SetAttr(gqa, "local_window_size", int64_t{-1});
    SetAttr(gqa, "softcap", 0.0f);
    SetAttr(gqa, "scale", float(1.0 / std::sqrt(double(D))));
    linear(w + "attn.o_proj", p + "attn/GroupQueryAttention/output_0", o.q_heads * D, H, p + "attn/o_proj/output_0");
    branch = p + "attn/o_proj/output_0";

    norm(p + "post_attention_layernorm", norm_weight(w + "post_attention_layernorm.weight"),
         p + "post_attention_layernorm/output_0", false);
    const std::string h2 = p + "post_attention_layernorm/output_0";
    linear(w + "mlp.gate_proj", h2, H, I, p + "mlp/gate_proj/output_0");
    linear(w + "mlp.up_proj", h2, H, I, p + "mlp/up_proj/output_0");
    m.Node("Sigmoid", {p + "mlp/gate_proj/output_0"}, {p + "mlp/act_fn/Sigmoid/output_0"});
    m.Node("Mul", {p + "mlp/gate_proj/output_0", p + "mlp/act_fn/Sigmoid/output_0"}, {p + "mlp/act_fn/output_0"});
    m.Node("Mul", {p + "mlp/act_fn/output_0", p + "mlp/up_proj/output_0"}, {p + "mlp/Mul/output_0"});
    linear(w + "mlp.down_proj", p + "mlp/Mul/output_0", I, H, p + "mlp/down_proj/output_0");
    branch = p + "mlp/down_proj/output_0";
  }
  norm("/model/norm", norm_weight("model.norm.weight"), "/model/norm/output_0", true);
  linear("lm_head", "/model/norm/output_0", H, o.vocab, "logits");

  RETURN_IF_ERROR(WriteFileAtomically((dir / kDataFile).string(), data.bytes()));
  RETURN_IF_ERROR(WriteFileAtomically((dir / "model.onnx").string(), m.Serialize()));
  return WriteFileAtomically((dir / "genai_config.json").string(), GenaiConfig(o));
}

}  // namespace onnx_mini
