// The bundled decoder (see decoder_model.h). Per layer l:
//   h = RMSNormalization(x); q, k, v = projections, split into heads, rotary on q and k
//   y = Attention(...)  (the cache handling is what differs between the graphs)
//   x = x + Wo(y);  h = RMSNormalization(x);  x = x + Wdown(silu(Wgate h) * Wup h)
// logits = Wlm(RMSNormalization(x)). Weights are [in, out] (MatMul(h, W)).
#include "tools/decoder_model.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

constexpr int64_t kVocab = 256;  // byte tokens
constexpr int64_t kHidden = 192;
constexpr int64_t kLayers = 2;
constexpr int64_t kQHeads = 6;
constexpr int64_t kKvHeads = 2;
constexpr int64_t kHeadDim = 32;
constexpr int64_t kIntermediate = 384;
constexpr int64_t kMaxPosition = 2048;
constexpr int64_t kWindow = 32;  // the sliding kind's cache slots
constexpr double kRopeTheta = 10000.0;
constexpr float kEpsilon = 1e-5f;
constexpr uint32_t kSeed = 20240607;
constexpr const char* kWeightsFile = "weights.bin";

// One weight tensor's place in weights.bin.
struct WeightRef {
  std::string name;
  std::vector<int64_t> dims;
  int64_t offset = 0, length = 0;
};

// Collects the float32 weights, in order, as little-endian bytes. The values
// come from std::mt19937 through plain float arithmetic only (no standard
// distributions, whose results differ between libraries), so the file is the
// same byte for byte everywhere.
class WeightFile {
 public:
  explicit WeightFile(uint32_t seed) : rng_(seed) {}

  void Add(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    WeightRef ref{name, dims, int64_t(bytes_.size()), int64_t(values.size() * 4)};
    for (float v : values) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      for (int b = 0; b < 4; ++b) bytes_.push_back(char((u >> (8 * b)) & 0xff));
    }
    refs_.push_back(std::move(ref));
  }

  // Uniform in [center - half_width, center + half_width).
  void AddUniform(const std::string& name, const std::vector<int64_t>& dims, float center, float half_width) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) {
      // In double the product is exact, so fused or not the result is the same.
      const double u = double(rng_() >> 8) / 16777216.0;  // [0, 1), 24 bits
      v = float(double(center) + double(half_width) * (2.0 * u - 1.0));
    }
    Add(name, dims, values);
  }

  // A [fan_in, fan_out] projection with standard deviation 1/sqrt(fan_in)
  // (uniform of half width sqrt(3)/sqrt(fan_in)).
  void AddProjection(const std::string& name, int64_t fan_in, int64_t fan_out) {
    AddUniform(name, {fan_in, fan_out}, 0.0f, std::sqrt(3.0f / float(fan_in)));
  }

  const std::vector<WeightRef>& refs() const { return refs_; }
  const std::string& bytes() const { return bytes_; }

 private:
  std::mt19937 rng_;
  std::vector<WeightRef> refs_;
  std::string bytes_;
};

std::string LayerName(int64_t l, const char* what) { return absl::StrCat("layers.", l, ".", what); }

WeightFile MakeWeights() {
  WeightFile w(kSeed);
  w.AddUniform("embed_tokens", {kVocab, kHidden}, 0.0f, std::sqrt(3.0f));  // std 1
  for (int64_t l = 0; l < kLayers; ++l) {
    w.AddUniform(LayerName(l, "attn_norm"), {kHidden}, 1.0f, 0.1f);
    w.AddProjection(LayerName(l, "wq"), kHidden, kQHeads * kHeadDim);
    w.AddProjection(LayerName(l, "wk"), kHidden, kKvHeads * kHeadDim);
    w.AddProjection(LayerName(l, "wv"), kHidden, kKvHeads * kHeadDim);
    w.AddProjection(LayerName(l, "wo"), kQHeads * kHeadDim, kHidden);
    w.AddUniform(LayerName(l, "mlp_norm"), {kHidden}, 1.0f, 0.1f);
    w.AddProjection(LayerName(l, "wgate"), kHidden, kIntermediate);
    w.AddProjection(LayerName(l, "wup"), kHidden, kIntermediate);
    w.AddProjection(LayerName(l, "wdown"), kIntermediate, kHidden);
  }
  w.AddUniform("final_norm", {kHidden}, 1.0f, 0.1f);
  w.AddProjection("lm_head", kHidden, kVocab);
  // The rotary caches: cos/sin(p * theta^(-2i/head_dim)), i < head_dim / 2.
  const int64_t half = kHeadDim / 2;
  std::vector<float> cos_cache(size_t(kMaxPosition * half)), sin_cache(cos_cache.size());
  for (int64_t p = 0; p < kMaxPosition; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * std::pow(kRopeTheta, -2.0 * double(i) / double(kHeadDim));
      cos_cache[size_t(p * half + i)] = float(std::cos(angle));
      sin_cache[size_t(p * half + i)] = float(std::sin(angle));
    }
  w.Add("cos_cache", {kMaxPosition, half}, cos_cache);
  w.Add("sin_cache", {kMaxPosition, half}, sin_cache);
  return w;
}

