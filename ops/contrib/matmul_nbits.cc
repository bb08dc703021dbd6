// com.microsoft MatMulNBits (onnxruntime's CPU kernel: contrib_ops/cpu/
// quantization/matmul_nbits.cc) and the internal onnx_mini::DequantizeMatMul
// that runtime/rewrite/quant_matmul.cc makes of a blocked DequantizeLinear
// feeding MatMul. 4- and 8-bit weights are packed once, at Prepare, into
// quantized panels (kernels/quant/quant_panels.h; shared by the nodes reading
// one constant) and their originals released: decode steps run the panel
// kernels (panel_gemv.h), more rows panel_gemm.h's products. 2-bit
// weights and a g_idx that reorders K run kernels/quant/nbits_matmul.h over
// MatMulNBits' own packed form (read where it lies). Weights that are not
// constant are packed per run.
#include <cstdint>
#include <cstring>

#include "kernels/quant/block_format.h"
#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/panel_gemv.h"
#include "kernels/quant/quant_panels.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

// A's types (T1); onnxruntime's CPU kernel takes float and float16, bfloat16 is ours.
using NBitsTypes = TypeList<float, Float16, BFloat16>;

// t's n elements as floats.
void ToFloats(const Tensor& t, float* out) {
  const int64_t n = t.size();
  VisitTypes<NBitsTypes>(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    if constexpr (std::is_same_v<T, float>) std::memcpy(out, p, size_t(n) * sizeof(float));
    else if constexpr (std::is_same_v<T, Float16>) Float16ToFloat(p, out, n);
    else for (int64_t i = 0; i < n; ++i) out[i] = ToFloat(p[i]);
  });
}

void FromFloats(const float* in, Tensor& t) {
  const int64_t n = t.size();
  VisitTypes<NBitsTypes>(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    if constexpr (std::is_same_v<T, float>) std::memcpy(p, in, size_t(n) * sizeof(float));
    else if constexpr (std::is_same_v<T, Float16>) FloatToFloat16(in, p, n);
    else for (int64_t i = 0; i < n; ++i) p[i] = ToBFloat16(in[i]);
  });
}

// A float copy of a constant, charged to the session's budget.
absl::StatusOr<Tensor> FloatCopy(const Tensor& t, const std::shared_ptr<MemoryBudget>& budget) {
  ASSIGN_OR_RETURN(Tensor f, Tensor::MakeUninitialized(DType::kFloat, t.shape(), budget));
  ToFloats(t, f.data<float>());
  return f;
}

// Whether a value's known dims fit one of `shapes` (unknown dims fit anything).
bool ShapeFits(const ValueType& t, const std::vector<Shape>& shapes) {
  if (!t.dims) return true;
  for (const Shape& s : shapes) {
    if (t.dims->size() != s.size()) continue;
    bool ok = true;
    for (size_t i = 0; i < s.size() && ok; ++i) ok = !(*t.dims)[i].known() || (*t.dims)[i].value == s[i];
    if (ok) return true;
  }
  return false;
}

std::string ShapesText(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& shape : shapes) {
    if (!s.empty()) s += " or ";
    s += "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    s += "]";
  }
  return s;
}

absl::Status CheckShape(const InferContext& ctx, size_t i, const char* what, const std::vector<Shape>& shapes,
                        const char* rule) {
  if (!ctx.has_input(i) || ShapeFits(ctx.input(i), shapes)) return absl::OkStatus();
  return ctx.Error(absl::StrCat(what, " must have shape ", ShapesText(shapes), " (", rule, "), got ",
                                ctx.input(i).ToString()));
}

