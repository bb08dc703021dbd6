// com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul: an 8-bit
// integer product with a float result (kernels/quant/int8_matmul.h), as
// onnxruntime's quantizer and optimizers write them:
//   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?)
//   DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): A float, quantized
//     per tensor to uint8 as DynamicQuantizeLinear does, then the same product.
// Y = float(sum (A - za)(B - zb)) * (a_scale * b_scale) + bias, NumPy matmul
// shapes; B's scale and zero point per tensor or per column; a constant 2-D
// B is packed once at session creation (its original released): into 8-bit
// QuantPanels with its scale and zero point when those are constants too
// (the VNNI kernel of kernels/quant/panel_gemm.h), else into the int16 panels
// of kernels/quant/int8_matmul.h.
#include <cstring>
#include <limits>
#include <memory>

#include "kernels/quant/int8_matmul.h"
#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/quant_panels_int8.h"
#include "ops/common.h"
#include "ops/math/matmul_plan.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

using Int8Types = TypeList<int8_t, uint8_t>;

// B packed for the int8 kernel, shared by every node reading the same weight.
struct PackedInt8B {
  Tensor data;  // Int8PackedBSize(k, n) bytes
  int64_t k = 0, n = 0;
  bool b_unsigned = false;
};

std::shared_ptr<const PackedInt8B> PackInt8B(const Tensor& b, const std::shared_ptr<MemoryBudget>& budget) {
  const int64_t k = b.shape()[0], n = b.shape()[1];
  const int64_t bytes = Int8PackedBSize(k, n);
  if (bytes < 0) return nullptr;
  absl::StatusOr<Tensor> data = Tensor::MakeUninitialized(DType::kInt8, {bytes}, budget);
  if (!data.ok()) return nullptr;
  auto p = std::make_shared<PackedInt8B>();
  p->data = *std::move(data);
  p->k = k;
  p->n = n;
  p->b_unsigned = b.dtype() == DType::kUInt8;
  Int8PackB(b.raw(), p->b_unsigned, k, n, p->data.data<int8_t>());
  return p;
}

// B with its scale and zero point packed into 8-bit panels.
struct Int8Panels {
  QuantPanelsBuffer buf;
  MemoryReservation charge;  // buf's bytes, against the session's budget
  bool uniform = false;      // one zero point for every column (the kernels then skip reading them)
  float zero = 0;
  const float* uniform_zero() const { return uniform ? &zero : nullptr; }
};

// Whether a constant t holds one value or one per column of n.
bool OneOrPerColumn(const Tensor* t, int64_t n) {
  return t && t->raw() && t->shape().size() <= 1 && (t->size() == 1 || t->size() == n);
}

// Where the inputs are: A, B, the scales, zero points and bias (-1: none).
struct Inputs {
  int a_scale, b_scale, a_zero, b_zero, bias;
};

class QuantizedMatMulOp : public Op {
 public:
  QuantizedMatMulOp(const Node& node, bool dynamic)
      : dynamic_(dynamic), in_(dynamic ? Inputs{-1, 2, -1, 3, 4} : Inputs{2, 3, 4, 5, 6}) {}

  static absl::StatusOr<std::unique_ptr<Op>> CreateToFloat(const Node& node) {
    return std::unique_ptr<Op>(new QuantizedMatMulOp(node, false));
  }
  static absl::StatusOr<std::unique_ptr<Op>> CreateDynamic(const Node& node) {
    return std::unique_ptr<Op>(new QuantizedMatMulOp(node, true));
  }

