// ops/nn/rnn.cc: RNN, GRU and LSTM against a plain per-element evaluation of
// the ONNX equations written here (double), on both kernels (fast and
// reference), across directions, layouts, activations, sequence_lens,
// initial states, peepholes, clip, linear_before_reset, input_forget, dtypes
// and requested outputs; hand-computed values; the rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/nn/rnn.h"
#include "runtime/element.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void SetFloats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : v) a->add_floats(f);
}
void SetStrings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& s : v) a->add_strings(s);
}

// Restores the fast kernel after a test that forced the reference.
struct ReferenceScope {
  explicit ReferenceScope(bool on) { SetRnnReferenceKernel(on); }
  ~ReferenceScope() { SetRnnReferenceKernel(false); }
};

struct Act {
  std::string name;
  double alpha = 0, beta = 0;  // used only by the functions that take them
};

double Apply(const Act& a, double x) {
  if (a.name == "Relu") return std::max(0.0, x);
  if (a.name == "Tanh") return std::tanh(x);
  if (a.name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (a.name == "Affine") return a.alpha * x + a.beta;
  if (a.name == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (a.name == "ThresholdedRelu") return x >= a.alpha ? x : 0;
  if (a.name == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (a.name == "HardSigmoid") return std::min(1.0, std::max(0.0, a.alpha * x + a.beta));
  if (a.name == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  if (a.name == "Softsign") return x / (1 + std::abs(x));
  if (a.name == "Softplus") return std::log(1 + std::exp(x));
  ADD_FAILURE() << "unknown activation " << a.name;
  return 0;
}
bool HasAlpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool HasBeta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }

struct Spec {
  std::string op = "LSTM";
  int64_t opset = 22;
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t S = 3, B = 2, I = 3, H = 4;
  std::vector<Act> acts;  // empty: the defaults; else per direction in order
  float clip = 0;         // 0: none
  bool lbr = false, input_forget = false;
  bool bias = true, lens = false, h0 = false, c0 = false, peep = false;
  std::vector<int32_t> len_values;
  DType dtype = DType::kFloat;
  std::vector<bool> want = {true, true, true};  // Y, Y_h, Y_c requested
  int threads = 0;
  size_t memory_limit = 0;  // the session's (0: the default)
  bool constant_weights = false;  // W and R initializers (the op prepares them transposed)
};

int64_t Gates(const std::string& op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

struct Inputs {
  Tensor X, W, R, Bias, lens, h0, c0, P;
};

Inputs MakeInputs(const Spec& s, uint32_t seed) {
  const int64_t D = s.direction == "bidirectional" ? 2 : 1, G = Gates(s.op);
  Inputs in;
  in.X = RandomUniform(s.dtype, s.layout ? Shape{s.B, s.S, s.I} : Shape{s.S, s.B, s.I}, seed, -1, 1);
  in.W = RandomUniform(s.dtype, {D, G * s.H, s.I}, seed + 1, -0.6, 0.6);
  in.R = RandomUniform(s.dtype, {D, G * s.H, s.H}, seed + 2, -0.6, 0.6);
  if (s.bias) in.Bias = RandomUniform(s.dtype, {D, 2 * G * s.H}, seed + 3, -0.5, 0.5);
  if (s.lens) in.lens = Tensor::FromVector(s.len_values, {s.B});
  const Shape state = s.layout ? Shape{s.B, D, s.H} : Shape{D, s.B, s.H};
  if (s.h0) in.h0 = RandomUniform(s.dtype, state, seed + 4, -1, 1);
  if (s.c0) in.c0 = RandomUniform(s.dtype, state, seed + 5, -1, 1);
  if (s.peep) in.P = RandomUniform(s.dtype, {D, 3 * s.H}, seed + 6, -0.5, 0.5);
  return in;
}

// The ONNX equations, element by element, in double. Y in the node's layout.
void Expected(const Spec& s, const Inputs& in, std::vector<double>& Y, std::vector<double>& Yh,
              std::vector<double>& Yc) {
  const int64_t D = s.direction == "bidirectional" ? 2 : 1, G = Gates(s.op);
  const int64_t S = s.S, B = s.B, I = s.I, H = s.H;
  const int count = s.op == "RNN" ? 1 : s.op == "GRU" ? 2 : 3;
  std::vector<Act> acts = s.acts;
  if (acts.empty()) {
    for (int64_t d = 0; d < D; ++d) {
      if (s.op == "RNN") acts.push_back({"Tanh"});
      else if (s.op == "GRU") acts.insert(acts.end(), {{"Sigmoid"}, {"Tanh"}});
      else acts.insert(acts.end(), {{"Sigmoid"}, {"Tanh"}, {"Tanh"}});
    }
  }
  const auto x = [&](int64_t t, int64_t b, int64_t i) {
    return GetDouble(in.X, s.layout ? (b * S + t) * I + i : (t * B + b) * I + i);
  };
  const auto st = [&](int64_t d, int64_t b, int64_t j) { return s.layout ? (b * D + d) * H + j : (d * B + b) * H + j; };
  const auto w = [&](int64_t d, int64_t row, int64_t i) { return GetDouble(in.W, (d * G * H + row) * I + i); };
  const auto r = [&](int64_t d, int64_t row, int64_t k) { return GetDouble(in.R, (d * G * H + row) * H + k); };
  const auto wb = [&](int64_t d, int64_t row) { return s.bias ? GetDouble(in.Bias, d * 2 * G * H + row) : 0.0; };
  const auto rb = [&](int64_t d, int64_t row) { return s.bias ? GetDouble(in.Bias, d * 2 * G * H + G * H + row) : 0.0; };
  const auto p = [&](int64_t d, int64_t k) { return s.peep ? GetDouble(in.P, d * 3 * H + k) : 0.0; };
  const auto clip = [&](double v) { return s.clip > 0 ? std::min<double>(s.clip, std::max<double>(-s.clip, v)) : v; };
  Y.assign(size_t(S * D * B * H), 0.0);
  Yh.assign(size_t(D * B * H), 0.0);
  Yc.assign(size_t(D * B * H), 0.0);
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = d == 1 || s.direction == "reverse";
    const Act* a = &acts[size_t(d * count)];
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = s.lens ? s.len_values[size_t(b)] : S;
      std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        h[size_t(j)] = s.h0 ? GetDouble(in.h0, st(d, b, j)) : 0;
        c[size_t(j)] = s.c0 ? GetDouble(in.c0, st(d, b, j)) : 0;
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = rev ? len - 1 - step : step;
        // The input and recurrent sums of gate g, unit j (without biases).
        const auto xs = [&](int64_t g, int64_t j) {
          double v = 0;
          for (int64_t i = 0; i < I; ++i) v += x(t, b, i) * w(d, g * H + j, i);
          return v;
        };
        const auto hs = [&](int64_t g, int64_t j, const std::vector<double>& hv) {
          double v = 0;
          for (int64_t k = 0; k < H; ++k) v += hv[size_t(k)] * r(d, g * H + j, k);
          return v;
        };
        const auto full = [&](int64_t g, int64_t j) { return xs(g, j) + hs(g, j, h) + wb(d, g * H + j) + rb(d, g * H + j); };
        std::vector<double> hn(static_cast<size_t>(H)), cn = c;
        if (s.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) hn[size_t(j)] = Apply(a[0], clip(full(0, j)));
        } else if (s.op == "GRU") {
          std::vector<double> rg(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
          for (int64_t k = 0; k < H; ++k) {
            rg[size_t(k)] = Apply(a[0], clip(full(1, k)));
            rh[size_t(k)] = rg[size_t(k)] * h[size_t(k)];
          }
          for (int64_t j = 0; j < H; ++j) {
            const double z = Apply(a[0], clip(full(0, j)));
            const double pre = s.lbr ? xs(2, j) + wb(d, 2 * H + j) + rg[size_t(j)] * (hs(2, j, h) + rb(d, 2 * H + j))
                                     : xs(2, j) + hs(2, j, rh) + rb(d, 2 * H + j) + wb(d, 2 * H + j);
            hn[size_t(j)] = (1 - z) * Apply(a[1], clip(pre)) + z * h[size_t(j)];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double cp = c[size_t(j)];
            const double ig = Apply(a[0], clip(full(0, j) + p(d, j) * cp));
            const double fg = s.input_forget ? 1 - ig : Apply(a[0], clip(full(2, j) + p(d, 2 * H + j) * cp));
            const double cg = Apply(a[1], clip(full(3, j)));
            cn[size_t(j)] = fg * cp + ig * cg;
            const double og = Apply(a[0], clip(full(1, j) + p(d, H + j) * cn[size_t(j)]));
            hn[size_t(j)] = og * Apply(a[2], cn[size_t(j)]);
          }
        }
        h = hn;
        c = cn;
        for (int64_t j = 0; j < H; ++j)
          Y[size_t(s.layout ? ((b * S + t) * D + d) * H + j : ((t * D + d) * B + b) * H + j)] = h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh[size_t(st(d, b, j))] = h[size_t(j)];
        Yc[size_t(st(d, b, j))] = c[size_t(j)];
      }
    }
  }
}

absl::StatusOr<std::vector<Tensor>> RunSpec(const Spec& s, const Inputs& in) {
  OpTester t;
  t.op = s.op;
  t.opset = s.opset;
  t.threads = s.threads;
  t.memory_limit = s.memory_limit;
  t.inputs = {in.X, in.W, in.R, in.Bias, in.lens, in.h0};
  if (s.op == "LSTM") t.inputs.insert(t.inputs.end(), {in.c0, in.P});
  while (!t.inputs.back().defined()) t.inputs.pop_back();
  if (s.constant_weights) t.constant = {false, true, true};
  const size_t outs = s.op == "LSTM" ? 3 : 2;
  for (size_t o = 0; o < outs; ++o) t.output_names.push_back(s.want[o] ? "out" + std::to_string(o) : "");
  t.attrs = [&](onnx::NodeProto& n) {
    SetAttr(n, "hidden_size", s.H);
    if (s.direction != "forward") SetAttr(n, "direction", s.direction);
    if (s.layout) SetAttr(n, "layout", s.layout);
    if (s.clip > 0) SetAttr(n, "clip", s.clip);
    if (s.lbr) SetAttr(n, "linear_before_reset", int64_t(1));
    if (s.input_forget) SetAttr(n, "input_forget", int64_t(1));
    if (!s.acts.empty()) {
      std::vector<std::string> names;
      std::vector<float> alphas, betas;
      for (const Act& a : s.acts) {
        names.push_back(a.name);
        if (HasAlpha(a.name)) alphas.push_back(float(a.alpha));
        if (HasBeta(a.name)) betas.push_back(float(a.beta));
      }
      SetStrings(n, "activations", names);
      if (!alphas.empty()) SetFloats(n, "activation_alpha", alphas);
      if (!betas.empty()) SetFloats(n, "activation_beta", betas);
    }
  };
  return t.Run();
}

double Tolerance(DType d) {
  switch (d) {
    case DType::kDouble: return 1e-10;
    case DType::kFloat: return 2e-5;
    case DType::kFloat16: return 4e-3;
    default: return 3e-2;
  }
}

// Runs the spec on both kernels and checks every requested output.
void Check(const Spec& s, uint32_t seed) {
  SCOPED_TRACE(absl::StrCat(s.op, "-", s.opset, " ", s.direction, " layout ", s.layout, " ", LowerName(s.dtype),
                            " S", s.S, " B", s.B, " I", s.I, " H", s.H, " clip ", s.clip, " lbr ", s.lbr, " if ",
                            s.input_forget, " lens ", s.lens, " seed ", seed));
  const Inputs in = MakeInputs(s, seed);
  std::vector<double> Y, Yh, Yc;
  Expected(s, in, Y, Yh, Yc);
  const std::vector<double>* want[] = {&Y, &Yh, &Yc};
  for (bool reference : {false, true}) {
    ReferenceScope scope(reference);
    absl::StatusOr<std::vector<Tensor>> out = RunSpec(s, in);
    ASSERT_TRUE(out.ok()) << out.status();
    size_t k = 0;
    for (size_t o = 0; o < s.want.size() && o < (s.op == "LSTM" ? 3u : 2u); ++o) {
      if (!s.want[o]) continue;
      const Tensor& got = (*out)[k++];
      ASSERT_EQ(got.dtype(), s.dtype);
      ASSERT_EQ(size_t(got.size()), want[o]->size()) << "output " << o;
      for (int64_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(GetDouble(got, i), (*want[o])[size_t(i)], Tolerance(s.dtype) * (1 + std::abs((*want[o])[size_t(i)])))
            << "output " << o << " element " << i << (reference ? " (reference)" : " (fast)");
    }
  }
}

TEST(Rnn, HandComputedRelu) {
  // h1 = relu(2*1 + 1) = 3; h2 = relu(2*2 + 0.5*3 + 1) = 6.5.
  auto out = RunNode(14, "RNN", {F({1, 2}, {2, 1, 1}), F({2}, {1, 1, 1}), F({0.5f}, {1, 1, 1}), F({1, 0}, {1, 2})}, 2,
                     [](onnx::NodeProto& n) {
                       SetAttr(n, "hidden_size", int64_t(1));
                       SetStrings(n, "activations", {"Relu"});
                     });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0]), ElementsAre(3, 6.5));
  EXPECT_EQ((*out)[0].shape(), Shape({2, 1, 1, 1}));
  EXPECT_THAT(Values((*out)[1]), ElementsAre(6.5));
}

