// Cast among the numeric element types, including the float8, float4 and
// packed integer types, with the ONNX saturation and rounding rules.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "runtime/element.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

absl::Status InferCast(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 1, 1);
  if (!in.ok()) return in.status();
  const Attribute* to = ctx.node().attr("to");
  if (to == nullptr) return ctx.Error("attribute 'to' is required");
  if (!IsValidDType(int32_t(to->i)))
    return ctx.Error(absl::StrCat("attribute 'to' = ", to->i, " is not an element type"));
  ValueType out = ctx.input(0);
  out.dtype = DType(to->i);
  ctx.set_output(0, out);
  return absl::OkStatus();
}

// CastLike: Cast to the element type of the second input.
absl::Status InferCastLike(InferContext& ctx) {
  absl::StatusOr<DType> in = CheckInputs(ctx, 2, 2);
  if (!in.ok()) return in.status();
  absl::StatusOr<DType> target = InputDType(ctx, 1);
  if (!target.ok()) return target.status();
  ValueType out = ctx.input(0);
  out.dtype = *target;
  ctx.set_output(0, out);
  return absl::OkStatus();
}

class CastKernel : public OpKernel {
 public:
  explicit CastKernel(const KernelInfo& info) {
    options_.saturate = info.node.attr_int("saturate", 1) != 0;
    const std::string mode = info.node.attr_string("round_mode", "up");
    options_.e8m0 = mode == "down" ? E8M0Rounding::kDown
                    : mode == "nearest" ? E8M0Rounding::kNearest : E8M0Rounding::kUp;
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const DType from = in.dtype(), to = out.dtype();
    if (from == to) {
      CopyElements(in, out);
      return absl::OkStatus();
    }
    const bool integer_path = IsIntegerLike(from) && IsIntegerLike(to);
    const int64_t n = in.size();
    // Packed outputs share bytes between neighbours, so they are written serially.
    const bool parallel = !Info(to).packed() && n > (1 << 16);
    VisitDType(from, [&](auto src_tag) {
      using S = typename decltype(src_tag)::type;
      VisitDType(to, [&](auto dst_tag) {
        using D = typename decltype(dst_tag)::type;
        if constexpr (!std::is_same_v<S, std::string> && !std::is_same_v<D, std::string> &&
                      !std::is_same_v<S, void> && !std::is_same_v<D, void> &&
                      !std::is_same_v<S, Complex64> && !std::is_same_v<D, Complex64> &&
                      !std::is_same_v<S, Complex128> && !std::is_same_v<D, Complex128>) {
          const S* src = in.data<S>();
          D* dst = out.data<D>();
          constexpr bool kIntegers = (std::is_integral_v<S> || kIsPacked<S>) &&
                                     (std::is_integral_v<D> || kIsPacked<D>);
          if constexpr (kIntegers) {
            if (integer_path) {
#pragma omp parallel for num_threads(ctx.threads()) if (parallel)
              for (int64_t i = 0; i < n; ++i) StoreInt(dst, to, i, LoadInt(src, from, i));
              return;
            }
          }
          {
#pragma omp parallel for num_threads(ctx.threads()) if (parallel)
            for (int64_t i = 0; i < n; ++i) StoreDouble(dst, to, i, LoadDouble(src, from, i), options_);
          }
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  CastOptions options_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateCast(const KernelInfo& info) {
  const DType from = info.inputs[0]->dtype, to = info.outputs[0] ? info.outputs[0]->dtype : from;
  if (!IsCastable(from)) return NotImplemented(info.node, LowerName(from));
  if (!IsCastable(to)) return NotImplemented(info.node, absl::StrCat(LowerName(from), " to ", LowerName(to)));
  return MakeKernel<CastKernel>(info);
}

}  // namespace

std::vector<OpDef> CastOps() {
  // Versions 6 to 25 add types (float8 with `saturate` in 19, 4-bit in 21,
  // float8e8m0 with `round_mode` in 24, 2-bit in 25); one kernel handles all.
  return {{"", "Cast", 6, 0, InferCast, CreateCast}, {"", "CastLike", 15, 0, InferCastLike, CreateCast}};
}

}  // namespace onnx_mini