  absl::Status Prepare(PrepareContext& ctx) override {
    const Tensor* b = ctx.num_inputs() > 1 ? ctx.constant(1) : nullptr;
    if (!b || b->shape().size() != 2 || b->raw() == nullptr) return absl::OkStatus();
    const int64_t n = b->shape()[1];
    const Tensor* scale = ctx.num_inputs() > size_t(in_.b_scale) ? ctx.constant(size_t(in_.b_scale)) : nullptr;
    const bool has_zero = ctx.num_inputs() > size_t(in_.b_zero) && !ctx.node().inputs[size_t(in_.b_zero)].empty();
    const Tensor* zero = has_zero ? ctx.constant(size_t(in_.b_zero)) : nullptr;
    if (b->shape()[0] > 0 && n > 0 && OneOrPerColumn(scale, n) && scale->dtype() == DType::kFloat &&
        (!has_zero || (OneOrPerColumn(zero, n) && zero->dtype() == b->dtype()))) {
      // The panels hold the scale and zero point: one blob per (B, scale, zero) triple.
      const std::string kind = absl::StrCat("int8 quant panels of B, scale ", reinterpret_cast<uintptr_t>(scale),
                                            ", zero ", reinterpret_cast<uintptr_t>(zero));
      panels_ = ctx.Shared<Int8Panels>(1, kind, [&]() -> std::shared_ptr<const Int8Panels> {
        Int8PanelsSource src;
        src.b = b->raw();
        src.b_unsigned = b->dtype() == DType::kUInt8;
        src.k = b->shape()[0];
        src.n = n;
        src.zero = zero ? zero->raw() : nullptr;
        src.zero_per_column = zero && zero->size() > 1;
        src.scale = scale->data<float>();
        src.scale_per_column = scale->size() > 1;
        auto p = std::make_shared<Int8Panels>();
        const int64_t block = Int8PanelsBlock(src.k), kb = (src.k + block - 1) / block;
        const double bytes = double(kb) * double((n + kQuantPanelCols - 1) / kQuantPanelCols) * kQuantPanelCols *
                             (double(block) + 12);
        if (!(bytes < 1e18)) return nullptr;
        p->charge = MemoryReservation(ctx.budget());
        if (!p->charge.Grow(int64_t(bytes), 1, "int8 panels of B").ok()) return nullptr;
        if (!PackInt8Panels(src, &p->buf)) return nullptr;
        p->uniform = QuantPanelsZeroUniform(p->buf.view, &p->zero);
        return p;
      });
      if (panels_) {
        ctx.release(1);
        return absl::OkStatus();
      }
    }
    packed_ = ctx.Shared<PackedInt8B>(1, "int8 panels of B", [&] { return PackInt8B(*b, ctx.budget()); });
    if (packed_) ctx.release(1);
    return absl::OkStatus();
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = DType::kFloat;
    const std::optional<Shape> sa0 = ctx.input(0).concrete_shape(), sb0 = ctx.input(1).concrete_shape();
    if (!sa0 || !sb0) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    auto p = std::make_shared<MatMulPlan>();
    RETURN_IF_ERROR(
        PlanMatMul(ctx, *sa0, *sb0, absl::StrCat("A ", ShapeToString(*sa0), " x B ", ShapeToString(*sb0)), *p));
    // Scales and zero points: one value, or (B's) one per column; the bias N values.
    auto check = [&](int i, const char* what, bool per_column) -> absl::Status {
      if (i < 0 || !ctx.has_input(size_t(i))) return absl::OkStatus();
      const std::optional<Shape> s = ctx.input(size_t(i)).concrete_shape();
      if (!s || ElementCount(*s) == 1) return absl::OkStatus();
      if (per_column && !s->empty() && s->back() == p->N && ElementCount(*s) == p->N) return absl::OkStatus();
      if (per_column)
        return NotImplemented(ctx.node(), absl::StrCat(what, " of shape ", ShapeToString(*s), " (B has ", p->N,
                                                       " columns: one value or one per column)"));
      return NotImplemented(ctx.node(), absl::StrCat(what, " of shape ", ShapeToString(*s), " (one value only)"));
    };
    RETURN_IF_ERROR(check(in_.a_scale, "a_scale", false));
    RETURN_IF_ERROR(check(in_.a_zero, "a_zero_point", false));
    RETURN_IF_ERROR(check(in_.b_scale, "b_scale", true));
    RETURN_IF_ERROR(check(in_.b_zero, "b_zero_point", true));
    if (ctx.has_input(size_t(in_.bias))) {
      const std::optional<Shape> s = ctx.input(size_t(in_.bias)).concrete_shape();
      if (s && (s->size() != 1 || (*s)[0] != p->N))
        return ctx.Error(absl::StrCat("the bias must be 1-D of B's ", p->N, " columns, got ", ShapeToString(*s)));
    }
    ctx.set_output(0, ValueType::Of(DType::kFloat, p->output));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const MatMulPlan& p = ctx.plan<MatMulPlan>();
    const Tensor& b = *ctx.input(1);
    Tensor& y = ctx.output(0);
    if (y.size() == 0) return absl::OkStatus();
    const auto input = [&](int i) -> const Tensor* {
      return i >= 0 && size_t(i) < ctx.num_inputs() ? ctx.input(size_t(i)) : nullptr;
    };
    Int8MatMulArgs args;
    args.k = p.K;
    args.n = p.N;
    args.b_unsigned = b.dtype() == DType::kUInt8;
    // A: as given, or quantized here (DynamicQuantizeLinear's rule).
    const Tensor& a = *ctx.input(0);
    // The rows of one call: all of A's when B is one matrix.
    const int64_t rows = p.b_matrix ? ElementCount(a.shape()) / std::max<int64_t>(p.K, 1) : p.M;
    if (panels_ && p.K > 0) return ComputePanels(ctx, a, rows, y);
    std::vector<uint8_t> aq;
    MemoryReservation aq_reserved;
    float a_scale = 1;
    if (dynamic_) {
      uint8_t zero;
      DynamicQuantizeParams(a.data<float>(), a.size(), a_scale, zero);
      RETURN_IF_ERROR(ctx.Grow(aq_reserved, a.size(), 1, "A quantized"));
      aq.resize(size_t(a.size()));
      QuantizeU8(a.data<float>(), a.size(), a_scale, zero, aq.data());
      args.a = aq.data();
      args.a_unsigned = true;
      args.a_zero = zero;
    } else {
      args.a = a.raw();
      args.a_unsigned = a.dtype() == DType::kUInt8;
      a_scale = input(in_.a_scale)->data<float>()[0];
      if (const Tensor* za = input(in_.a_zero))
        args.a_zero = args.a_unsigned ? int32_t(za->data<uint8_t>()[0]) : int32_t(za->data<int8_t>()[0]);
    }
    // B's zero points, and the multipliers a_scale * b_scale (in float, as onnxruntime forms them).
    std::vector<int32_t> zb;
    if (const Tensor* t = input(in_.b_zero)) {
      for (int64_t i = 0; i < t->size(); ++i)
        zb.push_back(t->dtype() == DType::kUInt8 ? int32_t(t->data<uint8_t>()[i]) : int32_t(t->data<int8_t>()[i]));
      args.b_zero = zb.data();
      args.b_zero_per_column = zb.size() > 1;
    }
    const Tensor& bs = *input(in_.b_scale);
    std::vector<float> scale(size_t(bs.size()));
    for (int64_t i = 0; i < bs.size(); ++i) scale[size_t(i)] = a_scale * bs.data<float>()[i];
    args.scale = scale.data();
    args.scale_per_column = scale.size() > 1;
    if (const Tensor* bias = input(in_.bias)) args.bias = bias->data<float>();
    if (p.K == 0) {  // an empty sum: the bias alone
      for (int64_t i = 0; i < y.size(); ++i) y.data<float>()[i] = args.bias ? args.bias[i % p.N] : 0.0f;
      return absl::OkStatus();
    }
    MemoryReservation reserved;
    RETURN_IF_ERROR(ctx.Grow(reserved, Int8MatMulWorkspaceSize(rows, p.K), sizeof(int16_t), "A in int16"));
    std::vector<int16_t> workspace(size_t(Int8MatMulWorkspaceSize(rows, p.K)));
    const size_t a_elem = 1;
    if (packed_) {
      args.m = rows;
      args.c = y.data<float>();
      Int8MatMulPacked(args, packed_->data.data<int8_t>(), workspace.data(), ctx.threads());
      return absl::OkStatus();
    }
    // B at run time: each matrix packed here.
    const int64_t bytes = Int8PackedBSize(p.K, p.N);
    if (bytes < 0) return ctx.Error(absl::StrCat("B of ", p.K, " x ", p.N, " is too large to pack"));
    RETURN_IF_ERROR(ctx.Grow(reserved, bytes, 1, "B packed"));
    std::vector<int8_t> packed(static_cast<size_t>(bytes));
    const int64_t calls = p.b_matrix ? 1 : p.batches;
    int64_t packed_b = -1;
    for (int64_t t = 0; t < calls; ++t) {
      int64_t oa = 0, ob = 0;
      if (!p.b_matrix) p.Offsets(t, oa, ob);
      if (ob != packed_b) {
        Int8PackB(static_cast<const char*>(b.raw()) + size_t(ob * p.K * p.N), args.b_unsigned, p.K, p.N,
                  packed.data());
        packed_b = ob;
      }
      Int8MatMulArgs call = args;
      call.a = static_cast<const char*>(args.a) + size_t(oa * p.M * p.K) * a_elem;
      call.m = rows;
      call.c = y.data<float>() + t * p.M * p.N;
      Int8MatMulPacked(call, packed.data(), workspace.data(), ctx.threads());
    }
    return absl::OkStatus();
  }

