// The op registry: implementations keyed by (domain, op_type, version range).
// ops/ fills one with the built-in ops (RegisterBuiltinOps, ops/ops.h); an
// embedder adds its own in a registry that falls back to the built-in one.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/op.h"

namespace onnx_mini {

// A registry row with its signatures parsed.
struct RegisteredOp {
  // One input or output position of a signature.
  struct Formal {
    int constraint;  // index into def.types
    enum Kind { kRequired, kOptional, kVariadic } kind;
  };
  explicit RegisteredOp(OpDef d) : def(std::move(d)) {}
  OpDef def;
  std::vector<Formal> inputs, outputs;
  size_t min_inputs = 0, max_inputs = 0;    // max: SIZE_MAX when variadic
  size_t min_outputs = 0, max_outputs = 0;
  // The formal of actual position i (the variadic tail repeats), or nullptr.
  const Formal* input(size_t i) const;
  const Formal* output(size_t i) const;
  // The alias declared for output i, or nullptr.
  const Alias* alias(size_t output) const;
};

class OpRegistry {
 public:
  // Rows not found here are looked up in `fallback` (which must outlive this).
  explicit OpRegistry(const OpRegistry* fallback = nullptr) : fallback_(fallback) {}
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Adds a row. A malformed signature, an unknown constraint name or a
  // version range that overlaps a row of the same op (here or in the
  // fallback) is an error, and nothing is added.
  absl::Status Add(OpDef def);

  // The row implementing (domain, op_type) at `opset`, or a
  // "not implemented: <domain>::<op> opset <N>" error.
  absl::StatusOr<const RegisteredOp*> Find(const std::string& domain, const std::string& op_type,
                                           int64_t opset) const;
  // Every row, here then in the fallback.
  std::vector<const RegisteredOp*> rows() const;

 private:
  const RegisteredOp* FindRow(const std::string& domain, const std::string& op_type, int64_t opset) const;
  bool Overlaps(const OpDef& def) const;
  const OpRegistry* fallback_;
  std::map<std::pair<std::string, std::string>, std::vector<std::unique_ptr<RegisteredOp>>> rows_;
};

// A registry holding the built-in ops, filled on first use. Defined by ops/
// (ops/ops.cc), which the library links in: runtime/ names it without
// depending on any op.
const OpRegistry& BuiltinOps();

}  // namespace onnx_mini
