// MatMul with NumPy semantics (1-D promotion, broadcast batch dims) and Gemm.
// A constant 2-D B in float runs our own kernels (kernels/gemm/prepared_matmul.h:
// the packed GEMM on AVX-512, the GEMV for a few rows), bfloat16 and the
// remaining float cases oneDNN; every other case runs the plain reference
// kernel, accumulating in float for 16-bit types and in the type itself otherwise.
#include "ops/common.h"
#include "kernels/gemm/onednn.h"
#include "kernels/gemm/prepared_matmul.h"
#include "ops/math/matmul_plan.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// The types of MatMul-13 and Gemm-13.
using MatMulTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;
// The types oneDNN runs here.
using OneDnnTypes = TypeList<float, BFloat16>;

// A product whose B was released: the packed form is all there is.
absl::Status RunReleased(KernelContext& ctx, const PackedMatMul& packed, const void* a, void* c, int64_t m) {
  if (m == 0 || packed.Run(a, c, m, ctx.threads())) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      ctx.node().Describe(), ": B was packed for another CPU target than the one running (",
      CpuTargetName(ActiveCpuTarget()), ") and its original was released"));
}

// MatMul, and the internal onnx_mini::FusedMatMul (runtime/rewrite/matmul_bias.cc makes
// it from MatMul + Add): MatMul(A, B) + bias, bias 1-D of B's N columns.
class MatMulOp : public Op {
 public:
  explicit MatMulOp(const Node&) {}

  // A constant 2-D B is prepared once (float, bfloat16), with a constant
  // bias; B's original is released when the packed form does without it.
  absl::Status Prepare(PrepareContext& ctx) override {
    const Tensor* bias = ctx.num_inputs() > 2 ? ctx.constant(2) : nullptr;
    if (ctx.num_inputs() > 2 && !bias) return absl::OkStatus();  // a run-time bias: the plain path
    const Tensor* b = ctx.num_inputs() > 1 ? ctx.constant(1) : nullptr;
    if (b && b->shape().size() == 2) {
      packed_ = PackedMatMul::Make(*b, false, bias ? *bias : Tensor(), ctx.threads(), ctx.budget(),
                                   SharedPackedB(ctx, 1, false));
      released_ = packed_ && packed_->ReleaseB();
      if (released_) ctx.release(1);
    }
    return absl::OkStatus();
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const ValueType& ta = ctx.input(0);
    const ValueType& tb = ctx.input(1);
    if (ta.dims && tb.dims) {
      std::vector<Dim> da = *ta.dims, db = *tb.dims;
      if (da.empty() || db.empty()) return ctx.Error("MatMul inputs must have rank >= 1");
      const bool a_vec = da.size() == 1, b_vec = db.size() == 1;
      if (a_vec) da.insert(da.begin(), Dim::Known(1));
      if (b_vec) db.push_back(Dim::Known(1));
      const Dim& k1 = da.back();
      const Dim& k2 = db[db.size() - 2];
      if (k1.known() && k2.known() && k1.value != k2.value)
        return ctx.Error(absl::StrCat("inner dimensions differ: ", ta.ToString(), " x ", tb.ToString()));
      ASSIGN_OR_RETURN(out.dims, BroadcastDims(ctx, std::vector<Dim>(da.begin(), da.end() - 2),
                                               std::vector<Dim>(db.begin(), db.end() - 2)));
      if (!a_vec) out.dims->push_back(da[da.size() - 2]);
      if (!b_vec) out.dims->push_back(db.back());
      const std::optional<Shape> sa = ta.concrete_shape(), sb = tb.concrete_shape();
      if (sa && sb) {
        auto p = std::make_shared<MatMulPlan>();
        RETURN_IF_ERROR(PlanMatMul(ctx, *sa, *sb, absl::StrCat(ta.ToString(), " x ", tb.ToString()), *p));
        ctx.set_plan(std::move(p));
      }
    }
    if (ctx.has_input(2)) {  // FusedMatMul's bias: 1-D, N elements
      const ValueType& bias = ctx.input(2);
      if (bias.dims && bias.dims->size() != 1)
        return ctx.Error(absl::StrCat("the bias must be 1-D, got ", bias.ToString()));
      const Dim n = tb.dims && !tb.dims->empty() ? (tb.dims->size() == 1 ? Dim::Known(1) : tb.dims->back()) : Dim{};
      if (bias.dims && (*bias.dims)[0].known() && n.known() && (*bias.dims)[0].value != n.value)
        return ctx.Error(absl::StrCat("the bias has ", (*bias.dims)[0].value, " elements, B has ", n.value, " columns"));
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const MatMulPlan& p = ctx.plan<MatMulPlan>();
    const Tensor* bias = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    // B 2-D: A's batches are rows of one product.
    if (released_) return RunReleased(ctx, *packed_, a.raw(), out.raw(), p.batches * p.M);
    if (packed_ && packed_->packs(b) && packed_->has_bias() == (bias != nullptr) && a.shape().size() >= 2 &&
        packed_->Run(a.raw(), out.raw(), p.batches * p.M, ctx.threads()))
      return absl::OkStatus();
    RETURN_IF_ERROR(Product(ctx, a, b, out, p));
    if (bias == nullptr || out.size() == 0) return absl::OkStatus();
    return Dispatch<MatMulTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pb = bias->data<T>();
      T* po = out.data<T>();
      const int64_t n = bias->size();
      for (int64_t i = 0; i < out.size(); ++i) po[i] = Narrow<T>(Widen(po[i]) + Widen(pb[i % n]));
    });
  }

 private:
  // out = A x B.
  absl::Status Product(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out, const MatMulPlan& p) const {
    const int64_t M = p.M, K = p.K, N = p.N;
    if (p.one_call && OneDnnMatMul(a.dtype(), a.raw(), b.raw(), out.raw(), p.batches, p.count_a, p.count_b, M, K, N,
                                   false, false, ctx.threads()))
      return absl::OkStatus();
    // Mixed broadcasting (e.g. (4,1,M,K) x (2,K,N)): one oneDNN call per output batch.
    if (p.batches > 0 && OneDnnTypes::set().contains(a.dtype())) {
      const size_t elem = size_t(Info(a.dtype()).bits / 8);
      bool done = true;
      for (int64_t t = 0; t < p.batches && done; ++t) {
        int64_t off_a, off_b;
        p.Offsets(t, off_a, off_b);
        done = OneDnnMatMul(a.dtype(), static_cast<const char*>(a.raw()) + size_t(off_a * M * K) * elem,
                            static_cast<const char*>(b.raw()) + size_t(off_b * K * N) * elem,
                            static_cast<char*>(out.raw()) + size_t(t * M * N) * elem, 1, 1, 1, M, K, N, false, false,
                            ctx.threads());
      }
      if (done) return absl::OkStatus();
    }
    return Dispatch<MatMulTypes>(ctx, a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      PlainMatMul(p, a.data<T>(), b.data<T>(), out.data<T>(), ctx.threads());
    });
  }

  std::unique_ptr<PackedMatMul> packed_;  // set by Prepare, read-only after
  bool released_ = false;                 // B's original released: packed_ alone computes
};

