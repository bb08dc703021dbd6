// Constant: a tensor given by exactly one attribute.
#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// The tensor a Constant node holds, built from whichever attribute is set.
absl::StatusOr<Tensor> ConstantValue(const Node& node) {
  auto error = [&](const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
  };
  if (node.attributes.size() != 1)
    return error(absl::StrCat("needs exactly one value attribute, got ", node.attributes.size()));
  const Attribute& a = node.attributes.begin()->second;
  const std::string& key = a.name;
  if (key == "value") {
    if (!a.t.defined()) return error("attribute 'value' holds no tensor");
    return a.t;
  }
  if (key == "value_float") return Tensor::FromVector<float>({a.f}, {});
  if (key == "value_floats") return Tensor::FromVector<float>(a.floats, {int64_t(a.floats.size())});
  if (key == "value_int") return Tensor::FromVector<int64_t>({a.i}, {});
  if (key == "value_ints") return Tensor::FromVector<int64_t>(a.ints, {int64_t(a.ints.size())});
  if (key == "value_string") return Tensor::FromVector<std::string>({a.s}, {});
  if (key == "value_strings")
    return Tensor::FromVector<std::string>(a.strings, {int64_t(a.strings.size())});
  if (key == "sparse_value") return NotImplemented(node, "sparse_value");
  return error(absl::StrCat("unknown attribute '", key, "'"));
}

// The value is parsed once; sessions fold the node at creation.
class ConstantOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(Tensor value, ConstantValue(node));
    return std::unique_ptr<Op>(new ConstantOp(std::move(value)));
  }
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ValueType::Of(value_.dtype(), value_.shape()));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    CopyElements(value_, ctx.output(0));
    return absl::OkStatus();
  }

 private:
  explicit ConstantOp(Tensor value) : value_(std::move(value)) {}
  Tensor value_;
};

}  // namespace

std::vector<OpDef> ConstantOps() {
  return {{kOnnxDomain, "Constant", Versions{1}, "", "T", {{"T", kUnpackedTypes}}, ConstantOp::Create}};
}

}  // namespace onnx_mini