// Y = A [..., K] x B: the output's dims, after A's last dim is checked against K.
absl::Status InferOutput(InferContext& ctx, int64_t k, int64_t n) {
  const ValueType& a = ctx.input(0);
  ValueType out;
  out.dtype = a.dtype;
  if (a.dims) {
    if (a.dims->empty()) return ctx.Error("A must have rank >= 1, got a scalar");
    const Dim& last = a.dims->back();
    if (last.known() && last.value != k)
      return ctx.Error(absl::StrCat("A's last dim must be K = ", k, ", got ", a.ToString()));
    std::vector<Dim> dims(a.dims->begin(), a.dims->end() - 1);
    dims.push_back(Dim::Known(n));
    out.dims = std::move(dims);
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

// A constant's identity in a shared blob's kind: its storage, not its name
// (an If's two branches may each hold an initializer "scales" of their own
// beside one outer B). Constants live from loading to their readers'
// Prepare, so no other constant a later node reads has the same address.
std::string ConstantId(const Tensor* t) {
  return t ? absl::StrCat(reinterpret_cast<uintptr_t>(t->storage().get())) : std::string("none");
}

// A weight packed into panels, its bytes charged to the session's budget
// while it lives.
struct NBitsPanels {
  QuantPanelsBuffer buf;
  bool uniform = false;  // every block's zero point is `zero` (the kernels then skip the zeros)
  float zero = 0;
  MemoryReservation reserved;
  const float* uniform_zero() const { return uniform ? &zero : nullptr; }
};

// Whether the panels take w: bits 4 and 8, no g_idx, blocks up to the
// layout's 65536 (larger ones keep the native form).
bool PanelsTake(const NBitsMatrix& w) {
  return (w.bits == 4 || w.bits == 8) && w.g_idx == nullptr && w.block_size <= 65536;
}

// w packed into panels, the budget charged first; an error when it refuses.
absl::StatusOr<std::shared_ptr<NBitsPanels>> PackPanels(const NBitsMatrix& w,
                                                        const std::shared_ptr<MemoryBudget>& budget) {
  auto p = std::make_shared<NBitsPanels>();
  p->reserved = MemoryReservation(budget);
  const int64_t panels = (w.n + kQuantPanelCols - 1) / kQuantPanelCols;
  // Per (panel, block): the codes, then scales, zeros and code sums (4 bytes x 16 each).
  const std::optional<int64_t> blocks = CheckedMul(panels, w.k_blocks);
  const std::optional<int64_t> bytes =
      blocks ? CheckedMul(*blocks, w.block_size * kQuantPanelCols * w.bits / 8 + 3 * 4 * kQuantPanelCols)
             : std::nullopt;
  if (!bytes) return absl::ResourceExhaustedError("the packed weight's size overflows");
  RETURN_IF_ERROR(p->reserved.Grow(*bytes, 1, "the weight packed into quantized panels"));
  if (!PackNBitsPanels(w, &p->buf)) return absl::InternalError("not implemented: packing this weight into panels");
  p->uniform = QuantPanelsZeroUniform(p->buf.view, &p->zero);
  return p;
}

// Runs the product over a weight packed into panels (`panels`) or in
// MatMulNBits' form (`w`): A converted to float when it is not, the
// workspace charged to the budget. With `int8_a`, A is quantized as
// onnxruntime's accuracy level 4 does: over panels the integers multiplied
// where an int8 build runs (VNNI or AVX2; decode kernels up to
// PanelGemvMaxRows rows, panel_gemm.h beyond), else A rounded and
// multiplied in float.
absl::Status RunProduct(KernelContext& ctx, const NBitsMatrix* w, const NBitsPanels* panels, const float* bias,
                        bool int8_a = false) {
  const Tensor& a = *ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t k = panels ? panels->buf.view.k : w->k;
  const int64_t m = k > 0 ? a.size() / k : 0;
  if (y.size() == 0) return absl::OkStatus();
  const bool is_float = a.dtype() == DType::kFloat;
  // Without an int8 decode build, int8 A's decode is the float passes' over A rounded.
  const bool int8_build = int8_a && PanelGemvInt8Target() != CpuTarget::kBaseline;
  const bool decode = panels && m <= PanelGemvMaxRows(int8_build ? PanelGemvA::kInt8 : PanelGemvA::kFloat);
  const bool many = panels && !decode;
  const bool int8_kernel = int8_build && decode;
  const bool rounded = int8_a && !int8_kernel && !many;
  int64_t ws = -1;
  if (decode) ws = PanelGemvWorkspace(m, panels->buf.view);
  else if (many) ws = QuantPanelsMatMulManyWorkspace(m, panels->buf.view, int8_a);
  else ws = NBitsMatMulWorkspace(m, *w);
  if (many && ws >= 0) ws = ws / int64_t(sizeof(float)) + 1;  // bytes, as floats
  const std::optional<int64_t> convert = CheckedAdd(is_float && !rounded ? 0 : a.size(), is_float ? 0 : y.size());
  const std::optional<int64_t> total = ws < 0 || !convert ? std::nullopt : CheckedAdd(ws, *convert);
  if (!total) return ctx.Error("the workspace's size overflows");
  ASSIGN_OR_RETURN(MemoryReservation r, ctx.Reserve(*total, sizeof(float), "the packed product's workspace"));
  std::vector<float> work(static_cast<size_t>(*total));
  float* pa = is_float && !rounded ? const_cast<float*>(a.data<float>()) : work.data() + ws;
  float* pc = is_float ? y.data<float>() : work.data() + ws + a.size();
  if (!is_float) ToFloats(a, pa);
  const float* src = is_float ? a.data<float>() : pa;
  if (rounded) NBitsRoundRowsToInt8(src, m, k, panels ? panels->buf.view.block : w->block_size, pa);
  if (many) {
    QuantPanelsMatMulMany(src, m, panels->buf.view, int8_a, bias, pc, work.data(), ctx.threads());
  } else if (int8_kernel) {
    PanelGemvInt8(src, m, panels->buf.view, panels->uniform_zero(), bias, pc, work.data(), ctx.threads());
  } else if (decode) {
    PanelGemvFloat(pa, m, panels->buf.view, panels->uniform_zero(), bias, pc, work.data(), ctx.threads());
  } else {
    NBitsMatMul(pa, m, *w, bias, pc, work.data(), ctx.threads());
  }
  if (!is_float) FromFloats(pc, y);
  return absl::OkStatus();
}

// ---- MatMulNBits ----

class MatMulNBitsOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    for (const char* a : {"K", "N", "bits", "block_size"})
      if (node.attr(a) == nullptr) return AttributeError(node, absl::StrCat("attribute '", a, "' is required"));
    auto op = std::unique_ptr<MatMulNBitsOp>(new MatMulNBitsOp());
    op->k_ = node.attr_int("K", 0);
    op->n_ = node.attr_int("N", 0);
    op->bits_ = node.attr_int("bits", 0);
    op->block_ = node.attr_int("block_size", 0);
    op->accuracy_level_ = node.attr_int("accuracy_level", 0);  // as onnxruntime: 4 is int8 A, any other float
    if (op->bits_ != 2 && op->bits_ != 4 && op->bits_ != 8)
      return AttributeError(node, absl::StrCat("bits must be 2, 4 or 8, got ", op->bits_));
    if (op->block_ < 16 || (op->block_ & (op->block_ - 1)) != 0 || op->block_ > (int64_t{1} << 30))
      return AttributeError(node, absl::StrCat("block_size must be a power of 2 >= 16, got ", op->block_));
    if (op->k_ < 1 || op->n_ < 1)
      return AttributeError(node, absl::StrCat("K and N must be >= 1, got K = ", op->k_, ", N = ", op->n_));
    op->k_blocks_ = (op->k_ + op->block_ - 1) / op->block_;
    const std::optional<int64_t> codes = CheckedMul(op->n_, op->k_blocks_);
    if (!codes || !CheckedMul(*codes, op->block_))
      return AttributeError(node, absl::StrCat("N x K (", op->n_, " x ", op->k_, ") overflows"));
    return std::unique_ptr<Op>(std::move(op));
  }

  // Constant 16-bit scales and float zero points become float once (their
  // originals released); a constant g_idx that is k / block_size is dropped.
  // B is read where it lies.
  absl::Status Prepare(PrepareContext& ctx) override {
    if (const Tensor* s = ctx.num_inputs() > 2 ? ctx.constant(2) : nullptr;
        s && s->dtype() != DType::kFloat && s->size() == n_ * k_blocks_) {
      ASSIGN_OR_RETURN(scales_, FloatCopy(*s, ctx.budget()));
      ctx.release(2);
    }
    if (const Tensor* z = ctx.num_inputs() > 3 ? ctx.constant(3) : nullptr;
        z && z->dtype() != DType::kFloat && z->dtype() != DType::kUInt8 && z->size() == n_ * k_blocks_) {
      ASSIGN_OR_RETURN(zeros_, FloatCopy(*z, ctx.budget()));
      ctx.release(3);
    }
    if (const Tensor* g = ctx.num_inputs() > 4 ? ctx.constant(4) : nullptr;
        g && g->size() >= k_ && NBitsGIdxIsTrivial(g->data<int32_t>(), k_, block_)) {
      g_idx_trivial_ = true;
      ctx.release(4);
    }
    if (const Tensor* b = ctx.num_inputs() > 5 ? ctx.constant(5) : nullptr;
        b && b->dtype() != DType::kFloat && b->size() == n_) {
      ASSIGN_OR_RETURN(bias_, FloatCopy(*b, ctx.budget()));
      ctx.release(5);
    }
    return PreparePanels(ctx);
  }

  // Constant 4- and 8-bit B, scales and zero points packed into panels once
  // (shared by the nodes reading the same B the same way), their originals
  // and float copies released.
  absl::Status PreparePanels(PrepareContext& ctx) {
    const Node& node = ctx.node();
    const bool has_z = ctx.num_inputs() > 3 && !node.inputs[3].empty();
    const bool has_g = ctx.num_inputs() > 4 && !node.inputs[4].empty();
    const Tensor* b = ctx.constant(1);
    const Tensor* s = ctx.constant(2);
    const Tensor* z = has_z ? ctx.constant(3) : nullptr;
    if ((bits_ != 4 && bits_ != 8) || block_ > 65536 || !b || !s || (has_z && !z) || (has_g && !g_idx_trivial_))
      return absl::OkStatus();
    const int64_t kb = k_blocks_, zb = (kb * bits_ + 7) / 8;
    // Shapes Infer refuses (it says why): nothing packed.
    if (b->dtype() != DType::kUInt8 || b->size() != n_ * kb * (block_ * bits_ / 8) || s->size() != n_ * kb)
      return absl::OkStatus();
    // onnxruntime ignores packed zero points beside a g_idx (Compute's rule).
    if (z && z->dtype() == DType::kUInt8 && has_g) z = nullptr;
    if (z && z->size() != (z->dtype() == DType::kUInt8 ? n_ * zb : n_ * kb)) return absl::OkStatus();
    NBitsMatrix w = Matrix();
    w.data = b->data<uint8_t>();
    if (scales_.defined()) w.scales = scales_.data<float>();
    else if (s->dtype() == DType::kFloat) w.scales = s->data<float>();
    else return absl::OkStatus();
    if (zeros_.defined()) w.zero_float = zeros_.data<float>();
    else if (z && z->dtype() == DType::kUInt8) w.zero_packed = z->data<uint8_t>();
    else if (z && z->dtype() == DType::kFloat) w.zero_float = z->data<float>();
    else if (z) return absl::OkStatus();
    const std::string kind = absl::StrCat("nbits panels K ", k_, " N ", n_, " bits ", bits_, " block ", block_,
                                          " scales ", ConstantId(s), " zero ", ConstantId(z));
    panels_ = ctx.Shared<NBitsPanels>(1, kind, [&]() -> std::shared_ptr<const NBitsPanels> {
      absl::StatusOr<std::shared_ptr<NBitsPanels>> p = PackPanels(w, ctx.budget());
      return p.ok() ? *p : nullptr;  // refused by the budget: the native form per run
    });
    if (!panels_) {
      native_ = true;  // packing B per run would ask the budget for the same bytes
      return absl::OkStatus();
    }
    ctx.release(1);
    ctx.release(2);
    if (has_z) ctx.release(3);
    scales_ = Tensor();
    zeros_ = Tensor();
    return absl::OkStatus();
  }

  // The attributes' part of the weight.
  NBitsMatrix Matrix() const {
    NBitsMatrix w;
    w.bits = int(bits_);
    w.k = k_;
    w.n = n_;
    w.block_size = block_;
    w.k_blocks = k_blocks_;
    w.zero_default = float(1 << (bits_ - 1));
    return w;
  }

  absl::Status Infer(InferContext& ctx) const override {
    const int64_t kb = k_blocks_, blob = block_ * bits_ / 8, zb = (kb * bits_ + 7) / 8;
    const std::string attrs = absl::StrCat("K = ", k_, ", N = ", n_, ", bits = ", bits_, ", block_size = ", block_);
    RETURN_IF_ERROR(CheckShape(ctx, 1, "B", {{n_, kb, blob}}, attrs.c_str()));
    RETURN_IF_ERROR(CheckShape(ctx, 2, "scales", {{n_ * kb}, {n_, kb}}, attrs.c_str()));
    const DType t1 = ctx.input(0).dtype;
    if (ctx.input(2).dtype != t1)
      return ctx.Error(absl::StrCat("scales must have A's type ", LowerName(t1), ", got ", ctx.input(2).ToString()));
    if (ctx.has_input(3)) {
      const DType zt = ctx.input(3).dtype;
      if (zt == DType::kUInt8) {
        RETURN_IF_ERROR(CheckShape(ctx, 3, "zero_points (uint8, packed)", {{n_ * zb}, {n_, zb}}, attrs.c_str()));
      } else if (zt == t1) {
        RETURN_IF_ERROR(CheckShape(ctx, 3, "zero_points (unpacked)", {{n_ * kb}, {n_, kb}}, attrs.c_str()));
      } else {
        return ctx.Error(absl::StrCat("zero_points must be uint8 or A's type ", LowerName(t1), ", got ",
                                      ctx.input(3).ToString()));
      }
    }
    if (ctx.has_input(4)) {
      RETURN_IF_ERROR(CheckShape(ctx, 4, "g_idx", {{k_}, {kb * block_}}, attrs.c_str()));
      if (!g_idx_trivial_)
        if (const Tensor* g = ctx.value(4)) {
          const int32_t* p = g->data<int32_t>();
          for (int64_t i = 0; i < g->size(); ++i)
            if (p[i] < 0 || p[i] >= kb)
              return ctx.Error(absl::StrCat("g_idx[", i, "] = ", p[i], " is outside the blocks [0, ", kb, ")"));
        }
    }
    if (ctx.has_input(5)) {
      RETURN_IF_ERROR(CheckShape(ctx, 5, "bias", {{n_}}, attrs.c_str()));
      if (ctx.input(5).dtype != t1)
        return ctx.Error(absl::StrCat("bias must have A's type ", LowerName(t1), ", got ", ctx.input(5).ToString()));
    }
    return InferOutput(ctx, k_, n_);
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor* z = ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
    const Tensor* g = ctx.num_inputs() > 4 ? ctx.input(4) : nullptr;
    // accuracy_level 4: onnxruntime rounds A to int8 per block, unless g_idx,
    // unpacked zero points or 2-bit blocks of 16 (no int8 kernel) send it to
    // its float path (docs/contrib_ops.md).
    const bool int8_a = accuracy_level_ == 4 && !g && !(z && z->dtype() != DType::kUInt8) &&
                        !(bits_ == 2 && block_ == 16);
    const Tensor* b = ctx.num_inputs() > 5 ? ctx.input(5) : nullptr;
    const float* pb = nullptr;
    Tensor bias;
    if (bias_.defined()) pb = bias_.data<float>();
    else if (b && b->dtype() == DType::kFloat) pb = b->data<float>();
    else if (b) {
      ASSIGN_OR_RETURN(bias, ctx.NewTensor(DType::kFloat, b->shape()));
      ToFloats(*b, bias.data<float>());
      pb = bias.data<float>();
    }
    if (panels_) return RunProduct(ctx, nullptr, panels_.get(), pb, int8_a);
    NBitsMatrix w = Matrix();
    w.data = ctx.input(1)->data<uint8_t>();
    // What Prepare did not convert is converted here, per run.
    Tensor scales, zeros;
    if (scales_.defined()) w.scales = scales_.data<float>();
    else if (ctx.input(2)->dtype() == DType::kFloat) w.scales = ctx.input(2)->data<float>();
    else {
      ASSIGN_OR_RETURN(scales, ctx.NewTensor(DType::kFloat, ctx.input(2)->shape()));
      ToFloats(*ctx.input(2), scales.data<float>());
      w.scales = scales.data<float>();
    }
    // onnxruntime's kernel ignores packed zero points when g_idx is given
    // (its reordering path dequantizes with 2^(bits-1)); so do we.
    if (g && z && z->dtype() == DType::kUInt8) z = nullptr;
    if (zeros_.defined()) w.zero_float = zeros_.data<float>();
    else if (z && z->dtype() == DType::kUInt8) w.zero_packed = z->data<uint8_t>();
    else if (z && z->dtype() == DType::kFloat) w.zero_float = z->data<float>();
    else if (z) {
      ASSIGN_OR_RETURN(zeros, ctx.NewTensor(DType::kFloat, z->shape()));
      ToFloats(*z, zeros.data<float>());
      w.zero_float = zeros.data<float>();
    }
    if (g && !g_idx_trivial_ && !NBitsGIdxIsTrivial(g->data<int32_t>(), k_, block_)) w.g_idx = g->data<int32_t>();
    if (PanelsTake(w) && !native_) {  // not constant: packed for this run
      absl::StatusOr<std::shared_ptr<NBitsPanels>> p = PackPanels(w, ctx.budget());
      if (!p.ok()) return absl::Status(p.status().code(), absl::StrCat(ctx.node().Describe(), ": ", p.status().message()));
      return RunProduct(ctx, nullptr, p->get(), pb, int8_a);
    }
    return RunProduct(ctx, &w, nullptr, pb, int8_a);
  }

 private:
  MatMulNBitsOp() = default;
  int64_t k_ = 0, n_ = 0, bits_ = 4, block_ = 32, accuracy_level_ = 0, k_blocks_ = 0;
  Tensor scales_, zeros_, bias_;  // float copies made by Prepare
  bool g_idx_trivial_ = false;
  std::shared_ptr<const NBitsPanels> panels_;  // B packed by Prepare
  bool native_ = false;  // B constant, its panels refused by the budget: the native form runs
};

