// com.microsoft Gelu, FastGelu (optional bias), QuickGelu (alpha) and BiasGelu:
// onnxruntime's GELU family (kernels/activation/gelu.h). 16-bit inputs compute
// in float (the bias added in float) and round once, as onnxruntime's kernels.
#include <algorithm>

#include "kernels/activation/gelu.h"
#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

class GeluFamilyOp : public Op {
 public:
  GeluFamilyOp(const Node& node, GeluKind kind) {
    problem_.kind = kind;
    problem_.alpha = node.attr_float("alpha", 1.702f);
  }

  // The bias, when given, is 1-D of the input's last dim (onnxruntime's rule).
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ctx.set_output(0, x);
    if (!ctx.has_input(1) || !x.dims || !ctx.input(1).dims) return absl::OkStatus();
    const ValueType& b = ctx.input(1);
    if (x.dims->empty())
      return ctx.Error(absl::StrCat("input ", x.ToString(), " must have a last dim for the bias to add along"));
    const Dim& last = x.dims->back();
    if (b.dims->size() != 1 || ((*b.dims)[0].known() && last.known() && (*b.dims)[0].value != last.value))
      return ctx.Error(absl::StrCat("bias ", b.ToString(), " must be 1-D of the input's last dim (input ",
                                    x.ToString(), ")"));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor* bias = ctx.num_inputs() > 1 ? ctx.input(1) : nullptr;
    Tensor& y = ctx.output(0);
    const int64_t n = x.size();
    if (n == 0) return absl::OkStatus();
    GeluProblem p = problem_;
    p.bias_len = bias ? bias->size() : 0;
    if (p.bias_len == 0 && bias) return absl::OkStatus();  // a last dim of 0: nothing to compute
    const double work = problem_.kind == GeluKind::kQuick ? 16 : 24;  // per element, vector units
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* pb = bias ? bias->data<T>() : nullptr;
      T* py = y.data<T>();
      ParallelFor(ctx.threads(), n, WorkPerIndex{work}, [&](int64_t i0, int64_t i1) {
        if constexpr (std::is_same_v<T, float>) {
          GeluF32(p, px, pb, py, i0, i1);
        } else {
          // 16-bit (and double, never admitted): widened (bias added) a chunk at a time.
          constexpr int64_t kChunk = 256;
          float buf[kChunk];
          GeluProblem q = p;
          q.bias_len = 0;
          for (int64_t c = i0; c < i1; c += kChunk) {
            const int64_t len = std::min(kChunk, i1 - c);
            if constexpr (std::is_same_v<T, Float16>) Float16ToFloat(px + c, buf, len);  // F16C where active
            else
              for (int64_t j = 0; j < len; ++j) buf[j] = float(Widen(px[c + j]));
            if (pb)
              for (int64_t j = 0; j < len; ++j) buf[j] += float(Widen(pb[(c + j) % p.bias_len]));
            GeluF32(q, buf, nullptr, buf, 0, len);
            if constexpr (std::is_same_v<T, Float16>) FloatToFloat16(buf, py + c, len);
            else
              for (int64_t j = 0; j < len; ++j) py[c + j] = Narrow<T>(typename Arith<T>::type(buf[j]));
          }
        }
      });
    });
  }

 private:
  GeluProblem problem_;
};

template <GeluKind kKind>
absl::StatusOr<std::unique_ptr<Op>> MakeGelu(const Node& node) {
  return std::unique_ptr<Op>(new GeluFamilyOp(node, kKind));
}

}  // namespace

std::vector<OpDef> GeluOps() {
  // onnxruntime's CPU kernels take float and float16; bfloat16 costs nothing here.
  const TypeConstraint t = {"T", {DType::kFloat, DType::kFloat16, DType::kBFloat16}};
  return {
      {kMsDomain, "Gelu", Versions{1}, "T", "T", {t}, MakeGelu<GeluKind::kErf>},
      {kMsDomain, "BiasGelu", Versions{1}, "T T", "T", {t}, MakeGelu<GeluKind::kErf>},
      {kMsDomain, "FastGelu", Versions{1}, "T T?", "T", {t}, MakeGelu<GeluKind::kTanh>},
      {kMsDomain, "QuickGelu", Versions{1}, "T", "T", {t}, MakeGelu<GeluKind::kQuick>},
  };
}

}  // namespace onnx_mini
