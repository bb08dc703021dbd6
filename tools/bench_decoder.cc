// bench-decoder: writes a tiny Llama-style decoder (4 layers, hidden 512,
// GQA with 8 query and 2 KV heads of 64, SiLU MLP of 1408, vocabulary 8192,
// random weights) in three export forms, each with a prefill case (128 tokens,
// empty cache) and a decode-step case (one token after 512), in the
// backend-test layout, so onnx-run and onnxruntime time the same files:
//   bench-decoder OUT_DIR
//   onnx-run OUT_DIR/CASE/model.onnx --input-dir OUT_DIR/CASE/test_data_set_0 --repeat 10 --json
// The forms compute the same function with the same weights:
//   attention   Attention-23 with past/present (a dynamic cache), RMSNormalization
//               and RotaryEmbedding ops (opset 23);
//   static      a static cache of 1024 slots written by TensorScatter-24,
//               Attention-24 over nonpad_kv_seqlen (opset 24);
//   decomposed  as older exporters write it (opset 17): RMSNorm as
//               Pow/ReduceMean/Add/Sqrt/Div/Mul, rotary as Slice/Neg/Concat/Mul/Add,
//               the GQA repeat as Unsqueeze/Expand/Reshape, scores by MatMul, Div
//               and a causal Where mask, Softmax, MatMul; past/present by Concat.
// SiLU is x * Sigmoid(x) in every form. The prefill and decode cases of a form
// share one model file (hard-linked).
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/status_macros.h"
#include "runtime/tensor_io.h"
#include "tools/model_builder.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

constexpr int64_t kVocab = 8192;
constexpr int64_t kHidden = 512;
constexpr int64_t kLayers = 4;
constexpr int64_t kQHeads = 8;
constexpr int64_t kKvHeads = 2;
constexpr int64_t kHeadDim = kHidden / kQHeads;
constexpr int64_t kIntermediate = 1408;
constexpr int64_t kMaxPosition = 2048;
constexpr int64_t kStaticCache = 1024;  // slots of the static cache
constexpr int64_t kPrefill = 128;
constexpr int64_t kPast = 512;  // tokens in the cache before the decode step
constexpr double kRopeTheta = 10000.0;
constexpr float kEpsilon = 1e-5f;

enum class Form { kAttention, kStatic, kDecomposed };
const char* FormName(Form f) {
  return f == Form::kAttention ? "attention" : f == Form::kStatic ? "static" : "decomposed";
}

std::mt19937 rng(11);

