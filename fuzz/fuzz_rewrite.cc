// libFuzzer target: the graph rewrites (runtime/rewrite/rewrite.h) against the graph
// as written. The bytes choose a small model of a rewritten pattern or a near
// miss (forms, constants, declared dims known or not, broadcast shapes, masks
// with fully masked rows, readers of inner values) and the inputs of two runs
// whose shapes may differ; the model runs with rewrites on and off, one
// session each way. Both must fail, or both succeed with the same outputs
// (within a tolerance for the fused kernels' rounding; NaN equal to NaN).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "runtime/element.h"
#include "tools/model_builder.h"

namespace onnx_mini {
namespace {

// Choices read from the fuzz bytes; zeros once they run out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }
  int64_t Pick(int64_t n) { return int64_t(Next() % uint64_t(n)); }
  bool Flag() { return Next() & 1; }
  // A float of a few bits: small values, and now and then -inf.
  float Value() {
    const uint8_t b = Next();
    if (b == 255) return -std::numeric_limits<float>::infinity();
    return float(int(b) - 128) / 32;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

Tensor FloatTensor(Bytes& in, const Shape& shape, bool allow_inf = false) {
  Tensor t = Tensor::Zeros(DType::kFloat, shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    float v = in.Value();
    if (std::isinf(v) && !allow_inf) v = 1;
    t.data<float>()[i] = v;
  }
  return t;
}
Tensor Scalar(float v, Shape shape = {}) { return Tensor::FromVector(std::vector<float>{v}, shape); }
Tensor Ints(std::vector<int64_t> v) { return Tensor::FromVector(v, {int64_t(v.size())}); }

struct Case {
  ModelBuilder model{17};
  // Per run: the inputs (shapes drawn per run where the dims are unknown).
  std::vector<std::vector<NamedTensor>> runs;
};

// Scaled dot-product attention: Q [qb, qh, s, D] against K, V [kb, kv, t, .]
// repeated G times (or not), scaled, masked by Where or Add or not, Softmax;
// then the export spellings (split scale, IsNaN guard, run-time repeat
// shapes or Tile, HF's finite mask values, HF's mask sliced to K's length).
void Attention(Bytes& in, Case& c) {
  ModelBuilder& m = c.model;
  const int64_t kv = 1 + in.Pick(2), groups = 1 + in.Pick(2), d = 1 + in.Pick(4), dv = 1 + in.Pick(3);
  const bool repeat = in.Flag();
  const int64_t heads = repeat ? kv * groups : kv;
  const int scale = int(in.Pick(4)), mask = int(in.Pick(3));
  const float fills[] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::lowest(), -1e30f,
                         -1e4f};
  const float fill = fills[in.Pick(4)];
  const bool known = in.Flag();
  m.Input("q", DType::kFloat, {-1, known ? heads : -1, -1, d});
  m.Input("k", DType::kFloat, {-1, kv, -1, d}).Input("v", DType::kFloat, {-1, kv, -1, dv});
  if (mask) m.Input("mask", mask == 1 ? DType::kBool : DType::kFloat, {-1, -1, -1, -1});
  m.Output("y", DType::kFloat, {-1, -1, -1, dv}, false);
  std::string k = "k", v = "v";
  if (repeat) {
    m.Initializer("axis", Ints({2})).Initializer("expand", Ints({1, 1, groups, 1, 1}));
    for (const auto& [name, size] : {std::pair{std::string("k"), d}, {std::string("v"), dv}}) {
      m.Initializer(name + "_shape", Ints({0, heads, -1, size}));
      m.Node("Unsqueeze", {name, "axis"}, {name + "5"});
      m.Node("Expand", {name + "5", "expand"}, {name + "x"});
      m.Node("Reshape", {name + "x", name + "_shape"}, {name + "r"});
    }
    k = "kr";
    v = "vr";
  }
  SetAttr(m.Node("Transpose", {k}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.Node("MatMul", {"q", "kt"}, {"scores"});
  std::string z = "scores";
  if (scale) {
    m.Initializer("c", Scalar(scale == 1 ? 2.0f : 0.5f));
    if (scale == 1) m.Node("Div", {z, "c"}, {"scaled"});
    else if (scale == 2) m.Node("Mul", {z, "c"}, {"scaled"});
    else m.Node("Mul", {"c", z}, {"scaled"});
    z = "scaled";
  }
  if (in.Pick(8) == 0) m.Output(z, DType::kFloat, {}, false);  // a near miss: an inner value read elsewhere
  if (mask == 1) {
    m.Initializer("fill", Scalar(fill));
    m.Node("Where", {"mask", z, "fill"}, {"masked"});
    z = "masked";
  } else if (mask == 2) {
    if (in.Flag()) m.Node("Add", {z, "mask"}, {"masked"});
    else m.Node("Add", {"mask", z}, {"masked"});
    z = "masked";
  }
  SetAttr(m.Node("Softmax", {z}, {"probs"}), "axis", in.Pick(6) == 0 ? int64_t{2} : int64_t{-1});
  m.Node("MatMul", {"probs", v}, {"y"});
  for (int run = 0; run < 2; ++run) {
    const int64_t b = 1 + in.Pick(2), s = 1 + in.Pick(3), t = 1 + in.Pick(4);
    // Batch, heads or lengths of 1 where the pattern broadcasts them.
    const int64_t qb = in.Flag() ? 1 : b, kb = in.Flag() ? 1 : b, qh = in.Pick(4) == 0 ? 1 : heads;
    const int64_t kt = in.Pick(6) == 0 ? 1 : t;
    std::vector<NamedTensor> feeds = {{"q", FloatTensor(in, {qb, qh, s, d})},
                                      {"k", FloatTensor(in, {kb, kv, kt, d})},
                                      {"v", FloatTensor(in, {kb, kv, t, dv})}};
    if (mask) {
      const Shape ms = {in.Flag() ? 1 : b, in.Flag() ? 1 : heads, in.Flag() ? 1 : s, in.Pick(5) == 0 ? 1 : t};
      if (mask == 1) {
        Tensor bits = Tensor::Zeros(DType::kBool, ms);
        for (int64_t i = 0; i < bits.size(); ++i) bits.data<bool>()[i] = in.Pick(3) != 0;
        feeds.push_back({"mask", bits});
      } else {
        feeds.push_back({"mask", FloatTensor(in, ms, true)});
      }
    }
    c.runs.push_back(std::move(feeds));
  }
  // The export spellings, from the bytes after the runs' (none once they run
  // out: older cases stay what they were), by rewiring the model above.
  onnx::GraphProto& g = m.graph();
  const auto node_making = [&](const std::string& out) -> onnx::NodeProto& {
    for (onnx::NodeProto& n : *g.mutable_node())
      if (n.output(0) == out) return n;
    __builtin_trap();
  };
  const float constants[] = {0.5f, 2.0f, -1.5f};
  // The scale split over Q and Kᵀ (or K before its Transpose).
  if (const int64_t split = in.Pick(3)) {
    m.Initializer("c_q", Scalar(constants[in.Pick(3)])).Initializer("c_k", Scalar(constants[in.Pick(3)]));
    m.Node("Mul", {"q", "c_q"}, {"qs"});
    node_making("scores").set_input(0, "qs");
    if (split == 1) {
      m.Node("Mul", {"c_k", "kt"}, {"kts"});
      node_making("scores").set_input(1, "kts");
    } else {
      onnx::NodeProto& t = node_making("kt");
      m.Node("Mul", {t.input(0), "c_k"}, {"ks"});
      node_making("kt").set_input(0, "ks");
    }
  }
  // Where(IsNaN(P), 0, P) after the Softmax; IsInf a near miss.
  if (const int64_t guard = in.Pick(3)) {
    m.Initializer("zero", Scalar(0));
    m.Node(guard == 1 ? "IsNaN" : "IsInf", {"probs"}, {"bad"});
    m.Node("Where", {"bad", "zero", "probs"}, {"guarded"});
    node_making("y").set_input(0, "guarded");
  }
  // The repeat's shapes computed from K's and V's own Shape, or a Tile (h mod KV).
  if (const int64_t form = repeat ? in.Pick(3) : 0) {
    m.Initializer("i0", Tensor::FromVector(std::vector<int64_t>{0}, {}));
    m.Initializer("i2", Tensor::FromVector(std::vector<int64_t>{2}, {}));
    m.Initializer("ax0", Ints({0})).Initializer("n_kv", Ints({kv})).Initializer("n_g", Ints({groups}));
    m.Initializer("n_heads", Ints({heads})).Initializer("n_d", Ints({d})).Initializer("n_dv", Ints({dv}));
    m.Initializer("tiles", Ints({1, groups, 1, 1}));
    for (const std::string x : {"k", "v"}) {
      if (form == 2) {
        m.Node("Tile", {x, "tiles"}, {x + "_tiled"});
        if (x == "k") node_making("kt").set_input(0, "k_tiled");
        else node_making("y").set_input(1, "v_tiled");
        continue;
      }
      m.Node("Shape", {x}, {x + "_shape_rt"});
      m.Node("Gather", {x + "_shape_rt", "i0"}, {x + "_b"});
      m.Node("Gather", {x + "_shape_rt", "i2"}, {x + "_t"});
      m.Node("Unsqueeze", {x + "_b", "ax0"}, {x + "_b1"});
      m.Node("Unsqueeze", {x + "_t", "ax0"}, {x + "_t1"});
      const std::string size = x == "k" ? "n_d" : "n_dv";
      SetAttr(m.Node("Concat", {x + "_b1", "n_kv", "n_g", x + "_t1", size}, {x + "_eshape"}), "axis", int64_t{0});
      SetAttr(m.Node("Concat", {x + "_b1", "n_heads", x + "_t1", size}, {x + "_rshape"}), "axis", int64_t{0});
      node_making(x + "x").set_input(1, x + "_eshape");
      node_making(x + "r").set_input(1, x + "_rshape");
    }
  }
  // A float mask's -inf as float's lowest or -1e30 (HF's masks).
  if (const int64_t floor = mask == 2 ? in.Pick(3) : 0)
    for (auto& feeds : c.runs) {
      Tensor& t = feeds.back().tensor;
      for (int64_t i = 0; i < t.size(); ++i)
        if (std::isinf(t.data<float>()[i])) t.data<float>()[i] = floor == 1 ? std::numeric_limits<float>::lowest() : -1e30f;
    }
  // HF's mask[:, :, :, :key_states.shape[-2]] (or another axis: a near miss), the keys as the Transpose reads them.
  if (const int64_t slice = mask == 2 ? in.Pick(3) : 0) {
    const std::string keys = node_making("kt").input(0);
    m.Initializer("slice_axis", Tensor::FromVector(std::vector<int64_t>{slice == 1 ? -2 : 3}, {}));
    m.Initializer("zero_1d", Ints({0})).Initializer("last_axis", Ints({-1}));
    m.Node("Shape", {keys}, {"keys_shape"});
    m.Node("Gather", {"keys_shape", "slice_axis"}, {"keys_len"});
    m.Node("Unsqueeze", {"keys_len", "zero_1d"}, {"keys_len_1d"});
    m.Node("Slice", {"mask", "zero_1d", "keys_len_1d", "last_axis"}, {"mask_sliced"});
    for (onnx::NodeProto& n : *g.mutable_node())
      if (n.output(0) == "masked")
        for (int k = 0; k < n.input_size(); ++k)
          if (n.input(k) == "mask") n.set_input(k, "mask_sliced");
  }
}

// RMSNorm (layer = false) or LayerNorm over the last axis, in the forms the
// rules take, with a scale of the last dim's length or of 1, the last dim
// declared or not, and a run-time last dim of 1 now and then.
void Norm(Bytes& in, Case& c, bool layer) {
  ModelBuilder& m = c.model;
  const int64_t hidden = 1 + in.Pick(5), w_len = in.Pick(4) == 0 ? 1 : hidden;
  const bool known = in.Flag();
  m.Input("x", DType::kFloat, {-1, known ? hidden : -1});
  m.Output("y", DType::kFloat, {}, false);
  m.Initializer("w", FloatTensor(in, {w_len}));
  m.Initializer("b", FloatTensor(in, {w_len}));
  m.Initializer("eps", Scalar(in.Flag() ? 1e-5f : 0.25f));
  m.Initializer("two", Scalar(2)).Initializer("one", Scalar(1));
  SetAttr(m.Node("ReduceMean", {"x"}, {"mean"}), "axes", std::vector<int64_t>{in.Pick(5) == 0 ? 0 : -1});
  std::string centred = "x";
  if (layer) {
    m.Node("Sub", {"x", "mean"}, {"d"});
    centred = "d";
  }
  if (in.Flag()) m.Node("Pow", {centred, "two"}, {"sq"});
  else m.Node("Mul", {centred, centred}, {"sq"});
  SetAttr(m.Node("ReduceMean", {"sq"}, {"var"}), "axes", std::vector<int64_t>{-1});
  m.Node("Add", {"var", "eps"}, {"ve"});
  m.Node("Sqrt", {"ve"}, {"s"});
  const int inverse = int(in.Pick(3));
  if (layer || inverse == 2) {
    m.Node("Div", {centred, "s"}, {"n"});
  } else {
    if (inverse == 0) m.Node("Reciprocal", {"s"}, {"r"});
    else m.Node("Div", {"one", "s"}, {"r"});
    m.Node("Mul", {centred, "r"}, {"n"});
  }
  if (in.Pick(8) == 0) m.Output("s", DType::kFloat, {}, false);  // a near miss
  if (in.Flag()) m.Node("Mul", {"n", "w"}, {layer ? "g" : "y"});
  else m.Node("Mul", {"w", "n"}, {layer ? "g" : "y"});
  if (layer) m.Node("Add", {"g", "b"}, {"y"});
  for (int run = 0; run < 2; ++run) {
    const int64_t last = known ? hidden : (in.Flag() ? 1 : hidden);
    c.runs.push_back({{"x", FloatTensor(in, {1 + in.Pick(3), last})}});
  }
}

// SiLU, MatMul + bias and Pow by 2 (with near misses of each).
void Small(Bytes& in, Case& c) {
  ModelBuilder& m = c.model;
  const int64_t n = 1 + in.Pick(4), cols = 1 + in.Pick(3);
  m.Input("x", DType::kFloat, {-1, n});
  m.Output("y", DType::kFloat, {}, false).Output("z", DType::kFloat, {}, false);
  m.Node("Sigmoid", {"x"}, {"sig"});
  m.Node("Mul", in.Flag() ? std::vector<std::string>{"x", "sig"} : std::vector<std::string>{"sig", "x"}, {"y"});
  m.Initializer("w", FloatTensor(in, {n, cols}));
  m.Initializer("bias", FloatTensor(in, {in.Flag() ? cols : 1}));
  m.Initializer("p", Scalar(in.Flag() ? 2.0f : 3.0f, in.Flag() ? Shape{} : Shape{1}));
  m.Node("MatMul", {"x", "w"}, {"mm"});
  m.Node("Add", {"mm", "bias"}, {"a"});
  m.Node("Pow", {"a", "p"}, {"z"});
  for (int run = 0; run < 2; ++run) c.runs.push_back({{"x", FloatTensor(in, {1 + in.Pick(3), n})}});
}

// HF's rotary x * cos + rotate_half(x) * sin, x [B, H, S, D]: rotate_half by
// Slices or Split, or a near miss (halves swapped, the sign on the other
// half, the cut one off); cos and sin gathered from constant tables by
// position_ids (halves equal or not; ids of B rows or one) or given as
// inputs [B | 1, 1, S | 1, D] (computed at run time). The declared symbols
// hold (x's and position_ids' lengths are one symbol, as a model declares
// them); ids may fall past the tables (both ways fail).
void Rotary(Bytes& in, Case& c) {
  ModelBuilder& m = c.model;
  const int64_t d = 2 * (1 + in.Pick(3)), b = 1 + in.Pick(2), h = 1 + in.Pick(2), p = 4 + in.Pick(4);
  const int64_t half = d / 2;
  const bool split = in.Flag(), known = in.Flag(), one_row = in.Pick(4) == 0;
  const int miss = int(in.Pick(6));  // 1 swapped, 2 wrong sign, 3 cut off by one; else none
  const int tables = int(in.Pick(3));  // 0 equal halves, 1 unequal, 2 cos and sin as inputs
  m.Input("x", DType::kFloat, {known ? b : -1, h, -1, d});
  m.Output("y", DType::kFloat, {}, false);
  auto seq = [&](int input, int dim) {
    m.graph().mutable_input(input)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(dim)->set_dim_param(
        "seq");
  };
  seq(0, 2);
  if (tables == 2) {
    const bool cb = in.Flag(), cs = in.Flag();
    m.Input("cos", DType::kFloat, {cb ? b : 1, 1, cs ? -1 : 1, d}).Input("sin", DType::kFloat, {cb ? b : 1, 1, cs ? -1 : 1, d});
    if (cs) seq(1, 2), seq(2, 2);
  } else {
    m.Input("ids", DType::kInt64, {one_row ? 1 : b, -1});
    seq(1, 1);
    Tensor tc = FloatTensor(in, {p, d}), ts = FloatTensor(in, {p, d});
    for (int64_t r = 0; r < p; ++r)
      for (int64_t i = 0; i < half; ++i) {
        if (tables == 0 || i % 2) tc.data<float>()[r * d + half + i] = tc.data<float>()[r * d + i];
        ts.data<float>()[r * d + half + i] = ts.data<float>()[r * d + i];
      }
    m.Initializer("cos_cached", tc).Initializer("sin_cached", ts).Initializer("one", Ints({1}));
    for (const char* t : {"cos", "sin"}) {
      m.Node("Gather", {std::string(t) + "_cached", "ids"}, {std::string(t) + "_3d"});
      m.Node("Unsqueeze", {std::string(t) + "_3d", "one"}, {t});
    }
  }
  const int64_t cut = miss == 3 && half > 1 ? half - 1 : half;
  m.Initializer("zero", Ints({0})).Initializer("cut", Ints({cut})).Initializer("last", Ints({-1}));
  m.Initializer("big", Ints({std::numeric_limits<int64_t>::max()})).Initializer("sizes", Ints({cut, d - cut}));
  if (split) {
    SetAttr(m.Node("Split", {"x", "sizes"}, {"x1", "x2"}), "axis", int64_t{-1});
  } else {
    m.Node("Slice", {"x", "zero", "cut", "last"}, {"x1"});
    m.Node("Slice", {"x", "cut", "big", "last"}, {"x2"});
  }
  const std::string neg_of = miss == 1 || miss == 2 ? "x1" : "x2", other = neg_of == "x1" ? "x2" : "x1";
  m.Node("Neg", {neg_of}, {"neg"});
  SetAttr(m.Node("Concat", miss == 2 ? std::vector<std::string>{other, "neg"} : std::vector<std::string>{"neg", other},
                 {"rot"}),
          "axis", int64_t{-1});
  m.Node("Mul", in.Flag() ? std::vector<std::string>{"x", "cos"} : std::vector<std::string>{"cos", "x"}, {"xc"});
  m.Node("Mul", {"rot", "sin"}, {"rs"});
  m.Node("Add", in.Flag() ? std::vector<std::string>{"xc", "rs"} : std::vector<std::string>{"rs", "xc"}, {"y"});
  for (int run = 0; run < 2; ++run) {
    const int64_t s = 1 + in.Pick(3);
    std::vector<NamedTensor> feeds = {{"x", FloatTensor(in, {b, h, s, d})}};
    if (tables == 2) {
      const auto& dims = m.graph().input(1).type().tensor_type().shape();
      const Shape shape = {dims.dim(0).has_dim_value() ? dims.dim(0).dim_value() : 1, 1,
                           dims.dim(2).has_dim_value() ? 1 : s, d};
      feeds.push_back({"cos", FloatTensor(in, shape)});
      feeds.push_back({"sin", FloatTensor(in, shape)});
    } else {
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < (one_row ? 1 : b) * s; ++i) ids.push_back(in.Pick(p + 1));  // p: past the table
      feeds.push_back({"ids", Tensor::FromVector(ids, {one_row ? 1 : b, s})});
    }
    c.runs.push_back(std::move(feeds));
  }
}

bool Agree(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-3 * (1 + std::fabs(b));
}

}  // namespace
}  // namespace onnx_mini

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_mini;
  QuietProtobuf();
  Bytes in(data, size);
  Case c;
  // The first byte picks the kind: below 240 the four first kinds as before
  // (the seeds keep their meaning), from 240 the rotary.
  const uint8_t first = in.Next();
  const int64_t kind = first >= 240 ? 4 : first % 4;
  if (kind == 4) Rotary(in, c);
  else if (kind == 0) Attention(in, c);
  else if (kind == 1) Norm(in, c, false);
  else if (kind == 2) Norm(in, c, true);
  else Small(in, c);
  SessionOptions on, off;
  on.threads = off.threads = 1;
  off.graph_rewrites = false;
  auto a = c.model.Build(on);
  auto b = c.model.Build(off);
  if (a.ok() != b.ok()) __builtin_trap();  // the rewrite made a valid model invalid, or the reverse
  if (!a.ok()) return 0;
  for (const auto& feeds : c.runs) {
    auto ya = (*a)->Run(feeds);
    auto yb = (*b)->Run(feeds);
    if (ya.ok() != yb.ok()) __builtin_trap();  // one way refuses what the other computes
    if (!ya.ok()) continue;
    if (ya->size() != yb->size()) __builtin_trap();
    for (size_t k = 0; k < ya->size(); ++k) {
      const Tensor &x = (*ya)[k], &y = (*yb)[k];
      if (x.dtype() != y.dtype() || x.shape() != y.shape()) __builtin_trap();
      for (int64_t i = 0; i < x.size(); ++i)
        if (!Agree(GetDouble(x, i), GetDouble(y, i))) __builtin_trap();
    }
  }
  return 0;
}
