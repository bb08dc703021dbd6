// BitCast (26): the input's bytes reinterpreted as another element type of
// the same width, shape unchanged.
#include <cstring>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// Every type but strings (BitCast's T1 and T2).
using BitCastTypes = Join<Join<NumericTypes, TypeList<bool, Complex64, Complex128, Float8E8M0>>,
                          Join<Float8Types, PackedTypes>>;

class BitCastOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const Attribute* to = node.attr("to");
    if (to == nullptr || to->type != AttrType::kInt)
      return absl::InvalidArgumentError(node.Describe() + ": attribute 'to' (an element type) is required");
    if (!IsValidDType(int32_t(to->i)) || !BitCastTypes::set().contains(DType(to->i)))
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": attribute 'to' = ", to->i, " is not a non-string element type"));
    return std::unique_ptr<Op>(new BitCastOp(DType(to->i)));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType from = ctx.input(0).dtype;
    if (Info(from).bits != Info(to_).bits)
      return ctx.Error(absl::StrCat("BitCast needs types of one bit width: ", LowerName(from), " has ", Info(from).bits,
                                    " bits, ", LowerName(to_), " has ", Info(to_).bits));
    ValueType out = ctx.input(0);
    out.dtype = to_;
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.raw() != in.raw() && in.bytes() > 0) std::memcpy(out.raw(), in.raw(), in.bytes());
    // A bool byte must be 0 or 1: any other pattern reads as true.
    if (to_ == DType::kBool) {
      uint8_t* bytes = static_cast<uint8_t*>(out.raw());
      for (int64_t i = 0; i < out.size(); ++i) bytes[i] = bytes[i] != 0;
    }
    return absl::OkStatus();
  }

 private:
  explicit BitCastOp(DType to) : to_(to) {}
  DType to_;
};

}  // namespace

std::vector<OpDef> BitCastOps() {
  const TypeSet types = BitCastTypes::set();
  return {
      {kOnnxDomain, "BitCast", Versions{26}, "T1", "T2", {{"T1", types}, {"T2", types}}, BitCastOp::Create,
       InPlace(Out{0}, In{0})},
  };
}

}  // namespace onnx_mini