Tensor Uniform(const Shape& shape, float center, float half_width) {
  Tensor t = Tensor::Zeros(DType::kFloat, shape);
  std::uniform_real_distribution<float> u(center - half_width, center + half_width);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

Tensor Normal(const Shape& shape) {
  Tensor t = Tensor::Zeros(DType::kFloat, shape);
  std::normal_distribution<float> n;
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

// The weights, shared by the three forms. Projections are [in, out] with
// standard deviation 1/sqrt(in).
struct Weights {
  std::vector<std::pair<std::string, Tensor>> tensors;
  Tensor cos_half, sin_half;  // [positions, head_dim / 2]: RotaryEmbedding's caches
  Tensor cos_full, sin_full;  // [positions, head_dim]: the halves repeated, for the decomposed form
};

Weights MakeWeights() {
  Weights w;
  auto projection = [&](const std::string& name, int64_t in, int64_t out) {
    w.tensors.push_back({name, Uniform({in, out}, 0.0f, std::sqrt(3.0f / float(in)))});
  };
  w.tensors.push_back({"embed_tokens", Uniform({kVocab, kHidden}, 0.0f, std::sqrt(3.0f))});
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = absl::StrCat("layers.", l, ".");
    w.tensors.push_back({p + "attn_norm", Uniform({kHidden}, 1.0f, 0.1f)});
    projection(p + "wq", kHidden, kQHeads * kHeadDim);
    projection(p + "wk", kHidden, kKvHeads * kHeadDim);
    projection(p + "wv", kHidden, kKvHeads * kHeadDim);
    projection(p + "wo", kQHeads * kHeadDim, kHidden);
    w.tensors.push_back({p + "mlp_norm", Uniform({kHidden}, 1.0f, 0.1f)});
    projection(p + "wgate", kHidden, kIntermediate);
    projection(p + "wup", kHidden, kIntermediate);
    projection(p + "wdown", kIntermediate, kHidden);
  }
  w.tensors.push_back({"final_norm", Uniform({kHidden}, 1.0f, 0.1f)});
  projection("lm_head", kHidden, kVocab);
  const int64_t half = kHeadDim / 2;
  w.cos_half = Tensor::Zeros(DType::kFloat, {kMaxPosition, half});
  w.sin_half = Tensor::Zeros(DType::kFloat, {kMaxPosition, half});
  w.cos_full = Tensor::Zeros(DType::kFloat, {kMaxPosition, kHeadDim});
  w.sin_full = Tensor::Zeros(DType::kFloat, {kMaxPosition, kHeadDim});
  for (int64_t p = 0; p < kMaxPosition; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * std::pow(kRopeTheta, -2.0 * double(i) / double(kHeadDim));
      const float c = float(std::cos(angle)), s = float(std::sin(angle));
      w.cos_half.data<float>()[p * half + i] = c;
      w.sin_half.data<float>()[p * half + i] = s;
      for (int64_t j : {i, i + half}) {
        w.cos_full.data<float>()[p * kHeadDim + j] = c;
        w.sin_full.data<float>()[p * kHeadDim + j] = s;
      }
    }
  return w;
}

Tensor Int64s(const std::vector<int64_t>& v) { return Tensor::FromVector(v, {int64_t(v.size())}); }
Tensor Scalar(float v) { return Tensor::FromVector(std::vector<float>{v}, {}); }

ModelBuilder BuildModel(Form form, const Weights& w) {
  const int64_t opset = form == Form::kAttention ? 23 : form == Form::kStatic ? 24 : 17;
  ModelBuilder m(opset, form == Form::kDecomposed ? 8 : 10);
  m.graph().set_name(absl::StrCat("decoder_", FormName(form)));
  // -1 dims are symbols (N0, N1, ...), as the builder writes them.
  m.Input("input_ids", DType::kInt64, {1, -1});
  m.Input("position_ids", DType::kInt64, {1, -1});
  const bool is_static = form == Form::kStatic;
  if (is_static) {
    m.Input("write_indices", DType::kInt64, {1});
    m.Input("nonpad_kv_seqlen", DType::kInt64, {1});
  }
  const std::string cache_in = is_static ? "cache_" : "past_";
  const std::vector<int64_t> cache_dims = {1, kKvHeads, is_static ? kStaticCache : -1, kHeadDim};
  for (int64_t l = 0; l < kLayers; ++l)
    for (const char* kv : {"key_", "value_"}) m.Input(absl::StrCat(cache_in, kv, l), DType::kFloat, cache_dims);
  m.Output("logits", DType::kFloat, {1, -1, kVocab});
  for (int64_t l = 0; l < kLayers; ++l)
    for (const char* kv : {"key_", "value_"}) {
      m.Output(absl::StrCat("present_", kv, l), DType::kFloat, cache_dims);
      // A dynamic cache grows: present's length is its own symbol, not past's.
      if (!is_static)
        m.graph().mutable_output()->rbegin()->mutable_type()->mutable_tensor_type()->mutable_shape()
            ->mutable_dim(2)->set_dim_param("total");
    }

  for (const auto& [name, t] : w.tensors) m.Initializer(name, t);
  const bool decomposed = form == Form::kDecomposed;
  m.Initializer("shape_q_heads", Int64s({0, 0, kQHeads, kHeadDim}));
  m.Initializer("shape_kv_heads", Int64s({0, 0, kKvHeads, kHeadDim}));
  m.Initializer("shape_hidden", Int64s({0, 0, kQHeads * kHeadDim}));
  if (decomposed) {
    m.Initializer("cos_cache", w.cos_full).Initializer("sin_cache", w.sin_full);
    m.Initializer("two", Scalar(2.0f)).Initializer("epsilon", Scalar(kEpsilon));
    m.Initializer("sqrt_head_dim", Scalar(std::sqrt(float(kHeadDim))));
    m.Initializer("mask_value", Scalar(std::numeric_limits<float>::lowest()));
    m.Initializer("gqa_expand", Int64s({1, 1, kQHeads / kKvHeads, 1, 1}));
    m.Initializer("shape_q_heads_4d", Int64s({0, kQHeads, -1, kHeadDim}));
    m.Initializer("zero", Tensor::FromVector(std::vector<int64_t>{0}, {}));
    m.Initializer("one", Tensor::FromVector(std::vector<int64_t>{1}, {}));
    m.Initializer("half_starts", Int64s({0})).Initializer("half_mid", Int64s({kHeadDim / 2}));
    m.Initializer("half_ends", Int64s({kHeadDim})).Initializer("axis_3", Int64s({3}));
    m.Initializer("axis_0", Int64s({0})).Initializer("axes_1", Int64s({1}));
    m.Initializer("axes_1_3", Int64s({1, 3})).Initializer("axis_2", Int64s({2}));
  } else {
    m.Initializer("cos_cache", w.cos_half).Initializer("sin_cache", w.sin_half);
  }
  const std::vector<int64_t> to_heads = {0, 2, 1, 3};

  auto rms_norm = [&](const std::string& x, const std::string& weight, const std::string& y) {
    if (!decomposed) {
      onnx::NodeProto& n = m.Node("RMSNormalization", {x, weight}, {y});
      SetAttr(n, "axis", int64_t{-1});
      SetAttr(n, "epsilon", kEpsilon);
      return;
    }
    m.Node("Pow", {x, "two"}, {y + "_sq"});
    onnx::NodeProto& mean = m.Node("ReduceMean", {y + "_sq"}, {y + "_ms"});
    SetAttr(mean, "axes", std::vector<int64_t>{-1});
    SetAttr(mean, "keepdims", int64_t{1});
    m.Node("Add", {y + "_ms", "epsilon"}, {y + "_mse"});
    m.Node("Sqrt", {y + "_mse"}, {y + "_rms"});
    m.Node("Div", {x, y + "_rms"}, {y + "_normed"});
    m.Node("Mul", {y + "_normed", weight}, {y});
  };
  // MatMul, split into heads: [1, S, heads * head_dim] -> [1, heads, S, head_dim].
  auto heads = [&](const std::string& h, const std::string& weight, const std::string& shape, const std::string& y) {
    m.Node("MatMul", {h, weight}, {y + "_proj"});
    m.Node("Reshape", {y + "_proj", shape}, {y + "_split"});
    SetAttr(m.Node("Transpose", {y + "_split"}, {y}), "perm", to_heads);
  };
  auto rotary = [&](const std::string& x, const std::string& y) {
    if (!decomposed) {
      SetAttr(m.Node("RotaryEmbedding", {x, "cos_cache", "sin_cache", "position_ids"}, {y}), "interleaved",
              int64_t{0});
      return;
    }
    // x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1).
    m.Node("Slice", {x, "half_starts", "half_mid", "axis_3"}, {y + "_x1"});
    m.Node("Slice", {x, "half_mid", "half_ends", "axis_3"}, {y + "_x2"});
    m.Node("Neg", {y + "_x2"}, {y + "_neg_x2"});
    SetAttr(m.Node("Concat", {y + "_neg_x2", y + "_x1"}, {y + "_rot"}), "axis", int64_t{-1});
    m.Node("Mul", {x, "rope_cos"}, {y + "_cos"});
    m.Node("Mul", {y + "_rot", "rope_sin"}, {y + "_sin"});
    m.Node("Add", {y + "_cos", y + "_sin"}, {y});
  };

  if (decomposed) {
    // Shared by the layers: cos/sin at the positions [1, 1, S, D], and the
    // causal mask [1, 1, S, T]: key position <= query position.
    for (const char* f : {"cos", "sin"}) {
      m.Node("Gather", {absl::StrCat(f, "_cache"), "position_ids"}, {absl::StrCat("rope_", f, "_3d")});
      m.Node("Unsqueeze", {absl::StrCat("rope_", f, "_3d"), "axes_1"}, {absl::StrCat("rope_", f)});
    }
    m.Node("Shape", {"past_key_0"}, {"past_shape"});
    m.Node("Gather", {"past_shape", "axis_2"}, {"past_len_1d"});
    m.Node("Shape", {"input_ids"}, {"ids_shape"});
    m.Node("Gather", {"ids_shape", "one"}, {"seq_len"});
    m.Node("Squeeze", {"past_len_1d", "axis_0"}, {"past_len"});
    m.Node("Add", {"past_len", "seq_len"}, {"total_len"});
    m.Node("Range", {"zero", "total_len", "one"}, {"key_positions"});
    m.Node("Unsqueeze", {"position_ids", "axes_1_3"}, {"query_positions"});
    m.Node("LessOrEqual", {"key_positions", "query_positions"}, {"causal_mask"});
  }

  std::string x = "embedded";
  m.Node("Gather", {"embed_tokens", "input_ids"}, {x});
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = absl::StrCat("layers.", l, ".");
    const std::string key_in = absl::StrCat(cache_in, "key_", l), value_in = absl::StrCat(cache_in, "value_", l);
    const std::string present_key = absl::StrCat("present_key_", l);
    const std::string present_value = absl::StrCat("present_value_", l);
    rms_norm(x, p + "attn_norm", p + "attn_in");
    heads(p + "attn_in", p + "wq", "shape_q_heads", p + "q");
    heads(p + "attn_in", p + "wk", "shape_kv_heads", p + "k");
    heads(p + "attn_in", p + "wv", "shape_kv_heads", p + "v");
    rotary(p + "q", p + "q_rot");
    rotary(p + "k", p + "k_rot");
    const std::string q = p + "q_rot", k = p + "k_rot", v = p + "v", y = p + "attn";
    switch (form) {
      case Form::kAttention:
        SetAttr(m.Node("Attention", {q, k, v, "", key_in, value_in}, {y, present_key, present_value}),
                "is_causal", int64_t{1});
        break;
      case Form::kStatic:
        for (const auto& [in, upd, out] : {std::tuple{key_in, k, present_key}, {value_in, v, present_value}}) {
          onnx::NodeProto& n = m.Node("TensorScatter", {in, upd, "write_indices"}, {out});
          SetAttr(n, "axis", int64_t{-2});
        }
        SetAttr(m.Node("Attention", {q, present_key, present_value, "", "", "", "nonpad_kv_seqlen"}, {y}),
                "is_causal", int64_t{1});
        break;
      case Form::kDecomposed: {
        SetAttr(m.Node("Concat", {key_in, k}, {present_key}), "axis", int64_t{2});
        SetAttr(m.Node("Concat", {value_in, v}, {present_value}), "axis", int64_t{2});
        // The GQA repeat: [1, KV, T, D] -> [1, KV, G, T, D] -> [1, H, T, D].
        for (const auto& [in, out] : {std::pair{present_key, p + "k_rep"}, {present_value, p + "v_rep"}}) {
          m.Node("Unsqueeze", {in, "axis_2"}, {out + "_5d"});
          m.Node("Expand", {out + "_5d", "gqa_expand"}, {out + "_expanded"});
          m.Node("Reshape", {out + "_expanded", "shape_q_heads_4d"}, {out});
        }
        SetAttr(m.Node("Transpose", {p + "k_rep"}, {p + "k_t"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
        m.Node("MatMul", {q, p + "k_t"}, {p + "scores"});
        m.Node("Div", {p + "scores", "sqrt_head_dim"}, {p + "scaled"});
        m.Node("Where", {"causal_mask", p + "scaled", "mask_value"}, {p + "masked"});
        SetAttr(m.Node("Softmax", {p + "masked"}, {p + "probs"}), "axis", int64_t{-1});
        m.Node("MatMul", {p + "probs", p + "v_rep"}, {y});
        break;
      }
    }
    SetAttr(m.Node("Transpose", {y}, {p + "attn_t"}), "perm", to_heads);
    m.Node("Reshape", {p + "attn_t", "shape_hidden"}, {p + "attn_merged"});
    m.Node("MatMul", {p + "attn_merged", p + "wo"}, {p + "attn_out"});
    m.Node("Add", {x, p + "attn_out"}, {p + "resid_attn"});
    x = p + "resid_attn";

    rms_norm(x, p + "mlp_norm", p + "mlp_in");
    m.Node("MatMul", {p + "mlp_in", p + "wgate"}, {p + "gate"});
    m.Node("MatMul", {p + "mlp_in", p + "wup"}, {p + "up"});
    m.Node("Sigmoid", {p + "gate"}, {p + "gate_sigmoid"});
    m.Node("Mul", {p + "gate", p + "gate_sigmoid"}, {p + "gate_silu"});
    m.Node("Mul", {p + "gate_silu", p + "up"}, {p + "mlp_hidden"});
    m.Node("MatMul", {p + "mlp_hidden", p + "wdown"}, {p + "mlp_out"});
    m.Node("Add", {x, p + "mlp_out"}, {p + "resid_mlp"});
    x = p + "resid_mlp";
  }
  rms_norm(x, "final_norm", "final_hidden");
  m.Node("MatMul", {"final_hidden", "lm_head"}, {"logits"});
  return m;
}

// The inputs of one case: `seq` new tokens after `past` cached ones.
std::vector<std::pair<std::string, Tensor>> CaseInputs(Form form, int64_t seq, int64_t past) {
  std::uniform_int_distribution<int64_t> token(0, kVocab - 1);
  std::vector<int64_t> ids(static_cast<size_t>(seq)), positions(ids.size());
  for (int64_t i = 0; i < seq; ++i) {
    ids[size_t(i)] = token(rng);
    positions[size_t(i)] = past + i;
  }
  std::vector<std::pair<std::string, Tensor>> in = {{"input_ids", Tensor::FromVector(ids, {1, seq})},
                                                    {"position_ids", Tensor::FromVector(positions, {1, seq})}};
  const bool is_static = form == Form::kStatic;
  if (is_static) {
    in.push_back({"write_indices", Int64s({past})});
    in.push_back({"nonpad_kv_seqlen", Int64s({past + seq})});
  }
  for (int64_t l = 0; l < kLayers; ++l)
    for (const char* kv : {"key_", "value_"}) {
      // The cached tokens hold random values; a static cache's free slots are zeros.
      Tensor cache = Normal({1, kKvHeads, is_static ? kStaticCache : past, kHeadDim});
      if (is_static)
        for (int64_t h = 0; h < kKvHeads; ++h)
          for (int64_t i = past * kHeadDim; i < kStaticCache * kHeadDim; ++i)
            cache.data<float>()[(h * kStaticCache) * kHeadDim + i] = 0.0f;
      in.push_back({absl::StrCat(is_static ? "cache_" : "past_", kv, l), std::move(cache)});
    }
  return in;
}

absl::Status WriteCases(const fs::path& out) {
  const Weights weights = MakeWeights();
  for (Form form : {Form::kAttention, Form::kStatic, Form::kDecomposed}) {
    const std::string model_bytes = BuildModel(form, weights).Serialize();
    fs::path first_model;
    for (const auto& [tag, seq, past] : {std::tuple{"prefill", kPrefill, int64_t{0}}, {"decode", int64_t{1}, kPast}}) {
      const std::string name = absl::StrCat("decoder_", FormName(form), "_", tag);
      const fs::path dir = out / name, data = dir / "test_data_set_0";
      std::error_code ec;
      fs::create_directories(data, ec);
      if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create '", data.string(), "': ", ec.message()));
      const fs::path model = dir / "model.onnx";
      fs::remove(model, ec);
      if (first_model.empty() || (fs::create_hard_link(first_model, model, ec), ec))
        RETURN_IF_ERROR(WriteFileAtomically(model.string(), model_bytes));
      if (first_model.empty()) first_model = model;
      const auto inputs = CaseInputs(form, seq, past);
      for (size_t k = 0; k < inputs.size(); ++k)
        RETURN_IF_ERROR(WriteFileAtomically((data / absl::StrCat("input_", k, ".pb")).string(),
                                            SerializeTensorProto(inputs[k].second, inputs[k].first)));
      std::cout << "wrote " << name << "\n";
    }
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {  // a flag (--help) is not a folder to write into
    std::cerr << "usage: bench-decoder OUT_DIR\n";
    return 2;
  }
  absl::Status s = WriteCases(argv[1]);
  if (!s.ok()) {
    std::cerr << "bench-decoder: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