TEST(Rnn, EveryKindDirectionLayoutAndState) {
  uint32_t seed = 1;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1})
        for (bool states : {false, true}) {
          Spec s;
          s.op = op;
          s.direction = dir;
          s.layout = layout;
          s.h0 = s.c0 = states;
          s.bias = !states;
          s.peep = states;
          Check(s, seed++);
        }
}

TEST(Rnn, AtSileroVadSizes) {
  // 64 inputs and hidden units (silero VAD's LSTM): the steps' products on
  // the GEMV for up to 4 rows and oneDNN past them, LSTM's default
  // activations vectorized over rows; with and without states, both
  // directions, W and R constant (prepared transposed) or inputs; GRU (both
  // forms) and RNN too.
  uint32_t seed = 100;
  for (int64_t batch : {1, 3, 5})
    for (const char* dir : {"forward", "bidirectional"})
      for (bool states : {false, true})
        for (const char* op : {"LSTM", "GRU", "RNN"}) {
          Spec s;
          s.op = op;
          s.lbr = states;
          s.constant_weights = !states || batch == 3;
          s.S = 3;
          s.B = batch;
          s.I = s.H = 64;
          s.direction = dir;
          s.h0 = s.c0 = states;
          Check(s, seed++);
        }
}

TEST(Rnn, SequenceLensZeroPadAndKeepTheLastValidState) {
  uint32_t seed = 100;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1}) {
        Spec s;
        s.op = op;
        s.direction = dir;
        s.layout = layout;
        s.S = 4;
        s.B = 4;
        s.lens = true;
        s.len_values = {4, 1, 0, 3};
        s.h0 = s.c0 = true;
        Check(s, seed++);
      }
  // Y rows past the length are zeros; Y_h is the state after the last valid step.
  Spec s;
  s.op = "RNN";
  s.S = 3, s.B = 2, s.I = 1, s.H = 1;
  s.lens = true;
  s.len_values = {1, 3};
  const Inputs in = MakeInputs(s, 7);
  auto out = RunSpec(s, in);
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];  // [3, 1, 2, 1]
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  EXPECT_EQ(y.data<float>()[4], 0.0f);
  EXPECT_EQ((*out)[1].data<float>()[0], y.data<float>()[0]);
  EXPECT_EQ((*out)[1].data<float>()[1], y.data<float>()[5]);
}