// A graph input/output dim: a number or a symbol.
struct Dim {
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit on purpose
  Dim(const char* s) : symbol(s) {}  // NOLINT
  int64_t value = -1;
  const char* symbol = nullptr;
};

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
              DType dtype, const std::vector<Dim>& dims) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(int32_t(dtype));
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    if (d.symbol) shape->add_dim()->set_dim_param(d.symbol);
    else shape->add_dim()->set_dim_value(d.value);
  }
}

enum class Kind { kDynamic, kStatic, kSlidingPrefill, kSlidingDecode };

// The graph of one kind; every weight is an initializer referring to weights.bin.
ModelBuilder BuildDecoder(Kind kind, const WeightFile& weights) {
  ModelBuilder m(/*opset=*/25, /*ir_version=*/10);
  onnx::GraphProto& g = m.graph();
  const char* names[] = {"decoder_dynamic", "decoder_static", "decoder_sliding_prefill", "decoder_sliding_decode"};
  g.set_name(names[int(kind)]);

  auto in = [&](const std::string& name, DType t, const std::vector<Dim>& dims) {
    AddValue(g.mutable_input(), name, t, dims);
  };
  auto out = [&](const std::string& name, DType t, const std::vector<Dim>& dims) {
    AddValue(g.mutable_output(), name, t, dims);
  };
  const Dim cache = kind == Kind::kStatic ? Dim("cache") : Dim(kWindow);
  in("input_ids", DType::kInt64, {"batch", "seq"});
  in("position_ids", DType::kInt64, {"batch", "seq"});
  if (kind == Kind::kDynamic) {
    in("attention_mask", DType::kBool, {"batch", 1, 1, "total"});
    for (int64_t l = 0; l < kLayers; ++l) {
      in(absl::StrCat("past_key_", l), DType::kFloat, {"batch", kKvHeads, "past", kHeadDim});
      in(absl::StrCat("past_value_", l), DType::kFloat, {"batch", kKvHeads, "past", kHeadDim});
    }
  } else {
    in("write_indices", DType::kInt64, {"batch"});
    if (kind != Kind::kSlidingPrefill) in("nonpad_kv_seqlen", DType::kInt64, {"batch"});
    for (int64_t l = 0; l < kLayers; ++l) {
      in(absl::StrCat("cache_key_", l), DType::kFloat, {"batch", kKvHeads, cache, kHeadDim});
      in(absl::StrCat("cache_value_", l), DType::kFloat, {"batch", kKvHeads, cache, kHeadDim});
    }
  }
  out("logits", DType::kFloat, {"batch", "seq", kVocab});
  const Dim present = kind == Kind::kDynamic ? Dim("total") : cache;
  for (int64_t l = 0; l < kLayers; ++l) {
    out(absl::StrCat("present_key_", l), DType::kFloat, {"batch", kKvHeads, present, kHeadDim});
    out(absl::StrCat("present_value_", l), DType::kFloat, {"batch", kKvHeads, present, kHeadDim});
  }

  for (const WeightRef& w : weights.refs()) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(w.name);
    t->set_data_type(int32_t(DType::kFloat));
    for (int64_t d : w.dims) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair<std::string, std::string>{"location", kWeightsFile},
                              {"offset", absl::StrCat(w.offset)},
                              {"length", absl::StrCat(w.length)}}) {
      auto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
  }

  auto constant = [&](const std::string& name, const std::vector<int64_t>& values) {
    SetAttr(m.Node("Constant", {}, {name}), "value",
            Tensor::FromVector(values, {int64_t(values.size())}));
  };
  constant("shape_q_heads", {0, 0, kQHeads, kHeadDim});
  constant("shape_kv_heads", {0, 0, kKvHeads, kHeadDim});
  constant("shape_hidden", {0, 0, kQHeads * kHeadDim});
  if (kind == Kind::kSlidingPrefill) {
    constant("window_starts", {-kWindow});
    constant("window_ends", {std::numeric_limits<int64_t>::max()});
    constant("window_axes", {2});
  }
  const std::vector<int64_t> to_heads = {0, 2, 1, 3};
  auto rms_norm = [&](const std::string& x, const std::string& weight, const std::string& y) {
    onnx::NodeProto& n = m.Node("RMSNormalization", {x, weight}, {y});
    SetAttr(n, "axis", int64_t{-1});
    SetAttr(n, "epsilon", kEpsilon);
  };
  // MatMul, split into heads: [B, S, heads * head_dim] -> [B, heads, S, head_dim].
  auto heads = [&](const std::string& h, const std::string& weight, const std::string& shape,
                   const std::string& y) {
    m.Node("MatMul", {h, weight}, {y + "_proj"});
    m.Node("Reshape", {y + "_proj", shape}, {y + "_split"});
    SetAttr(m.Node("Transpose", {y + "_split"}, {y}), "perm", to_heads);
  };
  auto rotary = [&](const std::string& x, const std::string& y) {
    SetAttr(m.Node("RotaryEmbedding", {x, "cos_cache", "sin_cache", "position_ids"}, {y}), "interleaved",
            int64_t{0});
  };
  auto scatter = [&](const std::string& cache_in, const std::string& update, const std::string& cache_out) {
    onnx::NodeProto& n = m.Node("TensorScatter", {cache_in, update, "write_indices"}, {cache_out});
    SetAttr(n, "mode", std::string(kind == Kind::kStatic ? "linear" : "circular"));
    SetAttr(n, "axis", int64_t{-2});
  };

  std::string x = "embedded";
  m.Node("Gather", {"embed_tokens", "input_ids"}, {x});
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = absl::StrCat("layers.", l, ".");
    const std::string past_key = absl::StrCat("past_key_", l), past_value = absl::StrCat("past_value_", l);
    const std::string cache_key = absl::StrCat("cache_key_", l), cache_value = absl::StrCat("cache_value_", l);
    const std::string present_key = absl::StrCat("present_key_", l);
    const std::string present_value = absl::StrCat("present_value_", l);

    rms_norm(x, p + "attn_norm", p + "attn_in");
    heads(p + "attn_in", p + "wq", "shape_q_heads", p + "q");
    heads(p + "attn_in", p + "wk", "shape_kv_heads", p + "k");
    heads(p + "attn_in", p + "wv", "shape_kv_heads", p + "v");
    rotary(p + "q", p + "q_rot");
    rotary(p + "k", p + "k_rot");
    const std::string q = p + "q_rot", k = p + "k_rot", v = p + "v", y = p + "attn";
    switch (kind) {
      case Kind::kDynamic:
        SetAttr(m.Node("Attention", {q, k, v, "attention_mask", past_key, past_value},
                       {y, present_key, present_value}),
                "is_causal", int64_t{1});
        break;
      case Kind::kStatic:
      case Kind::kSlidingDecode:
        scatter(cache_key, k, present_key);
        scatter(cache_value, v, present_value);
        SetAttr(m.Node("Attention", {q, present_key, present_value, "", "", "", "nonpad_kv_seqlen"}, {y}),
                "is_causal", int64_t{1});
        break;
      case Kind::kSlidingPrefill: {
        onnx::NodeProto& n = m.Node("Attention", {q, k, v}, {y});
        SetAttr(n, "is_causal", int64_t{1});
        SetAttr(n, "left_window_size", kWindow - 1);
        // The last min(S, W) tokens go to the cache, token p into slot p mod W.
        m.Node("Slice", {k, "window_starts", "window_ends", "window_axes"}, {p + "k_window"});
        m.Node("Slice", {v, "window_starts", "window_ends", "window_axes"}, {p + "v_window"});
        scatter(cache_key, p + "k_window", present_key);
        scatter(cache_value, p + "v_window", present_value);
        break;
      }
    }
    SetAttr(m.Node("Transpose", {y}, {p + "attn_t"}), "perm", to_heads);
    m.Node("Reshape", {p + "attn_t", "shape_hidden"}, {p + "attn_merged"});
    m.Node("MatMul", {p + "attn_merged", p + "wo"}, {p + "attn_out"});
    m.Node("Add", {x, p + "attn_out"}, {p + "resid_attn"});
    x = p + "resid_attn";

    rms_norm(x, p + "mlp_norm", p + "mlp_in");
    AddSwiGluMlp(m, p, p + "mlp_in", p + "mlp_out");
    m.Node("Add", {x, p + "mlp_out"}, {p + "resid_mlp"});
    x = p + "resid_mlp";
  }
  rms_norm(x, "final_norm", "final_hidden");
  m.Node("MatMul", {"final_hidden", "lm_head"}, {"logits"});
  return m;
}

}  // namespace

absl::Status WriteDecoderModels(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create '", dir.string(), "': ", ec.message()));
  const WeightFile weights = MakeWeights();
  RETURN_IF_ERROR(WriteFileAtomically((dir / kWeightsFile).string(), weights.bytes()));
  const std::pair<Kind, const char*> files[] = {{Kind::kDynamic, "dynamic.onnx"},
                                                {Kind::kStatic, "static.onnx"},
                                                {Kind::kSlidingPrefill, "sliding_prefill.onnx"},
                                                {Kind::kSlidingDecode, "sliding_decode.onnx"}};
  for (const auto& [kind, file] : files)
    RETURN_IF_ERROR(WriteFileAtomically((dir / file).string(), BuildDecoder(kind, weights).Serialize()));
  const std::string config = absl::StrCat("vocab ", kVocab, "\nhidden ", kHidden, "\nlayers ", kLayers,
                                          "\nq_heads ", kQHeads, "\nkv_heads ", kKvHeads, "\nhead_dim ", kHeadDim,
                                          "\nmax_position ", kMaxPosition, "\nwindow ", kWindow, "\n");
  return WriteFileAtomically((dir / "config.txt").string(), config);
}

}  // namespace onnx_mini
