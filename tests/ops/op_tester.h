// The one single-node test runner: builds a one-node model from named fields,
// runs it, and returns its outputs. Plus small tensor helpers for op tests.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx.pb.h"
#include "runtime/element.h"
#include "runtime/session.h"
#include "tools/model_builder.h"

namespace onnx_mini {

using Attrs = std::function<void(onnx::NodeProto&)>;

struct OpTester {
  std::string op;
  int64_t opset = 17;
  std::string domain;                // "" for ai.onnx
  std::vector<Tensor> inputs;        // an undefined tensor is an absent optional input
  std::vector<bool> constant;        // input i is an initializer instead of a graph input
  size_t outputs = 1;
  // Instead of `outputs`: the node's output names, "" for one not requested.
  // Run returns the requested ones, in order.
  std::vector<std::string> output_names;
  std::function<void(onnx::NodeProto&)> attrs;  // sets the node's attributes
  int threads = 0;
  size_t memory_limit = 0;  // SessionOptions::memory_limit (0: the default)
  // Graph outputs the caller binds: index -> buffer (may be an input's tensor).
  std::vector<Tensor> bound;

  absl::StatusOr<std::vector<Tensor>> Run() const;
  // Output 0.
  absl::StatusOr<Tensor> RunOne() const;
};

// Positional shorthands over OpTester, for tables of cases.
absl::StatusOr<std::vector<Tensor>> RunNode(int64_t opset, const std::string& op, const std::vector<Tensor>& inputs,
                                            size_t outputs = 1,
                                            const std::function<void(onnx::NodeProto&)>& attrs = {},
                                            const std::vector<bool>& constant = {}, int threads = 0);
absl::StatusOr<Tensor> RunOne(int64_t opset, const std::string& op, const std::vector<Tensor>& inputs,
                              const std::function<void(onnx::NodeProto&)>& attrs = {}, int threads = 0);

inline std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(GetDouble(t, i));
  return v;
}
inline Tensor F(std::vector<float> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
inline Tensor I(std::vector<int64_t> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
inline Tensor B(std::vector<bool> v, Shape s) { return Tensor::FromVector(v, std::move(s)); }
inline std::string Message(const absl::Status& s) { return std::string(s.message()); }

// Exactly representable values: floats k/64 in [-15.6, 15.6], integers 1..50.
Tensor Random(DType dtype, Shape shape, uint32_t seed);
// Uniform in [lo, hi), rounded to the dtype.
Tensor RandomUniform(DType dtype, const Shape& shape, uint32_t seed, double lo = -2, double hi = 2);

}  // namespace onnx_mini