TEST(Rnn, EveryActivationWithAlphaAndBeta) {
  const std::vector<Act> all = {{"Relu"},          {"Tanh"},          {"Sigmoid"},           {"Affine", 0.7, -0.2},
                                {"LeakyRelu", 0.3}, {"ThresholdedRelu", 0.1}, {"ScaledTanh", 1.3, 0.8},
                                {"HardSigmoid", 0.3, 0.4}, {"Elu", 0.9}, {"Softsign"}, {"Softplus"}};
  uint32_t seed = 200;
  for (size_t k = 0; k < all.size(); ++k) {
    for (const char* op : {"RNN", "GRU", "LSTM"}) {
      Spec s;
      s.op = op;
      s.direction = "bidirectional";
      const int count = s.op == "RNN" ? 1 : s.op == "GRU" ? 2 : 3;
      for (int i = 0; i < 2 * count; ++i) s.acts.push_back(all[(k + size_t(i) * 3) % all.size()]);
      Check(s, seed++);
    }
  }
  // Lower case names are accepted; one set serves both directions.
  Spec s;
  s.op = "GRU";
  s.direction = "bidirectional";
  const Inputs in = MakeInputs(s, 9);
  OpTester t;
  t.op = "GRU";
  t.opset = 22;
  t.inputs = {in.X, in.W, in.R, in.Bias};
  t.outputs = 2;
  t.attrs = [](onnx::NodeProto& n) {
    SetAttr(n, "hidden_size", int64_t(4));
    SetAttr(n, "direction", std::string("bidirectional"));
    SetStrings(n, "activations", {"sigmoid", "tanh"});
  };
  auto got = t.Run();
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<double> Y, Yh, Yc;
  Expected(s, in, Y, Yh, Yc);
  for (int64_t i = 0; i < (*got)[1].size(); ++i) EXPECT_NEAR(GetDouble((*got)[1], i), Yh[size_t(i)], 2e-5);
}

