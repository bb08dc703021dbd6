// What an operator provides: a shape function, which validates a node's inputs
// and attributes and derives its outputs, and a kernel, which computes. The
// shape function runs at session creation on what is known then, and again at
// every run on the real inputs, so kernels only ever see validated inputs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/graph.h"

namespace onnx_mini {

// Inputs and outputs of one node during shape inference.
class InferContext {
 public:
  InferContext(const Node& node, std::vector<const ValueType*> input_types,
               std::vector<const Tensor*> input_values)
      : node_(node), types_(std::move(input_types)), values_(std::move(input_values)),
        outputs_(node.outputs.size()) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return node_.opset; }
  size_t num_inputs() const { return types_.size(); }
  bool has_input(size_t i) const { return i < types_.size() && types_[i] != nullptr; }
  // The input's type; has_input(i) must hold.
  const ValueType& input(size_t i) const { return *types_[i]; }
  // The input's value when known (always at run time; for initializers and
  // constants at session creation), else nullptr.
  const Tensor* value(size_t i) const { return i < values_.size() ? values_[i] : nullptr; }
  bool running() const { return running_; }
  void set_running(bool r) { running_ = r; }

  size_t num_outputs() const { return outputs_.size(); }
  void set_output(size_t i, ValueType t) {
    if (i < outputs_.size()) outputs_[i] = std::move(t);
  }
  std::vector<ValueType>& outputs() { return outputs_; }

  // An InvalidArgument error that names the node, the rule and the values.
  absl::Status Error(const std::string& rule) const {
    return absl::InvalidArgumentError(absl::StrCat(node_.Describe(), ": ", rule));
  }

 private:
  const Node& node_;
  std::vector<const ValueType*> types_;
  std::vector<const Tensor*> values_;
  std::vector<ValueType> outputs_;
  bool running_ = false;
};

// Inputs and outputs of one node during a run.
class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual size_t num_inputs() const = 0;
  // nullptr for an absent optional input.
  virtual const Tensor* input(size_t i) const = 0;
  virtual size_t num_outputs() const = 0;
  virtual bool output_requested(size_t i) const = 0;
  // The output buffer, shaped as the shape function said. It may be a
  // caller-provided buffer or, for kernels that declare in-place inputs, the
  // storage of that input (compare raw() to tell).
  virtual Tensor& output(size_t i) = 0;
  // Makes output i a view of an existing tensor instead (no copy).
  virtual void set_output(size_t i, Tensor view) = 0;
  // The shape the shape function derived for output i.
  virtual Shape output_shape(size_t i) const = 0;
  virtual int threads() const = 0;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual absl::Status Compute(KernelContext& ctx) const = 0;
};

// What a kernel factory sees: the node and what inference found.
struct KernelInfo {
  const Node& node;
  std::vector<const ValueType*> inputs;   // nullptr for absent inputs
  std::vector<const ValueType*> outputs;
  std::vector<const Tensor*> constants;   // known input values, or nullptr
};

using ShapeFn = absl::Status (*)(InferContext& ctx);
using KernelFactory = absl::StatusOr<std::unique_ptr<OpKernel>> (*)(const KernelInfo& info);

// One row of the op registry: an implementation of (domain, op_type) for the
// ONNX versions since_version..last_version (0 = no end).
struct OpDef {
  const char* domain;
  const char* op_type;
  int since_version;
  int last_version;
  ShapeFn infer;
  KernelFactory create;
  // Input index whose storage the output 0 may reuse, or -1.
  int inplace_input = -1;
};

// "not implemented: ai.onnx::Op opset N for dtype".
absl::Status NotImplemented(const Node& node, DType dtype);
absl::Status NotImplemented(const Node& node, const std::string& what);

// Builds a kernel of type K from a constructor K(const KernelInfo&) that
// cannot fail.
template <class K>
absl::StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const KernelInfo& info) {
  return std::unique_ptr<OpKernel>(new K(info));
}

}  // namespace onnx_mini
