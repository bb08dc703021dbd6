// ModelBuilder: writes small ONNX models in code, for make-testdata and tests.
#pragma once

#include <string>
#include <vector>

#include "onnx.pb.h"
#include "runtime/session.h"

namespace onnx_mini {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17, int64_t ir_version = 8);

  // A graph input or output. A dim of -1 is written as the symbol "N<i>";
  // `ranked` false leaves the shape out.
  ModelBuilder& Input(const std::string& name, DType dtype, const std::vector<int64_t>& dims,
                      bool ranked = true);
  ModelBuilder& Output(const std::string& name, DType dtype, const std::vector<int64_t>& dims,
                       bool ranked = true);
  ModelBuilder& Initializer(const std::string& name, const Tensor& value);
  // Adds a node; attributes are added on the returned proto with the setters below.
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& domain = "");
  ModelBuilder& Opset(const std::string& domain, int64_t version);

  onnx::ModelProto& proto() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  const onnx::GraphProto& graph() const { return model_.graph(); }
  std::string Serialize() const { return model_.SerializeAsString(); }
  // Loads the model from its bytes (no external data) and creates a session.
  absl::StatusOr<std::unique_ptr<Session>> Build(const SessionOptions& options = {}) const;

 private:
  onnx::ModelProto model_;
};

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value);
void SetAttr(onnx::NodeProto& node, const std::string& name, float value);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::string& value);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void SetAttr(onnx::NodeProto& node, const std::string& name, const Tensor& value);

// A decoder layer's SwiGLU MLP as exporters write it (SiLU as x * Sigmoid(x)):
// out = (SiLU(in @ p+"wgate") * (in @ p+"wup")) @ p+"wdown", intermediates
// named from the prefix p.
void AddSwiGluMlp(ModelBuilder& m, const std::string& p, const std::string& in, const std::string& out);

}  // namespace onnx_mini
