// com.microsoft FusedMatMul(A, B): Y = alpha * A' x B' (NumPy matmul shapes),
// what onnxruntime's optimizers write for MatMul with a Transpose or a Mul by
// a constant folded in. transA/transB swap a side's last two dims;
// transBatchA/transBatchB (rank > 2) move its first dim to just before the
// last: A [d0, d1.., dk] is read as [d1.., d0, dk] (then transA swaps the
// last two); with either, A and B must have one rank >= 3 (onnxruntime's
// kernel's rule). A rank-1 side ignores its flags. The transposed sides are
// copied once into place (kernels/copy) and multiplied by the MatMul kernels:
// a constant 2-D float B through the prepared GEMM (kernels/gemm/
// prepared_matmul.h, transB in its packing), oneDNN for float and bfloat16,
// the plain reference otherwise (float16 and double accumulate in float and double).
#include "kernels/copy/copy.h"
#include "kernels/gemm/onednn.h"
#include "kernels/gemm/prepared_matmul.h"
#include "ops/common.h"
#include "ops/math/matmul_plan.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

using FusedMatMulTypes = TypeList<float, Float16, BFloat16, double>;

// A side as the product reads it: its dims and the source strides of each.
struct SideView {
  Shape dims;
  std::vector<int64_t> strides;
  bool moved = false;  // not the input's own layout: copied before the product
};

SideView ViewOf(const Shape& s, bool trans, bool trans_batch) {
  SideView v;
  const int64_t r = int64_t(s.size());
  if (r < 2) {
    v.dims = s;
    v.strides.assign(s.size(), 1);
    return v;
  }
  std::vector<int64_t> st(size_t(r), 1);
  for (int64_t d = r - 2; d >= 0; --d) st[size_t(d)] = st[size_t(d + 1)] * s[size_t(d + 1)];
  std::vector<int64_t> order;
  const bool tb = trans_batch && r > 2;
  for (int64_t d = tb ? 1 : 0; d < (tb ? r - 1 : r - 2); ++d) order.push_back(d);
  int64_t row = tb ? 0 : r - 2, col = r - 1;
  if (trans) std::swap(row, col);
  order.push_back(row);
  order.push_back(col);
  for (int64_t d : order) {
    v.dims.push_back(s[size_t(d)]);
    v.strides.push_back(st[size_t(d)]);
  }
  v.moved = tb || trans;
  return v;
}

// MatMul's plan of the sides as the product reads them.
struct FusedPlan : MatMulPlan {
  SideView a, b;
};

class FusedMatMulOp : public Op {
 public:
  explicit FusedMatMulOp(const Node& node)
      : alpha_(node.attr_float("alpha", 1)),
        trans_a_(node.attr_int("transA", 0) != 0),
        trans_b_(node.attr_int("transB", 0) != 0),
        trans_batch_a_(node.attr_int("transBatchA", 0) != 0),
        trans_batch_b_(node.attr_int("transBatchB", 0) != 0) {}

