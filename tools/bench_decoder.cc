// bench-decoder: writes Llama-style decoders in several export forms, each
// with a prefill case (128 tokens, empty cache) and a decode-step case (one
// token after 512), in the backend-test layout, so onnx-run and onnxruntime
// time the same files:
//   bench-decoder OUT_DIR [--quant] [--only REGEX]
//   onnx-run OUT_DIR/CASE/model.onnx --input-dir OUT_DIR/CASE/test_data_set_0 --repeat 10 --json
// Without --quant: a tiny decoder (4 layers, hidden 512, GQA with 8 query and
// 2 KV heads of 64, SiLU MLP of 1408, vocabulary 8192, random float weights)
// in three forms that compute the same function with the same weights:
//   attention   Attention-23 with past/present (a dynamic cache), RMSNormalization
//               and RotaryEmbedding ops (opset 23);
//   static      a static cache of 1024 slots written by TensorScatter-24,
//               Attention-24 over nonpad_kv_seqlen (opset 24);
//   decomposed  as older exporters write it (opset 17): RMSNorm as
//               Pow/ReduceMean/Add/Sqrt/Div/Mul, rotary as Slice/Neg/Concat/Mul/Add,
//               the GQA repeat as Unsqueeze/Expand/Reshape, scores by MatMul, Div
//               and a causal Where mask, Softmax, MatMul; past/present by Concat;
//   torchscript, sdpa  as torch.onnx exports Hugging Face's Llama (TorchScript
//               eager attention, opset 17; dynamo-like SDPA, opset 18) with
//               Optimum's input and output names: see BuildExportModel.
// With --quant: a Qwen2-sized decoder (8 layers, hidden 1024, 16/4 heads of 64,
// MLP 2816, vocabulary 32000, random weights) in the quantized forms users get
// (see WriteQuantCases; and the attention form in float32 for reference),
// each case with a bench.json: the weight bytes a step reads (from which
// tools/bench/compare.py prints the floor).
// SiLU is x * Sigmoid(x) in every form. The prefill and decode cases of a form
// share one model file (hard-linked).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/status_macros.h"
#include "runtime/tensor_io.h"
#include "tools/genai_model.h"
#include "tools/model_builder.h"

namespace fs = std::filesystem;
using namespace onnx_mini;

