// SwiGLU-28: Y = Swish_alpha(A) * B = A * Sigmoid(alpha * A) * B, the gated
// activation of Llama-style MLPs. A and B have identical shapes (the schema
// forbids broadcasting). 16-bit types compute in float and round once.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/vec/sigmoid.h"
#include "kernels/vec/elementwise.h"
#include "kernels/vec/vec_math.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

class SwiGLUOp : public Op {
 public:
  explicit SwiGLUOp(const Node& node) : alpha_(node.attr_float("alpha", 1.0f)) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& a = ctx.input(0);
    const ValueType& b = ctx.input(1);
    ValueType out = a;
    if (a.dims && b.dims) {
      if (a.rank() != b.rank())
        return ctx.Error(absl::StrCat("A ", a.ToString(), " and B ", b.ToString(),
                                      " must have identical shapes (SwiGLU does not broadcast)"));
      for (size_t d = 0; d < a.dims->size(); ++d) {
        const Dim& x = (*a.dims)[d];
        const Dim& y = (*b.dims)[d];
        if (x.known() && y.known() && x.value != y.value)
          return ctx.Error(absl::StrCat("A ", a.ToString(), " and B ", b.ToString(),
                                        " must have identical shapes (SwiGLU does not broadcast); dim ", d,
                                        " differs"));
        if (!x.known() && y.known()) (*out.dims)[d] = y;
      }
    } else if (!a.dims) {
      out.dims = b.dims;
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& a = *ctx.input(0);
    const Tensor& b = *ctx.input(1);
    // With unknown dims at creation, Infer ran on the real shapes: they agree here.
    Tensor& y = ctx.output(0);
    return Dispatch<FloatTypes>(ctx, a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = y.data<T>();
      const A alpha = A(alpha_);
      const int64_t n = a.size();
      if constexpr (std::is_same_v<T, float>) {
        if (alpha_ == 1.0f) {
          // SiLU by the vector kernel (as Swish computes it), then the product,
          // a chunk at a time while it is in L1: the same values as Swish and
          // Mul (RewriteSwiGlu's pattern), in one pass. y may be a's storage.
          ParallelElements(n, ctx.threads(), [&](int64_t i0, int64_t i1) {
            constexpr int64_t kChunk = 4096;  // 16 KB of y, in L1 for the product
            for (int64_t i = i0; i < i1; i += kChunk) {
              const int64_t len = std::min(kChunk, i1 - i);
              VecSilu(pa + i, py + i, len);
              VecBinary(VecBinaryKind::kMul, py + i, 1, pb + i, 1, py + i, len);
            }
          });
          return;
        }
      }
      ParallelFor(ctx.threads(), n, WorkPerIndex{1},
                  [&](int64_t i_begin, int64_t i_end) { for (int64_t i = i_begin; i < i_end; ++i) {
        const A x = Widen(pa[i]);
        py[i] = Narrow<T>(x * Sigmoid(alpha * x) * Widen(pb[i]));
      }});
    });
  }

 private:
  float alpha_;
};

}  // namespace

std::vector<OpDef> SwiGLUOps() {
  return {{kOnnxDomain, "SwiGLU", Versions{28}, "T T", "T", {{"T", kFloatTypes}}, MakeOp<SwiGLUOp>,
           InPlace(Out{0}, In{0})}};
}

}  // namespace onnx_mini