TEST(Rnn, ClipLinearBeforeResetInputForgetPeepholes) {
  uint32_t seed = 300;
  for (const char* dir : {"forward", "bidirectional"})
    for (float clip : {0.0f, 0.4f}) {
      for (bool lbr : {false, true}) {
        Spec s;
        s.op = "GRU";
        s.direction = dir;
        s.clip = clip;
        s.lbr = lbr;
        s.h0 = true;
        Check(s, seed++);
      }
      for (bool input_forget : {false, true}) {
        Spec s;
        s.direction = dir;
        s.clip = clip;
        s.input_forget = input_forget;
        s.peep = s.h0 = s.c0 = true;
        Check(s, seed++);
      }
      Spec s;
      s.op = "RNN";
      s.direction = dir;
      s.clip = clip;
      Check(s, seed++);
    }
}

TEST(Rnn, DtypesOpsetsAndOddSizes) {
  uint32_t seed = 400;
  struct V {
    int64_t opset;
    DType dtype;
  };
  for (const V v : {V{7, DType::kDouble}, V{14, DType::kFloat16}, V{1, DType::kFloat}, V{22, DType::kBFloat16},
                    V{22, DType::kDouble}, V{22, DType::kFloat16}})
    for (const char* op : {"RNN", "GRU", "LSTM"}) {
      if (v.opset == 1 && std::string(op) == "GRU") continue;  // GRU-1: tested at 3 below
      Spec s;
      s.op = op;
      s.opset = v.opset;
      s.dtype = v.dtype;
      s.direction = "bidirectional";
      s.S = 5, s.B = 3, s.I = 7, s.H = 9;
      s.layout = v.opset >= 14 ? 1 : 0;
      s.lbr = true;
      s.h0 = s.c0 = s.peep = true;
      Check(s, seed++);
    }
  Spec s;
  s.op = "GRU";
  s.opset = 3;
  Check(s, seed++);
  // Sizes oneDNN blocks differently: wide input, one unit, many rows.
  for (const auto& [S, B, I, H] : std::vector<std::array<int64_t, 4>>{{1, 1, 1, 1}, {2, 17, 33, 1}, {6, 1, 64, 31}}) {
    for (const char* op : {"RNN", "GRU", "LSTM"}) {
      Spec t;
      t.op = op;
      t.S = S, t.B = B, t.I = I, t.H = H;
      t.h0 = t.c0 = true;
      Check(t, seed++);
    }
  }
}

