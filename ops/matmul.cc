// MatMul with NumPy semantics (1-D promotion, broadcast batch dims) and Gemm.
// float and bfloat16 run on oneDNN when the batch dims allow one call; every
// other case runs the plain reference kernel, accumulating in float for
// 16-bit types and in the type itself otherwise.
#include "ops/common.h"
#include "ops/onednn.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

absl::Status InferMatMul(InferContext& ctx) {
  absl::StatusOr<DType> a = CheckInputs(ctx, 2, 2);
  if (!a.ok()) return a.status();
  absl::StatusOr<DType> b = InputDType(ctx, 1);
  if (!b.ok()) return b.status();
  if (*a != *b)
    return ctx.Error(absl::StrCat("inputs must have the same element type, got ", LowerName(*a), " and ", LowerName(*b)));
  ValueType out;
  out.dtype = *a;
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
    absl::StatusOr<std::vector<Dim>> batch =
        BroadcastDims(ctx, std::vector<Dim>(da.begin(), da.end() - 2), std::vector<Dim>(db.begin(), db.end() - 2));
    if (!batch.ok()) return batch.status();
    out.dims = *batch;
    if (!a_vec) out.dims->push_back(da[da.size() - 2]);
    if (!b_vec) out.dims->push_back(db.back());
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class MatMulKernel : public OpKernel {
 public:
  explicit MatMulKernel(const KernelInfo&) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    Tensor& out = ctx.output(0);
    Shape sa = a.shape(), sb = b.shape();
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
    Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    Shape batch(std::max(batch_a.size(), batch_b.size()), 1);
    for (size_t i = 0; i < batch.size(); ++i) {
      const size_t ia = i + batch_a.size() - batch.size(), ib = i + batch_b.size() - batch.size();
      const int64_t x = i + batch_a.size() >= batch.size() ? batch_a[ia] : 1;
      const int64_t y = i + batch_b.size() >= batch.size() ? batch_b[ib] : 1;
      batch[i] = x == 1 ? y : x;
    }
    const std::vector<int64_t> stride_a = BroadcastStrides(batch_a, batch);
    const std::vector<int64_t> stride_b = BroadcastStrides(batch_b, batch);
    const int64_t batches = ElementCount(batch);
    // The matrices of A and B that output batch t multiplies.
    auto batch_offsets = [&](int64_t t, int64_t& off_a, int64_t& off_b) {
      off_a = off_b = 0;
      for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
        const int64_t idx = t % batch[size_t(d)];
        t /= batch[size_t(d)];
        off_a += idx * stride_a[size_t(d)];
        off_b += idx * stride_b[size_t(d)];
      }
    };
    // oneDNN takes each side's batch as either complete or a single matrix.
    const int64_t count_a = ElementCount(batch_a), count_b = ElementCount(batch_b);
    const bool whole_a = count_a == 1 || batch_a == batch;
    const bool whole_b = count_b == 1 || batch_b == batch;
    if (whole_a && whole_b &&
        OneDnnMatMul(a.dtype(), a.raw(), b.raw(), out.raw(), batches, count_a, count_b, M, K, N, false, false,
                     ctx.threads()))
      return absl::OkStatus();
    // Mixed broadcasting (e.g. (4,1,M,K) x (2,K,N)): one oneDNN call per output batch.
    if (batches > 0 && OneOf(a.dtype(), {DType::kFloat, DType::kBFloat16})) {
      const size_t elem = size_t(Info(a.dtype()).bits / 8);
      bool done = true;
      for (int64_t t = 0; t < batches && done; ++t) {
        int64_t off_a, off_b;
        batch_offsets(t, off_a, off_b);
        done = OneDnnMatMul(a.dtype(), static_cast<const char*>(a.raw()) + size_t(off_a * M * K) * elem,
                            static_cast<const char*>(b.raw()) + size_t(off_b * K * N) * elem,
                            static_cast<char*>(out.raw()) + size_t(t * M * N) * elem, 1, 1, 1, M, K, N, false, false,
                            ctx.threads());
      }
      if (done) return absl::OkStatus();
    }
    VisitDType(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsArithmetic<T>) {
        using A = typename Arith<T>::type;
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
        T* po = out.data<T>();
#pragma omp parallel for num_threads(ctx.threads()) if (batches * M * N * K > (1 << 18))
        for (int64_t t = 0; t < batches * M; ++t) {
          const int64_t bi = t / M, m = t % M;
          int64_t off_a, off_b;
          batch_offsets(bi, off_a, off_b);
          const T* row = pa + (off_a * M + m) * K;
          const T* mat = pb + off_b * K * N;
          std::vector<A> acc(size_t(N), A(0));
          for (int64_t k = 0; k < K; ++k) {
            const A x = A(Widen(row[k]));
            const T* brow = mat + k * N;
            for (int64_t n = 0; n < N; ++n) acc[size_t(n)] += x * A(Widen(brow[n]));
          }
          for (int64_t n = 0; n < N; ++n) po[(bi * M + m) * N + n] = Narrow<T>(acc[size_t(n)]);
        }
      }
    });
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateMatMul(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
                                          DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64});
  if (!s.ok()) return s;
  return MakeKernel<MatMulKernel>(info);
}