 private:
  // B in 8-bit panels (K > 0): A quantized here when dynamic, then the panel
  // product; one uninitialized allocation for both (a decode step's per-run
  // work is a few microseconds of the op's time: no per-column vectors).
  absl::Status ComputePanels(KernelContext& ctx, const Tensor& a, int64_t rows, Tensor& y) const {
    const auto input = [&](int i) -> const Tensor* {
      return i >= 0 && size_t(i) < ctx.num_inputs() ? ctx.input(size_t(i)) : nullptr;
    };
    const QuantPanels& w = panels_->buf.view;
    const int64_t work = QuantPanelsMatMulIntAWorkspace(rows, w);
    const int64_t a_bytes = dynamic_ ? (a.size() + 63) / 64 * 64 : 0;
    if (work < 0 || a_bytes > std::numeric_limits<int64_t>::max() - work)
      return ctx.Error(absl::StrCat("A of ", rows, " rows of ", w.k, " is too large"));
    MemoryReservation reserved;
    RETURN_IF_ERROR(ctx.Grow(reserved, a_bytes + work, 1, "A in int8"));
    std::unique_ptr<uint8_t[]> buf(new uint8_t[size_t(a_bytes + work)]);
    QuantPanelsIntA x;
    x.m = rows;
    if (dynamic_) {
      uint8_t zero;
      DynamicQuantizeParams(a.data<float>(), a.size(), x.a_scale, zero);
      // Rows over the threads (a prefill's A is a few MB; a decode step's one row runs here).
      const float* af = a.data<float>();
      ParallelFor(ctx.threads(), rows, WorkPerIndex{double(w.k) * 4}, [&](int64_t r0, int64_t r1) {
        QuantizeU8(af + r0 * w.k, (r1 - r0) * w.k, x.a_scale, zero, buf.get() + r0 * w.k);
      });
      x.a = buf.get();
      x.a_unsigned = true;
      x.a_zero = zero;
    } else {
      x.a = a.raw();
      x.a_unsigned = a.dtype() == DType::kUInt8;
      x.a_scale = input(in_.a_scale)->data<float>()[0];
      if (const Tensor* za = input(in_.a_zero))
        x.a_zero = x.a_unsigned ? int32_t(za->data<uint8_t>()[0]) : int32_t(za->data<int8_t>()[0]);
    }
    const Tensor* bias = input(in_.bias);
    QuantPanelsMatMulIntA(x, w, bias ? bias->data<float>() : nullptr, y.data<float>(), buf.get() + a_bytes,
                          ctx.threads(), panels_->uniform_zero());
    return absl::OkStatus();
  }

  bool dynamic_;
  Inputs in_;
  std::shared_ptr<const PackedInt8B> packed_;  // set by Prepare (a constant 2-D B, its scale or zero not)
  std::shared_ptr<const Int8Panels> panels_;   // set by Prepare (B, its scale and zero point constants)
};

}  // namespace

std::vector<OpDef> QuantizedMatMulOps() {
  return {
      {kMsDomain, "MatMulIntegerToFloat", Versions{1}, "T1 T2 T3 T3 T1? T2? T3?", "T3",
       {{"T1", Int8Types::set()}, {"T2", Int8Types::set()}, {"T3", {DType::kFloat}}},
       QuantizedMatMulOp::CreateToFloat},
      {kMsDomain, "DynamicQuantizeMatMul", Versions{1}, "T1 T2 T1 T2? T1?", "T1",
       {{"T1", {DType::kFloat}}, {"T2", Int8Types::set()}}, QuantizedMatMulOp::CreateDynamic},
  };
}

}  // namespace onnx_mini