  // A constant 2-D float B is packed once for the GEMM (shared with MatMul
  // nodes reading it), its original released when the packing does without it.
  absl::Status Prepare(PrepareContext& ctx) override {
    const Tensor* b = ctx.num_inputs() > 1 ? ctx.constant(1) : nullptr;
    if (!b || b->shape().size() != 2 || b->dtype() != DType::kFloat || b->raw() == nullptr) return absl::OkStatus();
    packed_ =
        PackedMatMul::Make(*b, trans_b_, Tensor(), ctx.threads(), ctx.budget(), SharedPackedB(ctx, 1, trans_b_));
    released_ = packed_ && packed_->ReleaseB();
    if (released_) ctx.release(1);
    return absl::OkStatus();
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const std::optional<Shape> sa = ctx.input(0).concrete_shape(), sb = ctx.input(1).concrete_shape();
    if (!sa || !sb) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    if (sa->empty() || sb->empty()) return ctx.Error("A and B must have rank >= 1");
    // onnxruntime's kernel asks this of transBatchA/B (its offsets assume it).
    if ((trans_batch_a_ || trans_batch_b_) && (sa->size() < 3 || sa->size() != sb->size()))
      return ctx.Error(absl::StrCat("transBatchA/transBatchB need A and B of one rank >= 3, got A ",
                                    ShapeToString(*sa), " and B ", ShapeToString(*sb)));
    auto p = std::make_shared<FusedPlan>();
    p->a = ViewOf(*sa, trans_a_, trans_batch_a_);
    p->b = ViewOf(*sb, trans_b_, trans_batch_b_);
    RETURN_IF_ERROR(PlanMatMul(ctx, p->a.dims, p->b.dims,
                               absl::StrCat("A ", ShapeToString(*sa), " read as ", ShapeToString(p->a.dims), " x B ",
                                            ShapeToString(*sb), " read as ", ShapeToString(p->b.dims)),
                               *p));
    ctx.set_output(0, ValueType::Of(out.dtype, p->output));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const FusedPlan& p = ctx.plan<FusedPlan>();
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& y = ctx.output(0);
    if (y.size() == 0) return absl::OkStatus();
    // The sides in the product's layout (copied when transposed).
    ASSIGN_OR_RETURN(Tensor a_moved, Moved(ctx, a, p.a));
    const void* pa = p.a.moved ? a_moved.raw() : a.raw();
    // A's rows are contiguous here (moved when transposed): the packed GEMM takes them.
    if (packed_ && p.K > 0 && (released_ || packed_->packs(b))) {
      const bool ran = packed_->Run(pa, y.raw(), p.batches * p.M, ctx.threads());
      if (!ran && released_)
        return absl::FailedPreconditionError(absl::StrCat(
            ctx.node().Describe(), ": B was packed for another CPU target than the one running (",
            CpuTargetName(ActiveCpuTarget()), ") and its original was released"));
      if (ran) return Scale(ctx, y);
    }
    ASSIGN_OR_RETURN(Tensor b_moved, Moved(ctx, b, p.b));
    const void* pb = p.b.moved ? b_moved.raw() : b.raw();
    RETURN_IF_ERROR(Product(ctx, p, a.dtype(), pa, pb, y));
    return Scale(ctx, y);
  }

 private:
  static absl::StatusOr<Tensor> Moved(KernelContext& ctx, const Tensor& t, const SideView& v) {
    if (!v.moved) return Tensor();
    ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(t.dtype(), v.dims));
    RETURN_IF_ERROR(CopyStrided(t.dtype(), v.dims, t.raw(), v.strides, out.raw(), {}, ctx.threads()));
    return out;
  }

  absl::Status Product(KernelContext& ctx, const FusedPlan& p, DType dt, const void* a, const void* b,
                       Tensor& y) const {
    const int64_t M = p.M, K = p.K, N = p.N;
    if (K > 0 && p.one_call &&
        OneDnnMatMul(dt, a, b, y.raw(), p.batches, p.count_a, p.count_b, M, K, N, false, false, ctx.threads()))
      return absl::OkStatus();
    return Dispatch<FusedMatMulTypes>(ctx, dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      PlainMatMul(p, static_cast<const T*>(a), static_cast<const T*>(b), y.data<T>(), ctx.threads());
    });
  }

  absl::Status Scale(KernelContext& ctx, Tensor& y) const {
    if (alpha_ == 1) return absl::OkStatus();
    return Dispatch<FusedMatMulTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      T* py = y.data<T>();
      for (int64_t i = 0; i < y.size(); ++i) py[i] = Narrow<T>(A(alpha_) * A(Widen(py[i])));
    });
  }

  float alpha_;
  bool trans_a_, trans_b_, trans_batch_a_, trans_batch_b_;
  std::unique_ptr<PackedMatMul> packed_;  // set by Prepare (a constant 2-D float B)
  bool released_ = false;
};

}  // namespace

std::vector<OpDef> FusedMatMulOps() {
  return {
      {kMsDomain, "FusedMatMul", Versions{1}, "T T", "T", {{"T", FusedMatMulTypes::set()}}, MakeOp<FusedMatMulOp>},
  };
}

}  // namespace onnx_mini