namespace {

// The decoder's sizes.
struct Dims {
  int64_t vocab, hidden, layers, q_heads, kv_heads, head_dim, intermediate;
  int64_t max_position;  // rows of the rotary caches
  int64_t static_cache;  // slots of the static cache; the shared buffer's length
};
constexpr Dims kTiny{8192, 512, 4, 8, 2, 64, 1408, 2048, 1024};
// Qwen2-0.5B-like: the realistic size.
constexpr Dims kQwen{32000, 1024, 8, 16, 4, 64, 2816, 2048, 1024};
constexpr int64_t kPrefill = 128;
constexpr int64_t kPast = 512;  // tokens in the cache before the decode step
constexpr int64_t kBlock = 32;  // 4-bit block size of every quantized form
constexpr double kRopeTheta = 10000.0;
constexpr float kEpsilon = 1e-5f;

enum class Form { kAttention, kStatic, kDecomposed, kTorchScript, kSdpa };
const char* FormName(Form f) {
  switch (f) {
    case Form::kAttention: return "attention";
    case Form::kStatic: return "static";
    case Form::kDecomposed: return "decomposed";
    case Form::kTorchScript: return "torchscript";
    case Form::kSdpa: return "sdpa";
  }
  return "?";
}
bool IsExportForm(Form f) { return f == Form::kTorchScript || f == Form::kSdpa; }

// How the projections' weights (and, for q8, the embedding) are spelled.
enum class Quant {
  kFloat,  // MatMul over float32 weights
  kQ4,     // transformers.js model_q4.onnx: onnxruntime's MatMul4BitsQuantizer(block_size 32,
           // is_symmetric, accuracy_level unset): MatMulNBits, no zero points, 1-D scales,
           // no accuracy_level attribute (0); the embedding stays a float Gather
  kQ8,     // transformers.js model_quantized.onnx: onnxruntime's dynamic quantizer
           // (IntegerOps, QInt8 weights as for a graph without Conv/GQA/MHA, per tensor,
           // symmetric, no reduce_range): DynamicQuantizeLinear + MatMulInteger + Cast + Mul
           // + Mul; the embedding an int8 table, Gather then DequantizeLinear
  kQdq4,   // the standard spelling: DequantizeLinear (int4 [K, N], blocks of 32 along
           // axis 0, symmetric: no zero point) + MatMul
};

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

// The weights, shared by the forms. Projections are [in, out] with
// standard deviation 1/sqrt(in).
struct Weights {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::set<std::string> projections;  // the MatMul weights among `tensors`
  Tensor cos_half, sin_half;  // [positions, head_dim / 2]: RotaryEmbedding's caches
  Tensor cos_full, sin_full;  // [positions, head_dim]: the halves repeated, for the decomposed form
};

Weights MakeWeights(const Dims& d) {
  Weights w;
  auto projection = [&](const std::string& name, int64_t in, int64_t out) {
    w.tensors.push_back({name, Uniform({in, out}, 0.0f, std::sqrt(3.0f / float(in)))});
    w.projections.insert(name);
  };
  w.tensors.push_back({"embed_tokens", Uniform({d.vocab, d.hidden}, 0.0f, std::sqrt(3.0f))});
  for (int64_t l = 0; l < d.layers; ++l) {
    const std::string p = absl::StrCat("layers.", l, ".");
    w.tensors.push_back({p + "attn_norm", Uniform({d.hidden}, 1.0f, 0.1f)});
    projection(p + "wq", d.hidden, d.q_heads * d.head_dim);
    projection(p + "wk", d.hidden, d.kv_heads * d.head_dim);
    projection(p + "wv", d.hidden, d.kv_heads * d.head_dim);
    projection(p + "wo", d.q_heads * d.head_dim, d.hidden);
    w.tensors.push_back({p + "mlp_norm", Uniform({d.hidden}, 1.0f, 0.1f)});
    projection(p + "wgate", d.hidden, d.intermediate);
    projection(p + "wup", d.hidden, d.intermediate);
    projection(p + "wdown", d.intermediate, d.hidden);
  }
  w.tensors.push_back({"final_norm", Uniform({d.hidden}, 1.0f, 0.1f)});
  projection("lm_head", d.hidden, d.vocab);
  const int64_t half = d.head_dim / 2;
  w.cos_half = Tensor::Zeros(DType::kFloat, {d.max_position, half});
  w.sin_half = Tensor::Zeros(DType::kFloat, {d.max_position, half});
  w.cos_full = Tensor::Zeros(DType::kFloat, {d.max_position, d.head_dim});
  w.sin_full = Tensor::Zeros(DType::kFloat, {d.max_position, d.head_dim});
  for (int64_t p = 0; p < d.max_position; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * std::pow(kRopeTheta, -2.0 * double(i) / double(d.head_dim));
      const float c = float(std::cos(angle)), s = float(std::sin(angle));
      w.cos_half.data<float>()[p * half + i] = c;
      w.sin_half.data<float>()[p * half + i] = s;
      for (int64_t j : {i, i + half}) {
        w.cos_full.data<float>()[p * d.head_dim + j] = c;
        w.sin_full.data<float>()[p * d.head_dim + j] = s;
      }
    }
  return w;
}

Tensor Int64s(const std::vector<int64_t>& v) { return Tensor::FromVector(v, {int64_t(v.size())}); }
Tensor Scalar(float v) { return Tensor::FromVector(std::vector<float>{v}, {}); }

// An initializer from raw little-endian bytes (int4, packed codes).
void RawInitializer(ModelBuilder& m, const std::string& name, DType dtype, const std::vector<int64_t>& dims,
                    const void* bytes, size_t size) {
  onnx::TensorProto* t = m.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(int32_t(dtype));
  for (int64_t dim : dims) t->add_dims(dim);
  t->set_raw_data(bytes, size);
}

// A [K, N] weight in symmetric 4-bit blocks of kBlock along K, as
// onnxruntime's quantizers write it with is_symmetric: a block's scale is its
// largest-magnitude value over -8 (which maps to -8 exactly), codes
// round(w / scale) clamped to [-8, 7].
struct Blocks4 {
  int64_t k = 0, n = 0, blocks = 0;
  std::vector<int8_t> codes;  // [K, N]
  std::vector<float> scales;  // [blocks, N]
};

Blocks4 QuantizeBlocks4(const Tensor& w) {
  Blocks4 q;
  q.k = w.shape()[0];
  q.n = w.shape()[1];
  q.blocks = (q.k + kBlock - 1) / kBlock;
  q.codes.assign(size_t(q.k * q.n), 0);
  q.scales.assign(size_t(q.blocks * q.n), 0.0f);
  const float* x = w.data<float>();
  for (int64_t b = 0; b < q.blocks; ++b)
    for (int64_t n = 0; n < q.n; ++n) {
      const int64_t end = std::min(q.k, (b + 1) * kBlock);
      float extreme = 0.0f;
      for (int64_t k = b * kBlock; k < end; ++k)
        if (std::fabs(x[k * q.n + n]) > std::fabs(extreme)) extreme = x[k * q.n + n];
      const float scale = extreme / -8.0f;
      q.scales[size_t(b * q.n + n)] = scale;
      for (int64_t k = b * kBlock; k < end; ++k)
        q.codes[size_t(k * q.n + n)] =
            int8_t(scale == 0.0f ? 0 : std::clamp<long>(std::lround(x[k * q.n + n] / scale), -8, 7));
    }
  return q;
}

// A weight in int8 per tensor, symmetric (onnxruntime's QInt8 weights: scale
// max|w| / 127, zero point 0, codes in [-127, 127], ties to even).
struct Int8Tensor {
  std::vector<int8_t> codes;
  float scale = 1.0f;
};

Int8Tensor QuantizeInt8(const Tensor& w) {
  Int8Tensor q;
  float absmax = 0.0f;
  for (int64_t i = 0; i < w.size(); ++i) absmax = std::max(absmax, std::fabs(w.data<float>()[i]));
  q.scale = absmax > 0.0f ? absmax / 127.0f : 1.0f;
  q.codes.resize(size_t(w.size()));
  for (int64_t i = 0; i < w.size(); ++i)
    q.codes[size_t(i)] = int8_t(std::clamp(std::nearbyint(w.data<float>()[i] / q.scale), -127.0f, 127.0f));
  return q;
}

ModelBuilder BuildModel(Form form, Quant quant, int64_t opset, const Dims& d, const Weights& w,
                        const std::string& name) {
  ModelBuilder m(opset, form == Form::kDecomposed ? 8 : 10);
  if (quant == Quant::kQ4) m.Opset("com.microsoft", 1);
  m.graph().set_name(name);
  // -1 dims are symbols (N0, N1, ...), as the builder writes them.
  m.Input("input_ids", DType::kInt64, {1, -1});
  m.Input("position_ids", DType::kInt64, {1, -1});
  const bool is_static = form == Form::kStatic;
  if (is_static) {
    m.Input("write_indices", DType::kInt64, {1});
    m.Input("nonpad_kv_seqlen", DType::kInt64, {1});
  }
  const std::string cache_in = is_static ? "cache_" : "past_";
  const std::vector<int64_t> cache_dims = {1, d.kv_heads, is_static ? d.static_cache : -1, d.head_dim};
  for (int64_t l = 0; l < d.layers; ++l)
    for (const char* kv : {"key_", "value_"}) m.Input(absl::StrCat(cache_in, kv, l), DType::kFloat, cache_dims);
  m.Output("logits", DType::kFloat, {1, -1, d.vocab});
  for (int64_t l = 0; l < d.layers; ++l)
    for (const char* kv : {"key_", "value_"}) {
      m.Output(absl::StrCat("present_", kv, l), DType::kFloat, cache_dims);
      // A dynamic cache grows: present's length is its own symbol, not past's.
      if (!is_static)
        m.graph().mutable_output()->rbegin()->mutable_type()->mutable_tensor_type()->mutable_shape()
            ->mutable_dim(2)->set_dim_param("total");
    }

  for (const auto& [tname, t] : w.tensors) {
    if (quant != Quant::kFloat && w.projections.count(tname)) continue;  // written by `matmul`
    if (quant == Quant::kQ8 && tname == "embed_tokens") continue;
    m.Initializer(tname, t);
  }
  auto weight = [&](const std::string& tname) -> const Tensor& {
    for (const auto& [n, t] : w.tensors)
      if (n == tname) return t;
    std::abort();
  };
  const bool decomposed = form == Form::kDecomposed;
  m.Initializer("shape_q_heads", Int64s({0, 0, d.q_heads, d.head_dim}));
  m.Initializer("shape_kv_heads", Int64s({0, 0, d.kv_heads, d.head_dim}));
  m.Initializer("shape_hidden", Int64s({0, 0, d.q_heads * d.head_dim}));
  if (decomposed) {
    m.Initializer("cos_cache", w.cos_full).Initializer("sin_cache", w.sin_full);
    m.Initializer("two", Scalar(2.0f)).Initializer("epsilon", Scalar(kEpsilon));
    m.Initializer("sqrt_head_dim", Scalar(std::sqrt(float(d.head_dim))));
    m.Initializer("mask_value", Scalar(std::numeric_limits<float>::lowest()));
    m.Initializer("gqa_expand", Int64s({1, 1, d.q_heads / d.kv_heads, 1, 1}));
    m.Initializer("shape_q_heads_4d", Int64s({0, d.q_heads, -1, d.head_dim}));
    m.Initializer("zero", Tensor::FromVector(std::vector<int64_t>{0}, {}));
    m.Initializer("one", Tensor::FromVector(std::vector<int64_t>{1}, {}));
    m.Initializer("half_starts", Int64s({0})).Initializer("half_mid", Int64s({d.head_dim / 2}));
    m.Initializer("half_ends", Int64s({d.head_dim})).Initializer("axis_3", Int64s({3}));
    m.Initializer("axis_0", Int64s({0})).Initializer("axes_1", Int64s({1}));
    m.Initializer("axes_1_3", Int64s({1, 3})).Initializer("axis_2", Int64s({2}));
  } else {
    m.Initializer("cos_cache", w.cos_half).Initializer("sin_cache", w.sin_half);
  }
  const std::vector<int64_t> to_heads = {0, 2, 1, 3};

  // y = x @ W in the form's spelling (node and initializer names as the
  // quantizers write them).
  std::set<std::string> quantized_activations;  // q8: one DynamicQuantizeLinear per activation
  auto matmul = [&](const std::string& x, const std::string& wname, const std::string& y) {
    const Tensor& wt = weight(wname);
    const int64_t K = wt.shape()[0], N = wt.shape()[1];
    switch (quant) {
      case Quant::kFloat:
        m.Node("MatMul", {x, wname}, {y});
        return;
      case Quant::kQ4: {
        const Blocks4 q = QuantizeBlocks4(wt);
        // B [N, blocks, kBlock / 2]: element 2i of a block in the low nibble, codes + 8.
        std::vector<uint8_t> packed(size_t(N * q.blocks * kBlock / 2), 0);
        std::vector<float> scales(size_t(N * q.blocks));
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k) {
            const int code = q.codes[size_t(k * N + n)] + 8;
            uint8_t& byte = packed[size_t((n * q.blocks + k / kBlock) * (kBlock / 2) + (k % kBlock) / 2)];
            byte = uint8_t(byte | (k % 2 == 0 ? code : code << 4));
          }
        for (int64_t n = 0; n < N; ++n)
          for (int64_t b = 0; b < q.blocks; ++b) scales[size_t(n * q.blocks + b)] = q.scales[size_t(b * N + n)];
        RawInitializer(m, wname + "_Q4", DType::kUInt8, {N, q.blocks, kBlock / 2}, packed.data(), packed.size());
        RawInitializer(m, wname + "_scales", DType::kFloat, {N * q.blocks}, scales.data(), scales.size() * 4);
        onnx::NodeProto& n = m.Node("MatMulNBits", {x, wname + "_Q4", wname + "_scales"}, {y}, "com.microsoft");
        n.set_name(y + "_MatMul_Q4");
        SetAttr(n, "K", K);
        SetAttr(n, "N", N);
        SetAttr(n, "bits", int64_t{4});
        SetAttr(n, "block_size", kBlock);
        return;
      }
      case Quant::kQdq4: {
        const Blocks4 q = QuantizeBlocks4(wt);
        // int4 [K, N] in element order, two a byte, the first in the low nibble.
        std::vector<uint8_t> packed(size_t((K * N + 1) / 2), 0);
        for (int64_t i = 0; i < K * N; ++i)
          packed[size_t(i / 2)] |= uint8_t((uint8_t(q.codes[size_t(i)]) & 0xF) << (i % 2 == 0 ? 0 : 4));
        RawInitializer(m, wname + "_DQ_Q4", DType::kInt4, {K, N}, packed.data(), packed.size());
        RawInitializer(m, wname + "_DQ_scales", DType::kFloat, {q.blocks, N}, q.scales.data(), q.scales.size() * 4);
        onnx::NodeProto& dq =
            m.Node("DequantizeLinear", {wname + "_DQ_Q4", wname + "_DQ_scales"}, {wname + "_DQ_Q4_output"});
        SetAttr(dq, "axis", int64_t{0});
        SetAttr(dq, "block_size", kBlock);
        m.Node("MatMul", {x, wname + "_DQ_Q4_output"}, {y});
        return;
      }
      case Quant::kQ8: {
        const Int8Tensor q = QuantizeInt8(wt);
        RawInitializer(m, wname + "_quantized", DType::kInt8, {K, N}, q.codes.data(), q.codes.size());
        RawInitializer(m, wname + "_scale", DType::kFloat, {}, &q.scale, 4);
        const int8_t zero = 0;
        RawInitializer(m, wname + "_zero_point", DType::kInt8, {}, &zero, 1);
        if (quantized_activations.insert(x).second)
          m.Node("DynamicQuantizeLinear", {x}, {x + "_quantized", x + "_scale", x + "_zero_point"});
        m.Node("MatMulInteger", {x + "_quantized", wname + "_quantized", x + "_zero_point", wname + "_zero_point"},
               {y + "_output_quantized"});
        SetAttr(m.Node("Cast", {y + "_output_quantized"}, {y + "_output_quantized_cast_output"}), "to",
                int64_t(DType::kFloat));
        m.Node("Mul", {x + "_scale", wname + "_scale"}, {y + "_scales_mul"});
        m.Node("Mul", {y + "_output_quantized_cast_output", y + "_scales_mul"}, {y});
        return;
      }
    }
  };

