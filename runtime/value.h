// Value: what a graph value holds at run time. A tensor (the common case: no
// cost beyond the Tensor), a sequence of tensors, or nothing (an optional
// without an element). An optional that has an element holds it directly: the
// value's static type (ValueType) says that it is optional.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace onnx_mini {

class Value {
 public:
  // None: an optional without an element.
  Value() = default;
  Value(Tensor t) : tensor_(std::move(t)) {}  // NOLINT: a tensor is a value
  // A sequence of tensors of element type `dtype` (every item has it).
  static Value Sequence(DType dtype, std::vector<Tensor> items) {
    Value v;
    v.sequence_ = std::make_shared<const SequenceData>(SequenceData{dtype, std::move(items)});
    return v;
  }

  bool is_tensor() const { return tensor_.defined(); }
  bool is_sequence() const { return sequence_ != nullptr; }
  bool is_none() const { return !is_tensor() && !is_sequence(); }

  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  // The sequence's element type and items; is_sequence() must hold.
  DType sequence_dtype() const { return sequence_->dtype; }
  const std::vector<Tensor>& sequence() const { return sequence_->items; }

  // "tensor float[2,3]", "sequence of 4 float", "none".
  std::string ToString() const;

 private:
  struct SequenceData {
    DType dtype;
    std::vector<Tensor> items;
  };
  Tensor tensor_;
  std::shared_ptr<const SequenceData> sequence_;  // shared: sequences are immutable
};

struct NamedValue {
  std::string name;
  Value value;
};

}  // namespace onnx_mini
