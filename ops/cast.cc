// Cast among the numeric element types, including the float8, float4 and
// packed integer types, with the ONNX saturation and rounding rules.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "runtime/element.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// Every type Cast converts between: numbers, bool, the float8 and packed
// types (not strings or complex numbers).
using CastTypes = Join<Join<NumericTypes, TypeList<bool, Float8E8M0>>, Join<Float8Types, PackedTypes>>;

// Cast to the type `to` (Cast), or to the element type of input 1 (CastLike).
class CastOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    CastOptions options;
    options.saturate = node.attr_int("saturate", 1) != 0;
    const std::string mode = node.attr_string("round_mode", "up");
    if (mode != "up" && mode != "down" && mode != "nearest")
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": round_mode '", mode, "' is not up, down or nearest"));
    options.e8m0 = mode == "down" ? E8M0Rounding::kDown : mode == "nearest" ? E8M0Rounding::kNearest : E8M0Rounding::kUp;
    DType to = DType::kUndefined;
    if (node.op_type == "Cast") {
      const Attribute* attr = node.attr("to");
      if (attr == nullptr) return absl::InvalidArgumentError(node.Describe() + ": attribute 'to' is required");
      if (attr->type == AttrType::kString) {  // Cast-1 to 5 name the type: "FLOAT"
        for (int32_t code = 1; code <= kMaxDTypeCode; ++code)
          if (attr->s == Name(DType(code))) to = DType(code);
        if (to == DType::kUndefined)
          return absl::InvalidArgumentError(
              absl::StrCat(node.Describe(), ": attribute 'to' = '", attr->s, "' is not an element type"));
        return std::unique_ptr<Op>(new CastOp(options, to));
      }
      if (!IsValidDType(int32_t(attr->i)))
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": attribute 'to' = ", attr->i, " is not an element type"));
      to = DType(attr->i);
    }
    return std::unique_ptr<Op>(new CastOp(options, to));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out = ctx.input(0);
    out.dtype = to_ != DType::kUndefined ? to_ : ctx.input(1).dtype;
    ctx.set_output(0, out);
    return absl::OkStatus();
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
    absl::Status inner = absl::OkStatus();
    const absl::Status outer = Dispatch<CastTypes>(ctx, from, [&](auto src_tag) {
      using S = typename decltype(src_tag)::type;
      inner = Dispatch<CastTypes>(ctx, to, [&](auto dst_tag) {
        using D = typename decltype(dst_tag)::type;
        const S* src = in.data<S>();
        D* dst = out.data<D>();
        constexpr bool kIntegers = (std::is_integral_v<S> || kIsPacked<S>) && (std::is_integral_v<D> || kIsPacked<D>);
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
      });
    });
    return outer.ok() ? inner : outer;
  }

 private:
  CastOp(CastOptions options, DType to) : options_(options), to_(to) {}
  CastOptions options_;
  DType to_;  // kUndefined for CastLike
};

}  // namespace

std::vector<OpDef> CastOps() {
  // Versions 6 to 25 add types (float8 with `saturate` in 19, 4-bit in 21,
  // float8e8m0 with `round_mode` in 24, 2-bit in 25); one kernel handles all.
  const TypeSet types = CastTypes::set();
  return {
      {"", "Cast", 1, 0, "T1", "T2", {{"T1", types}, {"T2", types}}, CastOp::Create},
      {"", "CastLike", 15, 0, "T1 T2", "T2", {{"T1", types}, {"T2", types}}, CastOp::Create},
  };
}

}  // namespace onnx_mini