// ---- Gemm: Y = alpha * A' B' + beta * C ----

struct GemmPlan : OpPlan {
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> c_strides = {0, 0};  // C broadcast to (M, N)
};

class GemmOp : public Op {
 public:
  explicit GemmOp(const Node& node)
      : alpha_(node.attr_float("alpha", 1)), beta_(node.attr_float("beta", 1)),
        trans_a_(node.attr_int("transA", 0) != 0), trans_b_(node.attr_int("transB", 0) != 0),
        c_exact_(node.opset < 7 && node.attr_int("broadcast", 0) == 0) {}

  // A constant B is prepared once, with a constant C as its bias when
  // Y = A' B' + C with C of N elements; B's original is released when the
  // packed form does without it.
  absl::Status Prepare(PrepareContext& ctx) override {
    if (trans_a_ || ctx.num_inputs() < 2 || !ctx.constant(1)) return absl::OkStatus();
    const Tensor& b = *ctx.constant(1);
    if (b.shape().size() != 2) return absl::OkStatus();
    const Tensor* c = ctx.num_inputs() > 2 ? ctx.constant(2) : nullptr;
    const int64_t n = b.shape()[trans_b_ ? 0 : 1];
    const bool bias = c && alpha_ == 1 && beta_ == 1 && c->size() == n &&
                      (c->shape() == Shape{n} || c->shape() == Shape{1, n});
    packed_ = PackedMatMul::Make(b, trans_b_, bias ? *c : Tensor(), ctx.threads(), ctx.budget(),
                                 SharedPackedB(ctx, 1, trans_b_));
    released_ = packed_ && packed_->ReleaseB();
    if (released_) ctx.release(1);
    return absl::OkStatus();
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    const ValueType& a = ctx.input(0);
    const ValueType& b = ctx.input(1);
    if (a.dims && b.dims) {
      if (a.rank() != 2 || b.rank() != 2)
        return ctx.Error(absl::StrCat("A and B must be 2-D, got ", a.ToString(), " and ", b.ToString()));
      const Dim m = (*a.dims)[trans_a_ ? 1 : 0], ka = (*a.dims)[trans_a_ ? 0 : 1];
      const Dim kb = (*b.dims)[trans_b_ ? 1 : 0], n = (*b.dims)[trans_b_ ? 0 : 1];
      if (ka.known() && kb.known() && ka.value != kb.value)
        return ctx.Error(absl::StrCat("inner dimensions differ: ", a.ToString(), " x ", b.ToString()));
      out.dims = std::vector<Dim>{m, n};
      if (ctx.has_input(2) && ctx.input(2).dims) {
        ASSIGN_OR_RETURN(std::vector<Dim> dims, BroadcastDims(ctx, *out.dims, *ctx.input(2).dims));
        if (dims.size() != 2) return ctx.Error("C must broadcast to (M, N)");
        // Before opset 7, C broadcasts only with broadcast = 1.
        const std::vector<Dim>& c = *ctx.input(2).dims;
        bool exact = c.size() == 2;
        for (size_t k = 0; exact && k < 2; ++k)
          exact = !(c[k].known() && (*out.dims)[k].known() && c[k].value != (*out.dims)[k].value);
        if (c_exact_ && !exact)
          return ctx.Error(absl::StrCat("without broadcast = 1 (opset ", ctx.opset(), ") C must have shape ",
                                        DimsToString(*out.dims), ", got ", ctx.input(2).ToString()));
      }
      std::optional<Shape> y = out.concrete_shape();
      const bool c_known = !ctx.has_input(2) || ctx.input(2).concrete_shape();
      if (y && ka.known() && c_known) {
        auto plan = std::make_shared<GemmPlan>();
        plan->M = (*y)[0];
        plan->N = (*y)[1];
        plan->K = ka.value;
        if (ctx.has_input(2)) plan->c_strides = BroadcastStrides(*ctx.input(2).concrete_shape(), *y);
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const Tensor* c = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    const GemmPlan& p = ctx.plan<GemmPlan>();
    const int64_t M = p.M, N = p.N, K = p.K;
    const std::vector<int64_t>& cs = p.c_strides;
    if (released_) {
      RETURN_IF_ERROR(RunReleased(ctx, *packed_, a.raw(), y.raw(), M));
      if (packed_->has_bias() || (alpha_ == 1 && (c == nullptr || beta_ == 0))) return absl::OkStatus();
      return Scale(ctx, y, c, p);
    }
    if (packed_ && packed_->packs(b) && (!packed_->has_bias() || c != nullptr) &&
        packed_->Run(a.raw(), y.raw(), M, ctx.threads())) {
      if (packed_->has_bias()) return absl::OkStatus();  // alpha = beta = 1, C added
      if (alpha_ == 1 && (c == nullptr || beta_ == 0)) return absl::OkStatus();
      return Scale(ctx, y, c, p);
    }
    if (OneDnnMatMul(a.dtype(), a.raw(), b.raw(), y.raw(), 1, 1, 1, M, K, N, trans_a_, trans_b_, ctx.threads())) {
      if (alpha_ == 1 && (c == nullptr || beta_ == 0)) return absl::OkStatus();
      return Scale(ctx, y, c, p);
    }
    return Dispatch<MatMulTypes>(ctx, a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      ParallelFor(ctx.threads(), M, WorkPerIndex{double(N) * double(K) / 4},
                  [&](int64_t m_begin, int64_t m_end) { for (int64_t m = m_begin; m < m_end; ++m)
        for (int64_t n = 0; n < N; ++n) {
          A acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += A(Widen(pa[trans_a_ ? k * M + m : m * K + k])) * A(Widen(pb[trans_b_ ? n * K + k : k * N + n]));
          A v = A(alpha_) * acc;
          if (c) v += A(beta_) * A(Widen(c->data<T>()[m * cs[0] + n * cs[1]]));
          y.data<T>()[m * N + n] = Narrow<T>(v);
        }});
    });
  }

 private:
  // Y = alpha * Y + beta * C, after oneDNN wrote A' B' into Y.
  absl::Status Scale(KernelContext& ctx, Tensor& y, const Tensor* c, const GemmPlan& p) const {
    const int64_t M = p.M, N = p.N;
    const std::vector<int64_t>& cs = p.c_strides;
    return Dispatch<OneDnnTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* py = y.data<T>();
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          float v = alpha_ * float(Widen(py[m * N + n]));
          if (c) v += beta_ * float(Widen(c->data<T>()[m * cs[0] + n * cs[1]]));
          py[m * N + n] = Narrow<T>(v);
        }
    });
  }

  float alpha_, beta_;
  bool trans_a_, trans_b_, c_exact_;
  std::unique_ptr<PackedMatMul> packed_;  // set by Prepare, read-only after
  bool released_ = false;                 // B's original released: packed_ alone computes
};

}  // namespace

std::vector<OpDef> MatMulOps() {
  const std::vector<TypeConstraint> t = {{"T", MatMulTypes::set()}};
  return {
      {kOnnxDomain, "MatMul", Versions{1}, "T T", "T", t, MakeOp<MatMulOp>},
      // Internal: MatMul(A, B) + bias (1-D, N), made by the graph rewrites.
      {kInternalDomain, "FusedMatMul", Versions{1}, "T T T", "T", t, MakeOp<MatMulOp>},
      // C is required before opset 11.
      {kOnnxDomain, "Gemm", Versions{1, 10}, "T T T", "T", t, MakeOp<GemmOp>},
      {kOnnxDomain, "Gemm", Versions{11}, "T T T?", "T", t, MakeOp<GemmOp>},
  };
}

}  // namespace onnx_mini