TEST(Rnn, LargeStepsRunThreaded) {
  // Batch 16 x hidden 256: each step's GEMM and gate loop run on two threads.
  uint32_t seed = 600;
  for (const char* op : {"GRU", "LSTM"}) {
    Spec s;
    s.op = op;
    s.S = 2, s.B = 16, s.I = 8, s.H = 256;
    s.threads = 2;
    s.lens = true;
    s.len_values = std::vector<int32_t>(16, 2);
    s.len_values[3] = 1;
    Check(s, seed++);
  }
}

TEST(Rnn, SmallStepsGiveTheSameValuesOnOneAndTwoThreads) {
  // silero VAD's LSTM: one step of batch 1, hidden 64 and 128 (its input
  // projection and gates stay on the caller at 2 threads by the size rule).
  uint32_t seed = 650;
  for (int64_t h : {64, 128})
    for (int threads : {1, 2}) {
      Spec s;
      s.S = 1, s.B = 1, s.I = h, s.H = h;
      s.h0 = s.c0 = true;
      s.threads = threads;
      Check(s, seed);
    }
}

TEST(Rnn, EveryOutputSubset) {
  uint32_t seed = 500;
  for (int mask = 0; mask < 8; ++mask) {
    Spec s;
    s.want = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    s.direction = "reverse";
    s.c0 = true;
    Check(s, seed++);
  }
  for (int mask = 0; mask < 4; ++mask) {
    Spec s;
    s.op = "GRU";
    s.want = {(mask & 1) != 0, (mask & 2) != 0};
    Check(s, seed++);
  }
}