// ---- onnx_mini::DequantizeMatMul(A, x, scale, zero_point?; block_size) ----
// MatMul(A, DequantizeLinear(x, scale, zero_point, axis = 0, block_size)),
// x [K, N] quantized along K in blocks; what runtime/rewrite/quant_matmul.cc
// makes of the standard spelling. accuracy_level as MatMulNBits' (the
// rewrite sets 4 on 4-bit weights, as onnxruntime's fusion does).

// x [K, N] with its scales and zero points in MatMulNBits' packed form, then
// (4 and 8 bits) in panels, the first form freed.
struct PackedDq {
  Tensor data, scales, zeros;  // uint8 [N, k_blocks, blob]; float [N, k_blocks]; uint8 [N, zero bytes] or none
  NBitsMatrix w;
  std::shared_ptr<NBitsPanels> panels;
};

absl::StatusOr<std::shared_ptr<PackedDq>> PackDq(const Tensor& x, const Tensor& scale, const Tensor* zero,
                                                 int64_t block, const std::shared_ptr<MemoryBudget>& budget) {
  const BlockFormat& f = *FindBlockFormat(x.dtype());
  auto p = std::make_shared<PackedDq>();
  NBitsMatrix& w = p->w;
  w.bits = f.bits;
  w.k = x.shape()[0];
  w.n = x.shape()[1];
  w.block_size = block;
  w.k_blocks = (w.k + block - 1) / block;
  // Signed codes become unsigned with the zero point moved as much.
  const int32_t offset = f.is_signed ? 1 << (f.bits - 1) : 0;
  w.zero_default = float(offset);
  const DType code_type = f.bits == 8 ? DType::kUInt8 : f.bits == 4 ? DType::kUInt4 : DType::kUInt2;
  ASSIGN_OR_RETURN(p->data, Tensor::Make(DType::kUInt8, {w.n, w.k_blocks, w.blob_bytes()}, budget));
  ASSIGN_OR_RETURN(p->scales, Tensor::MakeUninitialized(DType::kFloat, {w.n, w.k_blocks}, budget));
  uint8_t* data = p->data.data<uint8_t>();
  const int64_t column = w.k_blocks * w.blob_bytes();
  for (int64_t kk = 0; kk < w.k; ++kk)
    for (int64_t j = 0; j < w.n; ++j)
      SetPacked(code_type, data + j * column, kk, uint32_t(f.load(x.raw(), kk * w.n + j) + offset));
  std::vector<float> s(size_t(scale.size()));
  ToFloats(scale, s.data());
  float* ps = p->scales.data<float>();
  for (int64_t b = 0; b < w.k_blocks; ++b)
    for (int64_t j = 0; j < w.n; ++j) ps[j * w.k_blocks + b] = s[size_t(b * w.n + j)];
  w.data = data;
  w.scales = ps;
  if (zero) {
    ASSIGN_OR_RETURN(p->zeros, Tensor::Make(DType::kUInt8, {w.n, w.zero_row_bytes()}, budget));
    uint8_t* pz = p->zeros.data<uint8_t>();
    for (int64_t b = 0; b < w.k_blocks; ++b)
      for (int64_t j = 0; j < w.n; ++j)
        SetPacked(code_type, pz + j * w.zero_row_bytes(), b, uint32_t(f.load(zero->raw(), b * w.n + j) + offset));
    w.zero_packed = pz;
  }
  if (PanelsTake(w)) {
    ASSIGN_OR_RETURN(p->panels, PackPanels(w, budget));
    p->data = p->scales = p->zeros = Tensor();
    p->w = NBitsMatrix{};
  }
  return p;
}

class DequantizeMatMulOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::unique_ptr<DequantizeMatMulOp>(new DequantizeMatMulOp());
    op->block_ = node.attr_int("block_size", 0);
    if (op->block_ < 16 || (op->block_ & (op->block_ - 1)) != 0 || op->block_ > (int64_t{1} << 30))
      return AttributeError(node, absl::StrCat("block_size must be a power of 2 >= 16, got ", op->block_));
    op->accuracy_level_ = node.attr_int("accuracy_level", 0);  // 4: int8 A, as MatMulNBits
    return std::unique_ptr<Op>(std::move(op));
  }

  // Constant x, scale and zero point are packed once and their originals released.
  absl::Status Prepare(PrepareContext& ctx) override {
    const Tensor* x = ctx.constant(1);
    const Tensor* s = ctx.constant(2);
    const bool has_zero = ctx.num_inputs() > 3 && !ctx.node().inputs[3].empty();
    const Tensor* z = has_zero ? ctx.constant(3) : nullptr;
    if (!x || !s || (has_zero && !z) || x->shape().size() != 2) return absl::OkStatus();
    const int64_t k = x->shape()[0], n = x->shape()[1], kb = (k + block_ - 1) / block_;
    if (s->shape() != Shape{kb, n} || (z && z->shape() != Shape{kb, n})) return absl::OkStatus();  // Infer says why
    // Shared by the nodes packing the same x with the same scale and zero point.
    const std::string kind =
        absl::StrCat("nbits blocks of ", block_, " scales ", ConstantId(s), " zero ", ConstantId(z));
    packed_ = ctx.Shared<PackedDq>(1, kind, [&]() -> std::shared_ptr<const PackedDq> {
      absl::StatusOr<std::shared_ptr<PackedDq>> p = PackDq(*x, *s, z, block_, ctx.budget());
      return p.ok() ? *p : nullptr;  // refused by the budget: packed per run
    });
    if (!packed_) return absl::OkStatus();
    ctx.release(1);
    ctx.release(2);
    if (z) ctx.release(3);
    return absl::OkStatus();
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(1);
    if (!x.dims || x.dims->size() != 2 || !(*x.dims)[0].known() || !(*x.dims)[1].known())
      return ctx.Error(absl::StrCat("x must be a 2-D weight of known shape, got ", x.ToString()));
    const int64_t k = (*x.dims)[0].value, n = (*x.dims)[1].value, kb = (k + block_ - 1) / block_;
    const std::string rule = absl::StrCat("x is [", k, ",", n, "], block_size = ", block_);
    RETURN_IF_ERROR(CheckShape(ctx, 2, "scale", {{kb, n}}, rule.c_str()));
    RETURN_IF_ERROR(CheckShape(ctx, 3, "zero_point", {{kb, n}}, rule.c_str()));
    if (ctx.has_input(3) && ctx.input(3).dtype != x.dtype)
      return ctx.Error(absl::StrCat("zero_point must have x's type ", LowerName(x.dtype), ", got ",
                                    ctx.input(3).ToString()));
    if (ctx.input(0).dtype != ctx.input(2).dtype)
      return ctx.Error(absl::StrCat("A must have the scale's type ", LowerName(ctx.input(2).dtype), ", got ",
                                    ctx.input(0).ToString()));
    return InferOutput(ctx, k, n);
  }

  absl::Status Compute(KernelContext& ctx) const override {
    std::shared_ptr<const PackedDq> packed = packed_;
    if (!packed) {  // not constant: packed for this run
      const Tensor* z = ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
      ASSIGN_OR_RETURN(packed, PackDq(*ctx.input(1), *ctx.input(2), z, block_, ctx.budget()));
    }
    // As MatMulNBits: 2-bit blocks of 16 have no int8 kernel.
    const int bits = packed->panels ? packed->panels->buf.view.bits : packed->w.bits;
    const bool int8_a = accuracy_level_ == 4 && !(bits == 2 && block_ == 16);
    return RunProduct(ctx, packed->panels ? nullptr : &packed->w, packed->panels.get(), nullptr, int8_a);
  }

 private:
  DequantizeMatMulOp() = default;
  int64_t block_ = 32, accuracy_level_ = 0;
  std::shared_ptr<const PackedDq> packed_;  // set by Prepare
};

}  // namespace

std::vector<OpDef> MatMulNBitsOps() {
  constexpr TypeSet t1 = NBitsTypes::set();
  constexpr TypeSet codes = {DType::kInt4, DType::kUInt4, DType::kInt8, DType::kUInt8, DType::kInt2, DType::kUInt2};
  return {
      {kMsDomain, "MatMulNBits", Versions{1}, "T1 T2 T1 T3? T4? T1?", "T1",
       {{"T1", t1}, {"T2", {DType::kUInt8}}, {"T3", TypeSet{DType::kUInt8} | t1}, {"T4", {DType::kInt32}}},
       MatMulNBitsOp::Create},
      // Internal: MatMul(A, DequantizeLinear(x, scale, zero_point; axis 0, block_size)).
      {kInternalDomain, "DequantizeMatMul", Versions{1}, "T Q T Q?", "T", {{"T", t1}, {"Q", codes}},
       DequantizeMatMulOp::Create},
  };
}

}  // namespace onnx_mini