// ---- Gemm: Y = alpha * A' B' + beta * C ----

absl::Status InferGemm(InferContext& ctx) {
  absl::StatusOr<DType> dtype = CheckInputs(ctx, 2, 3);
  if (!dtype.ok()) return dtype.status();
  ValueType out;
  out.dtype = *dtype;
  const ValueType& a = ctx.input(0);
  const ValueType& b = ctx.input(1);
  if (a.dims && b.dims) {
    if (a.rank() != 2 || b.rank() != 2) return ctx.Error(absl::StrCat("A and B must be 2-D, got ", a.ToString(), " and ", b.ToString()));
    const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
    const Dim m = (*a.dims)[ta ? 1 : 0], ka = (*a.dims)[ta ? 0 : 1];
    const Dim kb = (*b.dims)[tb ? 1 : 0], n = (*b.dims)[tb ? 0 : 1];
    if (ka.known() && kb.known() && ka.value != kb.value)
      return ctx.Error(absl::StrCat("inner dimensions differ: ", a.ToString(), " x ", b.ToString()));
    out.dims = std::vector<Dim>{m, n};
    if (ctx.has_input(2) && ctx.input(2).dims) {
      absl::StatusOr<std::vector<Dim>> dims = BroadcastDims(ctx, *out.dims, *ctx.input(2).dims);
      if (!dims.ok()) return dims.status();
      if (dims->size() != 2) return ctx.Error("C must broadcast to (M, N)");
    }
  }
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class GemmKernel : public OpKernel {
 public:
  explicit GemmKernel(const KernelInfo& info)
      : alpha_(info.node.attr_float("alpha", 1)), beta_(info.node.attr_float("beta", 1)),
        trans_a_(info.node.attr_int("transA", 0) != 0), trans_b_(info.node.attr_int("transB", 0) != 0) {}
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    const Tensor* c = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    const int64_t M = y.dim(0), N = y.dim(1), K = trans_a_ ? a.dim(0) : a.dim(1);
    const std::vector<int64_t> cs = c ? BroadcastStrides(c->shape(), y.shape()) : std::vector<int64_t>{0, 0};
    if (OneDnnMatMul(a.dtype(), a.raw(), b.raw(), y.raw(), 1, 1, 1, M, K, N, trans_a_, trans_b_, ctx.threads())) {
      if (alpha_ == 1 && (c == nullptr || beta_ == 0)) return absl::OkStatus();
      VisitDType(a.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
          T* py = y.data<T>();
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              float v = alpha_ * float(Widen(py[m * N + n]));
              if (c) v += beta_ * float(Widen(c->data<T>()[m * cs[0] + n * cs[1]]));
              py[m * N + n] = Narrow<T>(v);
            }
        }
      });
      return absl::OkStatus();
    }
    VisitDType(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kIsArithmetic<T>) {
        using A = typename Arith<T>::type;
        const T* pa = a.data<T>();
        const T* pb = b.data<T>();
#pragma omp parallel for num_threads(ctx.threads()) if (M * N * K > (1 << 18))
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            A acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc += A(Widen(pa[trans_a_ ? k * M + m : m * K + k])) * A(Widen(pb[trans_b_ ? n * K + k : k * N + n]));
            A v = A(alpha_) * acc;
            if (c) v += A(beta_) * A(Widen(c->data<T>()[m * cs[0] + n * cs[1]]));
            y.data<T>()[m * N + n] = Narrow<T>(v);
          }
      }
    });
    return absl::OkStatus();
  }

 private:
  float alpha_, beta_;
  bool trans_a_, trans_b_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateGemm(const KernelInfo& info) {
  absl::Status s = RequireDType(info, 0, {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16,
                                          DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64});
  if (!s.ok()) return s;
  return MakeKernel<GemmKernel>(info);
}

}  // namespace

std::vector<OpDef> MatMulOps() {
  return {{"", "MatMul", 1, 0, InferMatMul, CreateMatMul}, {"", "Gemm", 7, 0, InferGemm, CreateGemm}};
}

}  // namespace onnx_mini