TEST(Rnn, EmptySequenceBatchAndInput) {
  // No steps: Y is empty and the final states are the initial ones.
  Spec s;
  s.S = 0;
  s.h0 = s.c0 = true;
  const Inputs in = MakeInputs(s, 11);
  auto out = RunSpec(s, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, 1, 2, 4}));
  EXPECT_EQ(Values((*out)[1]), Values(in.h0));
  EXPECT_EQ(Values((*out)[2]), Values(in.c0));
  for (const auto& [S, B, I] : std::vector<std::array<int64_t, 3>>{{3, 0, 2}, {3, 2, 0}}) {
    Spec e;
    e.op = "GRU";
    e.S = S, e.B = B, e.I = I;
    Check(e, 12);
  }
}

TEST(Rnn, DynamicShapesPlanAtEveryRun) {
  // X's sequence and batch dims are symbolic: each run infers and plans on its own shapes.
  Spec s;
  s.op = "GRU";
  s.direction = "bidirectional";
  s.bias = false;
  const Inputs first = MakeInputs(s, 21);
  ModelBuilder m(22);
  m.Input("X", DType::kFloat, {-1, -1, s.I});
  m.Initializer("W", first.W);
  m.Initializer("R", first.R);
  m.Output("Y", DType::kFloat, {}, false);
  onnx::NodeProto& n = m.Node("GRU", {"X", "W", "R"}, {"Y"});
  SetAttr(n, "hidden_size", s.H);
  SetAttr(n, "direction", std::string("bidirectional"));
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  for (const auto& [S, B] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {5, 1}}) {
    Spec t = s;
    t.S = S, t.B = B;
    Inputs in = MakeInputs(t, 21);  // same W and R (same seeds)
    std::vector<double> Y, Yh, Yc;
    Expected(t, in, Y, Yh, Yc);
    std::vector<Tensor> out;
    ASSERT_TRUE((*session)->Run({{"X", in.X}}, &out).ok());
    ASSERT_EQ(out[0].shape(), Shape({S, 2, B, s.H}));
    for (int64_t i = 0; i < out[0].size(); ++i) ASSERT_NEAR(out[0].data<float>()[i], Y[size_t(i)], 2e-5);
  }
}