  auto rms_norm = [&](const std::string& x, const std::string& weight_name, const std::string& y) {
    if (!decomposed) {
      onnx::NodeProto& n = m.Node("RMSNormalization", {x, weight_name}, {y});
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
    m.Node("Mul", {y + "_normed", weight_name}, {y});
  };
  // MatMul, split into heads: [1, S, heads * head_dim] -> [1, heads, S, head_dim].
  auto heads = [&](const std::string& h, const std::string& wname, const std::string& shape, const std::string& y) {
    matmul(h, wname, y + "_proj");
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
  if (quant == Quant::kQ8) {
    // The embedding table in int8 (the quantizer's Gather rule), dequantized after the gather.
    const Int8Tensor q = QuantizeInt8(weight("embed_tokens"));
    RawInitializer(m, "embed_tokens_quantized", DType::kInt8, {d.vocab, d.hidden}, q.codes.data(), q.codes.size());
    RawInitializer(m, "embed_tokens_scale", DType::kFloat, {}, &q.scale, 4);
    const int8_t zero = 0;
    RawInitializer(m, "embed_tokens_zero_point", DType::kInt8, {}, &zero, 1);
    m.Node("Gather", {"embed_tokens_quantized", "input_ids"}, {x + "_quantized"});
    m.Node("DequantizeLinear", {x + "_quantized", "embed_tokens_scale", "embed_tokens_zero_point"}, {x});
  } else {
    m.Node("Gather", {"embed_tokens", "input_ids"}, {x});
  }
  for (int64_t l = 0; l < d.layers; ++l) {
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
      case Form::kTorchScript:
      case Form::kSdpa:
        std::abort();  // BuildExportModel writes these
    }
    SetAttr(m.Node("Transpose", {y}, {p + "attn_t"}), "perm", to_heads);
    m.Node("Reshape", {p + "attn_t", "shape_hidden"}, {p + "attn_merged"});
    matmul(p + "attn_merged", p + "wo", p + "attn_out");
    m.Node("Add", {x, p + "attn_out"}, {p + "resid_attn"});
    x = p + "resid_attn";

    rms_norm(x, p + "mlp_norm", p + "mlp_in");
    matmul(p + "mlp_in", p + "wgate", p + "gate");
    matmul(p + "mlp_in", p + "wup", p + "up");
    m.Node("Sigmoid", {p + "gate"}, {p + "gate_sigmoid"});
    m.Node("Mul", {p + "gate", p + "gate_sigmoid"}, {p + "gate_silu"});
    m.Node("Mul", {p + "gate_silu", p + "up"}, {p + "mlp_hidden"});
    matmul(p + "mlp_hidden", p + "wdown", p + "mlp_out");
    m.Node("Add", {x, p + "mlp_out"}, {p + "resid_mlp"});
    x = p + "resid_mlp";
  }
  rms_norm(x, "final_norm", "final_hidden");
  matmul("final_hidden", "lm_head", "logits");
  return m;
}

// The decoder as torch.onnx writes it from Hugging Face's Llama, with
// Optimum's names (input_ids, attention_mask, position_ids,
// past_key_values.N.key/value -> logits, present.N.key/value; batch and
// lengths symbolic):
//   torchscript (opset 17, eager attention): RMSNorm as Pow/ReduceMean/Add/
//     Sqrt/Reciprocal/Mul; rotary from Gather(cos, position_ids) and
//     rotate_half by Slice (ends from Shape/Gather/Div)/Neg/Concat; heads
//     split and merged by Reshape over shapes from Shape/Gather/Concat;
//     repeat_kv as Unsqueeze/Expand/Reshape over shapes computed from the
//     cache's Shape (the Expand's through torch's Where(Equal(s, -1), 1, s)); scores Div by sqrt(D), plus the additive mask that HF's
//     subgraph builds from attention_mask (float min where hidden), sliced in
//     each layer to key_states.shape[-2] of the repeated keys, a Cast to
//     float before the Softmax;
//   sdpa (opset 18, dynamo-like scaled_dot_product_attention): ReduceMean and
//     Slice taking axes as inputs, shapes from Shape(start, end) and Concat,
//     the scale split as sqrt(scale) times Q and times Kᵀ, a boolean mask
//     (causal And attention_mask) made additive by Where(mask, 0, -inf) in
//     each layer, and the Where(IsNaN(P), 0, P) guard after the Softmax.
ModelBuilder BuildExportModel(Form form, const Dims& d, const Weights& w, const std::string& name) {
  const bool ts = form == Form::kTorchScript;
  ModelBuilder m(ts ? 17 : 18, 8);
  m.graph().set_name(name);
  // Symbolic dims by name, as Optimum declares them.
  const auto sym = [](onnx::ValueInfoProto* v, int axis, const char* param) {
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(axis)->set_dim_param(param);
  };
  m.Input("input_ids", DType::kInt64, {-1, -1});
  m.Input("attention_mask", DType::kInt64, {-1, -1});
  m.Input("position_ids", DType::kInt64, {-1, -1});
  for (int k = 0; k < 3; ++k) {
    sym(m.graph().mutable_input(k), 0, "batch_size");
    sym(m.graph().mutable_input(k), 1, k == 1 ? "past_sequence_length + sequence_length" : "sequence_length");
  }
  for (int64_t l = 0; l < d.layers; ++l)
    for (const char* kv : {"key", "value"}) {
      m.Input(absl::StrCat("past_key_values.", l, ".", kv), DType::kFloat, {-1, d.kv_heads, -1, d.head_dim});
      sym(m.graph().mutable_input()->rbegin().operator->(), 0, "batch_size");
      sym(m.graph().mutable_input()->rbegin().operator->(), 2, "past_sequence_length");
    }
  m.Output("logits", DType::kFloat, {-1, -1, d.vocab});
  sym(m.graph().mutable_output(0), 0, "batch_size");
  sym(m.graph().mutable_output(0), 1, "sequence_length");
  for (int64_t l = 0; l < d.layers; ++l)
    for (const char* kv : {"key", "value"}) {
      m.Output(absl::StrCat("present.", l, ".", kv), DType::kFloat, {-1, d.kv_heads, -1, d.head_dim});
      sym(m.graph().mutable_output()->rbegin().operator->(), 0, "batch_size");
      sym(m.graph().mutable_output()->rbegin().operator->(), 2, "past_sequence_length + sequence_length");
    }
  for (const auto& [tname, t] : w.tensors) m.Initializer(tname, t);
  m.Initializer("cos_cached", w.cos_full).Initializer("sin_cached", w.sin_full);
  const auto i64 = [&](const std::string& n, std::vector<int64_t> v) { m.Initializer(n, Int64s(v)); };
  const auto i64_scalar = [&](const std::string& n, int64_t v) {
    m.Initializer(n, Tensor::FromVector(std::vector<int64_t>{v}, {}));
  };
  m.Initializer("two", Scalar(2.0f)).Initializer("epsilon", Scalar(kEpsilon));
  m.Initializer("f_zero", Scalar(0.0f)).Initializer("f_one", Scalar(1.0f));
  m.Initializer("f_min", Scalar(std::numeric_limits<float>::lowest()));
  m.Initializer("f_ninf", Scalar(-std::numeric_limits<float>::infinity()));
  m.Initializer("sqrt_head_dim", Scalar(std::sqrt(float(d.head_dim))));
  // SDPA's sqrt of the scale 1/sqrt(D), on each side.
  m.Initializer("sqrt_scale", Scalar(float(std::sqrt(1.0 / std::sqrt(double(d.head_dim))))));
  i64_scalar("s_0", 0), i64_scalar("s_1", 1), i64_scalar("s_2", 2), i64_scalar("s_3", 3), i64_scalar("s_m2", -2);
  i64("c_0", {0}), i64("c_1", {1}), i64("c_2", {2}), i64("c_3", {3}), i64("c_last", {-1}), i64("c_1_2", {1, 2});
  i64("c_heads", {d.q_heads}), i64("c_kv_heads", {d.kv_heads}), i64("c_groups", {d.q_heads / d.kv_heads});
  i64("c_head_dim", {d.head_dim}), i64("c_hidden", {d.q_heads * d.head_dim});
  i64("c_half", {d.head_dim / 2}), i64("c_int_max", {std::numeric_limits<int64_t>::max()});
  i64("c_ones5", {1, 1, 1, 1, 1}), i64("c_neg_ones5", {-1, -1, -1, -1, -1});

  // Dim `axis` of x as a 1-D value of one element: Shape/Gather/Unsqueeze
  // (TorchScript) or Shape(start, end) (dynamo).
  int counter = 0;
  const auto dim = [&](const std::string& x, int64_t axis) {
    const std::string y = absl::StrCat(x, "_dim", axis, "_", counter++);
    if (ts) {
      m.Node("Shape", {x}, {y + "_shape"});
      m.Node("Gather", {y + "_shape", absl::StrCat("s_", axis)}, {y + "_scalar"});
      m.Node("Unsqueeze", {y + "_scalar", "c_0"}, {y});
    } else {
      onnx::NodeProto& n = m.Node("Shape", {x}, {y});
      SetAttr(n, "start", axis);
      SetAttr(n, "end", axis + 1);
    }
    return y;
  };
  const auto concat0 = [&](const std::vector<std::string>& parts, const std::string& y) {
    SetAttr(m.Node("Concat", parts, {y}), "axis", int64_t{0});
  };
  const auto rms_norm = [&](const std::string& x, const std::string& weight, const std::string& y) {
    m.Node("Pow", {x, "two"}, {y + "_pow"});
    if (ts) {
      onnx::NodeProto& n = m.Node("ReduceMean", {y + "_pow"}, {y + "_mean"});
      SetAttr(n, "axes", std::vector<int64_t>{-1});
      SetAttr(n, "keepdims", int64_t{1});
    } else {
      SetAttr(m.Node("ReduceMean", {y + "_pow", "c_last"}, {y + "_mean"}), "keepdims", int64_t{1});
    }
    m.Node("Add", {y + "_mean", "epsilon"}, {y + "_add"});
    m.Node("Sqrt", {y + "_add"}, {y + "_sqrt"});
    m.Node("Reciprocal", {y + "_sqrt"}, {y + "_rsqrt"});
    m.Node("Mul", {x, y + "_rsqrt"}, {y + "_normed"});
    m.Node("Mul", {weight, y + "_normed"}, {y});
  };
  const auto rotary = [&](const std::string& x, const std::string& y) {
    std::string half = "c_half";
    if (ts) {  // x.shape[-1] // 2
      const std::string last = dim(x, 3);
      m.Node("Div", {last, "c_2"}, {y + "_half"});
      half = y + "_half";
    }
    m.Node("Slice", {x, "c_0", half, "c_last"}, {y + "_x1"});
    m.Node("Slice", {x, half, "c_int_max", "c_last"}, {y + "_x2"});
    m.Node("Neg", {y + "_x2"}, {y + "_neg"});
    SetAttr(m.Node("Concat", {y + "_neg", y + "_x1"}, {y + "_rot"}), "axis", int64_t{-1});
    m.Node("Mul", {x, "cos"}, {y + "_cos"});
    m.Node("Mul", {y + "_rot", "sin"}, {y + "_sin"});
    m.Node("Add", {y + "_cos", y + "_sin"}, {y});
  };

  // Shared by the layers: cos and sin [B, 1, S, D] at the positions, and
  // the mask over [B, 1, S, T]: key j visible to query i when j <= P + i
  // and attention_mask[b, j] is 1.
  for (const char* f : {"cos", "sin"}) {
    m.Node("Gather", {absl::StrCat(f, "_cached"), "position_ids"}, {absl::StrCat(f, "_3d")});
    m.Node("Unsqueeze", {absl::StrCat(f, "_3d"), "c_1"}, {f});
  }
  m.Node("Shape", {"input_ids"}, {"ids_shape"});
  m.Node("Gather", {"ids_shape", "s_1"}, {"seq_len"});
  m.Node("Shape", {"past_key_values.0.key"}, {"past_shape"});
  m.Node("Gather", {"past_shape", "s_2"}, {"past_len"});
  m.Node("Add", {"past_len", "seq_len"}, {"total_len"});
  m.Node("Range", {"past_len", "total_len", "s_1"}, {"query_pos"});
  m.Node("Unsqueeze", {"query_pos", "c_1"}, {"query_pos_col"});
  m.Node("Range", {"s_0", "total_len", "s_1"}, {"key_pos"});
  m.Node("LessOrEqual", {"key_pos", "query_pos_col"}, {"causal"});
  m.Node("Unsqueeze", {"attention_mask", "c_1_2"}, {"mask_4d"});
  if (ts) {
    // HF's _prepare_4d_causal_attention_mask: float min where hidden, 0 elsewhere.
    m.Node("Where", {"causal", "f_zero", "f_min"}, {"causal_bias"});
    SetAttr(m.Node("Cast", {"mask_4d"}, {"mask_float"}), "to", int64_t(DType::kFloat));
    m.Node("Sub", {"f_one", "mask_float"}, {"inverted"});
    SetAttr(m.Node("Cast", {"inverted"}, {"padding"}), "to", int64_t(DType::kBool));
    m.Node("Where", {"padding", "f_min", "causal_bias"}, {"attn_bias"});
  } else {
    SetAttr(m.Node("Cast", {"mask_4d"}, {"mask_bool"}), "to", int64_t(DType::kBool));
    m.Node("And", {"causal", "mask_bool"}, {"attn_mask"});
  }

  m.Node("Gather", {"embed_tokens", "input_ids"}, {"embedded"});
  std::string x = "embedded";
  const std::vector<int64_t> to_heads = {0, 2, 1, 3};
  for (int64_t l = 0; l < d.layers; ++l) {
    const std::string p = absl::StrCat("layers.", l, ".");
    rms_norm(x, p + "attn_norm", p + "attn_in");
    // bsz, q_len, _ = hidden_states.size()
    const std::string bsz = dim(p + "attn_in", 0), q_len = dim(p + "attn_in", 1);
    concat0({bsz, q_len, "c_heads", "c_head_dim"}, p + "q_shape");
    concat0({bsz, q_len, "c_kv_heads", "c_head_dim"}, p + "kv_shape");
    for (const auto& [wn, shape, out] : {std::tuple{"wq", "q_shape", "q"}, {"wk", "kv_shape", "k"},
                                         {"wv", "kv_shape", "v"}}) {
      m.Node("MatMul", {p + "attn_in", p + wn}, {p + out + "_proj"});
      m.Node("Reshape", {p + out + "_proj", p + shape}, {p + out + "_split"});
      SetAttr(m.Node("Transpose", {p + out + "_split"}, {p + out}), "perm", to_heads);
    }
    rotary(p + "q", p + "q_rot");
    rotary(p + "k", p + "k_rot");
    const std::string present_k = absl::StrCat("present.", l, ".key"), present_v = absl::StrCat("present.", l, ".value");
    SetAttr(m.Node("Concat", {absl::StrCat("past_key_values.", l, ".key"), p + "k_rot"}, {present_k}), "axis",
            int64_t{2});
    SetAttr(m.Node("Concat", {absl::StrCat("past_key_values.", l, ".value"), p + "v"}, {present_v}), "axis",
            int64_t{2});
    // repeat_kv: x[:, :, None].expand(b, kv, g, t, d).reshape(b, kv * g, t, d), b and t from x.shape.
    for (const auto& [in, out] : {std::pair{present_k, p + "k_rep"}, {present_v, p + "v_rep"}}) {
      const std::string b = dim(in, 0), t = dim(in, 2);
      if (ts) {  // torch's expand: stack, view(-1), and Where(Equal(s, -1), 1, s)
        concat0({b, "c_kv_heads", "c_groups", t, "c_head_dim"}, out + "_stack");
        m.Node("Reshape", {out + "_stack", "c_last"}, {out + "_view"});
        m.Node("Equal", {out + "_view", "c_neg_ones5"}, {out + "_is_neg"});
        m.Node("Where", {out + "_is_neg", "c_ones5", out + "_view"}, {out + "_expand_shape"});
      } else {
        concat0({b, "c_kv_heads", "c_groups", t, "c_head_dim"}, out + "_expand_shape");
      }
      concat0({b, "c_heads", t, "c_head_dim"}, out + "_shape");
      m.Node("Unsqueeze", {in, "c_2"}, {out + "_5d"});
      m.Node("Expand", {out + "_5d", out + "_expand_shape"}, {out + "_expanded"});
      m.Node("Reshape", {out + "_expanded", out + "_shape"}, {out});
    }
    SetAttr(m.Node("Transpose", {p + "k_rep"}, {p + "k_t"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
    std::string probs = p + "probs";
    if (ts) {
      m.Node("MatMul", {p + "q_rot", p + "k_t"}, {p + "scores"});
      m.Node("Div", {p + "scores", "sqrt_head_dim"}, {p + "scaled"});
      // attention_mask[:, :, :, :key_states.shape[-2]], of the repeated keys
      m.Node("Shape", {p + "k_rep"}, {p + "k_rep_dims"});
      m.Node("Gather", {p + "k_rep_dims", "s_m2"}, {p + "k_len"});
      m.Node("Unsqueeze", {p + "k_len", "c_0"}, {p + "k_len_1d"});
      m.Node("Slice", {"attn_bias", "c_0", p + "k_len_1d", "c_3"}, {p + "layer_bias"});
      m.Node("Add", {p + "scaled", p + "layer_bias"}, {p + "masked"});
      // softmax(..., dtype=torch.float32)
      SetAttr(m.Node("Cast", {p + "masked"}, {p + "masked_f32"}), "to", int64_t(DType::kFloat));
      SetAttr(m.Node("Softmax", {p + "masked_f32"}, {probs}), "axis", int64_t{-1});
    } else {
      m.Node("Mul", {p + "q_rot", "sqrt_scale"}, {p + "q_scaled"});
      m.Node("Mul", {p + "k_t", "sqrt_scale"}, {p + "k_t_scaled"});
      m.Node("MatMul", {p + "q_scaled", p + "k_t_scaled"}, {p + "scores"});
      m.Node("Where", {"attn_mask", "f_zero", "f_ninf"}, {p + "bias"});
      m.Node("Add", {p + "scores", p + "bias"}, {p + "masked"});
      SetAttr(m.Node("Softmax", {p + "masked"}, {p + "softmax"}), "axis", int64_t{-1});
      m.Node("IsNaN", {p + "softmax"}, {p + "is_nan"});
      m.Node("Where", {p + "is_nan", "f_zero", p + "softmax"}, {probs});
    }
    m.Node("MatMul", {probs, p + "v_rep"}, {p + "attn"});
    SetAttr(m.Node("Transpose", {p + "attn"}, {p + "attn_t"}), "perm", to_heads);
    concat0({bsz, q_len, "c_hidden"}, p + "merge_shape");
    m.Node("Reshape", {p + "attn_t", p + "merge_shape"}, {p + "attn_merged"});
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

// The inputs of one case: `seq` new tokens after `past` cached ones.
std::vector<std::pair<std::string, Tensor>> CaseInputs(Form form, const Dims& d, int64_t seq, int64_t past) {
  std::uniform_int_distribution<int64_t> token(0, d.vocab - 1);
  std::vector<int64_t> ids(static_cast<size_t>(seq)), positions(ids.size());
  for (int64_t i = 0; i < seq; ++i) {
    ids[size_t(i)] = token(rng);
    positions[size_t(i)] = past + i;
  }
  std::vector<std::pair<std::string, Tensor>> in = {{"input_ids", Tensor::FromVector(ids, {1, seq})},
                                                    {"position_ids", Tensor::FromVector(positions, {1, seq})}};
  if (IsExportForm(form)) {
    in.push_back({"attention_mask", Tensor::FromVector(std::vector<int64_t>(size_t(past + seq), 1), {1, past + seq})});
    std::swap(in[1], in[2]);  // input_ids, attention_mask, position_ids
    for (int64_t l = 0; l < d.layers; ++l)
      for (const char* kv : {"key", "value"})
        in.push_back({absl::StrCat("past_key_values.", l, ".", kv), Normal({1, d.kv_heads, past, d.head_dim})});
    return in;
  }
  const bool is_static = form == Form::kStatic;
  if (is_static) {
    in.push_back({"write_indices", Int64s({past})});
    in.push_back({"nonpad_kv_seqlen", Int64s({past + seq})});
  }
  for (int64_t l = 0; l < d.layers; ++l)
    for (const char* kv : {"key_", "value_"}) {
      // The cached tokens hold random values; a static cache's free slots are zeros.
      Tensor cache = Normal({1, d.kv_heads, is_static ? d.static_cache : past, d.head_dim});
      if (is_static)
        for (int64_t h = 0; h < d.kv_heads; ++h)
          for (int64_t i = past * d.head_dim; i < d.static_cache * d.head_dim; ++i)
            cache.data<float>()[(h * d.static_cache) * d.head_dim + i] = 0.0f;
      in.push_back({absl::StrCat(is_static ? "cache_" : "past_", kv, l), std::move(cache)});
    }
  return in;
}

// Bytes of an initializer's elements (sub-byte types packed).
int64_t TensorBytes(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t dim : t.dims()) n *= dim;
  switch (DType(t.data_type())) {
    case DType::kInt4:
    case DType::kUInt4: return (n + 1) / 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return n;
    case DType::kFloat16:
    case DType::kBFloat16: return 2 * n;
    case DType::kDouble:
    case DType::kInt64: return 8 * n;
    default: return 4 * n;
  }
}

// The weight bytes of the graph, and what one token's step reads of them:
// every initializer whole, except tables only gathered by rows (the
// embedding: one row, unless something else, a tied LM head, reads it whole;
// the rotary caches: one row, as Gather, RotaryEmbedding and
// GroupQueryAttention read them).
std::pair<int64_t, int64_t> WeightBytes(const onnx::GraphProto& g) {
  std::map<std::string, bool> row_read;  // initializer -> every reader reads rows of it
  for (const auto& t : g.initializer()) row_read[t.name()] = true;
  std::map<std::string, int> readers;
  for (const auto& n : g.node())
    for (int i = 0; i < n.input_size(); ++i) {
      auto it = row_read.find(n.input(i));
      if (it == row_read.end()) continue;
      ++readers[n.input(i)];
      const std::string& op = n.op_type();
      const bool rows = (op == "Gather" && i == 0) || (op == "GatherBlockQuantized" && i == 0) ||
                        (op == "RotaryEmbedding" && (i == 1 || i == 2) && n.domain().empty()) ||
                        (op == "RotaryEmbedding" && (i == 2 || i == 3) && !n.domain().empty()) ||
                        (op == "GroupQueryAttention" && (i == 7 || i == 8));
      if (!rows) it->second = false;
    }
  int64_t total = 0, read = 0;
  for (const auto& t : g.initializer()) {
    const int64_t bytes = TensorBytes(t);
    total += bytes;
    const bool rows = row_read[t.name()] && readers[t.name()] > 0 && t.dims_size() >= 1 && t.dims(0) > 0;
    read += rows ? bytes / t.dims(0) : bytes;
  }
  return {total, read};
}

absl::Status MakeDirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create '", dir.string(), "': ", ec.message()));
  return absl::OkStatus();
}

// `to` as a hard link of `from` (a copy where links fail).
absl::Status LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::remove(to, ec);
  fs::create_hard_link(from, to, ec);
  if (!ec) return absl::OkStatus();
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot copy '", from.string(), "': ", ec.message()));
  return absl::OkStatus();
}

absl::Status WriteInputs(const fs::path& dir, const std::vector<std::pair<std::string, Tensor>>& inputs) {
  const fs::path data = dir / "test_data_set_0";
  RETURN_IF_ERROR(MakeDirs(data));
  for (size_t k = 0; k < inputs.size(); ++k)
    RETURN_IF_ERROR(WriteFileAtomically((data / absl::StrCat("input_", k, ".pb")).string(),
                                        SerializeTensorProto(inputs[k].second, inputs[k].first)));
  return absl::OkStatus();
}

// CASE/bench.json: what compare.py reads beside the timings. The KV cache
// (float32 K and V of every layer) a step must move at least: its past read
// once, and written as a new present (past + tokens rows) unless present is
// bound over past (then only the new rows).
absl::Status WriteBenchJson(const fs::path& dir, const std::string& form, const char* step, int64_t tokens,
                            int64_t past, std::pair<int64_t, int64_t> bytes, bool bind, const Dims& d) {
  const int64_t row = d.layers * 2 * d.kv_heads * d.head_dim * int64_t(sizeof(float));
  return WriteFileAtomically(
      (dir / "bench.json").string(),
      absl::StrCat("{\"form\": \"", form, "\", \"step\": \"", step, "\", \"tokens\": ", tokens, ", \"past\": ", past,
                   ", \"weight_bytes\": ", bytes.first, ", \"weight_bytes_read\": ", bytes.second,
                   ", \"cache_bytes_read\": ", past * row, ", \"cache_bytes_written\": ",
                   (bind ? tokens : past + tokens) * row, ", \"bind\": ", bind ? "true" : "false", "}\n"));
}

struct Selection {
  std::regex only{".*"};
  bool Wants(const std::string& name) const { return std::regex_search(name, only); }
};

// One form: its model once, hard-linked into the prefill and decode cases.
absl::Status WriteForm(const fs::path& out, const std::string& prefix, Form form, Quant quant, int64_t opset,
                       const Dims& d, const Weights& weights, const Selection& sel, bool bench_json) {
  const std::string pre = prefix + "_prefill", dec = prefix + "_decode";
  if (!sel.Wants(pre) && !sel.Wants(dec)) return absl::OkStatus();
  const ModelBuilder model =
      IsExportForm(form) ? BuildExportModel(form, d, weights, prefix) : BuildModel(form, quant, opset, d, weights, prefix);
  const std::string model_bytes = model.Serialize();
  const auto bytes = WeightBytes(model.graph());
  fs::path first_model;
  for (const auto& [tag, seq, past] : {std::tuple{"prefill", kPrefill, int64_t{0}}, {"decode", int64_t{1}, kPast}}) {
    const std::string name = absl::StrCat(prefix, "_", tag);
    const fs::path dir = out / name;
    RETURN_IF_ERROR(MakeDirs(dir));
    const fs::path model_path = dir / "model.onnx";
    if (first_model.empty()) {
      RETURN_IF_ERROR(WriteFileAtomically(model_path.string(), model_bytes));
      first_model = model_path;
    } else {
      RETURN_IF_ERROR(LinkOrCopy(first_model, model_path));
    }
    RETURN_IF_ERROR(WriteInputs(dir, CaseInputs(form, d, seq, past)));
    if (bench_json) RETURN_IF_ERROR(WriteBenchJson(dir, prefix, tag, seq, past, bytes, false, d));
    std::cout << "wrote " << name << " (" << model_bytes.size() / 1000000 << " MB file; a step reads "
              << bytes.second / 1000000.0 << " MB of weights)\n";
  }
  return absl::OkStatus();
}

absl::Status WriteCases(const fs::path& out, const Selection& sel) {
  const Weights weights = MakeWeights(kTiny);
  for (Form form : {Form::kAttention, Form::kStatic, Form::kDecomposed, Form::kTorchScript, Form::kSdpa}) {
    const int64_t opset = form == Form::kAttention ? 23 : form == Form::kStatic ? 24 : form == Form::kSdpa ? 18 : 17;
    RETURN_IF_ERROR(WriteForm(out, absl::StrCat("decoder_", FormName(form)), form, Quant::kFloat, opset, kTiny,
                              weights, sel, /*bench_json=*/false));
  }
  return absl::OkStatus();
}

// onnxruntime-genai's int4 CPU folder (tools/genai_model.h) at kQwen's size:
// a prefill, a decode step with a growing cache (past 512, present 513), and
// the shared-buffer step (past_present_share_buffer: the cache a max-length
// buffer, present bound over past: bench.json says "bind").
absl::Status WriteGenaiForm(const fs::path& out, const std::string& prefix, int64_t accuracy_level,
                            const Selection& sel) {
  const std::vector<std::string> tags = {"prefill", "decode", "decode_shared"};
  bool any = false;
  for (const std::string& tag : tags) any = any || sel.Wants(prefix + "_" + tag);
  if (!any) return absl::OkStatus();
  const Dims& d = kQwen;
  GenaiModelOptions o;
  o.vocab = d.vocab;
  o.hidden = d.hidden;
  o.layers = d.layers;
  o.q_heads = d.q_heads;
  o.kv_heads = d.kv_heads;
  o.intermediate = d.intermediate;
  o.context_length = d.static_cache;
  o.block_size = kBlock;
  o.accuracy_level = accuracy_level;
  const fs::path first = out / (prefix + "_" + tags[0]);
  RETURN_IF_ERROR(WriteGenaiModel(first, o));
  onnx::ModelProto proto;
  {
    std::ifstream f(first / "model.onnx", std::ios::binary);
    if (!proto.ParseFromIstream(&f)) return absl::DataLossError("cannot parse the genai model just written");
  }
  const auto bytes = WeightBytes(proto.graph());
  for (const std::string& tag : tags) {
    const fs::path dir = out / (prefix + "_" + tag);
    RETURN_IF_ERROR(MakeDirs(dir));
    if (dir != first)
      for (const char* f : {"model.onnx", "model.onnx.data", "genai_config.json"})
        RETURN_IF_ERROR(LinkOrCopy(first / f, dir / f));
    const int64_t seq = tag == "prefill" ? kPrefill : 1, past = tag == "prefill" ? 0 : kPast;
    const int64_t cache_len = tag == "decode_shared" ? d.static_cache : past;
    std::uniform_int_distribution<int64_t> token(0, d.vocab - 1);
    std::vector<int64_t> ids(static_cast<size_t>(seq));
    for (int64_t& id : ids) id = token(rng);
    std::vector<std::pair<std::string, Tensor>> in = {
        {"input_ids", Tensor::FromVector(ids, {1, seq})},
        {"attention_mask", Tensor::FromVector(std::vector<int64_t>(size_t(past + seq), 1), {1, past + seq})}};
    for (int64_t l = 0; l < d.layers; ++l)
      for (const char* kind : {"key", "value"}) {
        Tensor cache = Normal({1, d.kv_heads, cache_len, d.head_dim});
        for (int64_t h = 0; h < d.kv_heads; ++h)  // a shared buffer's free slots are zeros
          for (int64_t i = past * d.head_dim; i < cache_len * d.head_dim; ++i)
            cache.data<float>()[h * cache_len * d.head_dim + i] = 0.0f;
        in.push_back({absl::StrCat("past_key_values.", l, ".", kind), std::move(cache)});
      }
    RETURN_IF_ERROR(WriteInputs(dir, in));
    RETURN_IF_ERROR(WriteBenchJson(dir, prefix, tag == "prefill" ? "prefill" : "decode", seq, past, bytes,
                                   tag == "decode_shared", d));
    std::cout << "wrote " << dir.filename().string() << " (a step reads " << bytes.second / 1000000.0
              << " MB of weights)\n";
  }
  return absl::OkStatus();
}

// The quantized forms at kQwen's size (see Quant for each spelling).
absl::Status WriteQuantCases(const fs::path& out, const Selection& sel) {
  RETURN_IF_ERROR(WriteGenaiForm(out, "genai_int4_acc4", 4, sel));
  RETURN_IF_ERROR(WriteGenaiForm(out, "genai_int4_acc0", 0, sel));
  bool any = false;
  for (const char* p : {"tjs_q4", "tjs_q8", "qdq_int4", "f32_attention"})
    for (const char* t : {"_prefill", "_decode"}) any = any || sel.Wants(std::string(p) + t);
  if (!any) return absl::OkStatus();
  rng.seed(26);  // the same weights whichever cases --only picks
  const Weights weights = MakeWeights(kQwen);
  // transformers.js' decoders come from optimum's export (opset 14 for Llama and
  // Qwen2): attention decomposed as in the decomposed form.
  RETURN_IF_ERROR(WriteForm(out, "tjs_q4", Form::kDecomposed, Quant::kQ4, 14, kQwen, weights, sel, true));
  RETURN_IF_ERROR(WriteForm(out, "tjs_q8", Form::kDecomposed, Quant::kQ8, 14, kQwen, weights, sel, true));
  // The standard spelling; the rest as the attention form (opset 23).
  RETURN_IF_ERROR(WriteForm(out, "qdq_int4", Form::kAttention, Quant::kQdq4, 23, kQwen, weights, sel, true));
  // The same weights in float32, for reference (a 622 MB file).
  return WriteForm(out, "f32_attention", Form::kAttention, Quant::kFloat, 23, kQwen, weights, sel, true);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  bool quant = false;
  Selection sel;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quant") {
      quant = true;
    } else if (arg == "--only" && i + 1 < argc) {
      sel.only = std::regex(argv[++i]);
    } else if (arg[0] != '-' && dir.empty()) {  // a flag (--help) is not a folder to write into
      dir = arg;
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::cerr << "usage: bench-decoder OUT_DIR [--quant] [--only REGEX]\n"
                 "  --quant: the quantized forms at the realistic size (genai_int4_acc4, genai_int4_acc0,\n"
                 "           tjs_q4, tjs_q8, qdq_int4; f32_attention for reference) instead of the tiny float forms\n"
                 "  --only: only the cases whose name matches REGEX\n";
    return 2;
  }
  absl::Status s = quant ? WriteQuantCases(dir, sel) : WriteCases(dir, sel);
  if (!s.ok()) {
    std::cerr << "bench-decoder: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