TEST(Rnn, Rules) {
  Spec s;
  const Inputs in = MakeInputs(s, 13);
  const auto run = [&](const std::function<void(onnx::NodeProto&)>& attrs, std::vector<Tensor> inputs) {
    OpTester t;
    t.op = "LSTM";
    t.opset = 22;
    t.inputs = std::move(inputs);
    t.outputs = 2;
    t.attrs = attrs;
    return t.Run().status();
  };
  const std::vector<Tensor> base = {in.X, in.W, in.R};
  EXPECT_THAT(Message(run([](onnx::NodeProto& n) { SetAttr(n, "direction", std::string("both")); }, base)),
              HasSubstr("direction 'both' is not forward, reverse or bidirectional"));
  EXPECT_THAT(Message(run([](onnx::NodeProto& n) { SetStrings(n, "activations", {"Sigmoid", "Tanh"}); }, base)),
              HasSubstr("2 activations given, LSTM needs 3 per direction"));
  EXPECT_THAT(Message(run([](onnx::NodeProto& n) { SetStrings(n, "activations", {"Sigmoid", "Tanh", "Swish"}); }, base)),
              HasSubstr("activation 'Swish' is not one of"));
  EXPECT_THAT(Message(run([](onnx::NodeProto& n) { SetAttr(n, "hidden_size", int64_t(5)); }, base)),
              HasSubstr("hidden_size 5 differs from R [1,16,4]"));
  EXPECT_THAT(Message(run([](onnx::NodeProto& n) { SetAttr(n, "layout", int64_t(2)); }, base)),
              HasSubstr("layout 2 is not 0 or 1"));
  EXPECT_THAT(Message(run({}, {in.X, RandomUniform(DType::kFloat, {1, 16, 2}, 1), in.R})),
              HasSubstr("W has shape [1,16,2], expected [1,16,3]"));
  EXPECT_THAT(Message(run({}, {in.X, in.W, in.R, Tensor(), Tensor::FromVector<int32_t>({3, 4}, {2})})),
              HasSubstr("sequence_lens[1] = 4 is outside [0, 3]"));
  EXPECT_THAT(Message(run({}, {in.X, in.W, in.R, Tensor(), Tensor::FromVector<int32_t>({-1, 1}, {2})})),
              HasSubstr("sequence_lens[0] = -1 is outside [0, 3]"));
  EXPECT_THAT(Message(run({}, {in.X, in.W, in.R, Tensor(), Tensor(), RandomUniform(DType::kFloat, {2, 1, 4}, 1)})),
              HasSubstr("initial_h has shape [2,1,4], expected [1,2,4]"));
  EXPECT_THAT(Message(run({}, {F({1}, {1, 1}), in.W, in.R})), HasSubstr("X, W and R must be 3-D"));
  EXPECT_THAT(Message(run({}, {in.X, Tensor::Zeros(DType::kFloat, {1, 0, 3}), Tensor::Zeros(DType::kFloat, {1, 0, int64_t(1) << 62})})),
              HasSubstr("hidden size 4611686018427387904 of R [1,0,4611686018427387904] is too large"));
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// Item 5 of issue #23: the gate buffers (every step's input projection, the
// state, the step's gates) and the inputs widened to the compute type count
// against the session's memory budget, checked before they are allocated.
TEST(Rnn, GateBuffersCountAgainstTheMemoryLimit) {
  uint32_t seed = 900;
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    for (DType dtype : {DType::kFloat, DType::kFloat16}) {
      SCOPED_TRACE(absl::StrCat(op, " ", LowerName(dtype)));
      Spec s;
      s.op = op;
      s.dtype = dtype;
      s.B = 4, s.I = 8, s.H = 64;
      const auto sizes = [&](const Spec& x, size_t& y, size_t& xw) {
        y = size_t(x.S * x.B * x.H) * StorageBytes(dtype, 1);  // Y, allocated first
        xw = size_t(x.S * x.B * x.H * Gates(op)) * sizeof(float);
      };
      Spec over = s;
      over.S = 256;
      size_t y, xw;
      sizes(over, y, xw);
      over.memory_limit = y + xw / 2;  // Y fits, the projection of every step does not
      const absl::StatusOr<std::vector<Tensor>> out = RunSpec(over, MakeInputs(over, seed));
      ASSERT_FALSE(out.ok());
      EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << out.status();
      EXPECT_THAT(std::string(out.status().message()), ::testing::HasSubstr(std::string(op) + " node '" + op + "_1'"));
      EXPECT_THAT(std::string(out.status().message()),
                  ::testing::HasSubstr(absl::StrCat("exceed the session's memory limit of ", over.memory_limit, " bytes")));
      // Room for the buffers (and the widened inputs): the right values
      // (over fewer steps: the reference's tolerance is for short sequences).
      s.S = 2;
      sizes(s, y, xw);
      s.memory_limit = 2 * (y + xw) + (size_t(1) << 18);  // W and R widened: 72 KiB
      Check(s, seed++);
    }
  }
}

}  // namespace
}  // namespace onnx_mini

namespace onnx_mini {
namespace {

// A sequence of 2^22 steps runs for a long while inside one node: the run's
// deadline stops it between steps (RunOptions, issue #23).
TEST(Rnn, ALongSequenceStopsAtTheRunsDeadline) {
  ModelBuilder m(14);
  m.Input("X", DType::kFloat, {-1, 1, 1}).Input("W", DType::kFloat, {1, 1, 1}).Input("R", DType::kFloat, {1, 1, 1});
  m.Output("Y", DType::kFloat, {-1, 1, 1, 1});
  SetAttr(m.Node("RNN", {"X", "W", "R"}, {"Y"}), "hidden_size", int64_t(1));
  auto session = m.Build();
  ASSERT_TRUE(session.ok()) << session.status();
  const Tensor w = Tensor::FromVector<float>({0.5f}, {1, 1, 1});
  RunOptions options;
  options.timeout_ms = 5;
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run(
      {{"X", Tensor::Zeros(DType::kFloat, {int64_t(1) << 22, 1, 1})}, {"W", w}, {"R", w}}, &out, options);
  EXPECT_TRUE(absl::IsDeadlineExceeded(st)) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("deadline of 5 ms exceeded at RNN node"));
  // The session runs again: tanh(0.5 * 1 + 0.5 * 0) for one step of x = 1.
  out.clear();
  ASSERT_TRUE((*session)->Run({{"X", Tensor::FromVector<float>({1.0f}, {1, 1, 1})}, {"W", w}, {"R", w}}, &out,
                              options).ok());
  EXPECT_NEAR(out[0].data<float>()[0], std::tanh(0.5f), 1e-6);
}

}  // namespace
}  // namespace onnx_mini
