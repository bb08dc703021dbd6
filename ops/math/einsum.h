// Einsum: the equation parsed once, and two evaluations of it. The planned
// one maps the work onto a few passes: each operand is reduced to the labels
// still needed (diagonals taken, lone labels summed; broadcast dims are not
// expanded), then operands are contracted left to right, each contraction a
// transpose of both sides to [batch, kept, contracted] and one batched matrix
// product (oneDNN for float work, a plain loop otherwise). The reference sums
// every combination of labels directly; tests compare the two.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/tensor.h"

namespace onnx_mini {

// An equation's labels: letters are 0..51 (A-Z, then a-z: ASCII order); the
// dims an ellipsis stands for get labels from 52 on, right-aligned across
// operands so that they broadcast.
struct EinsumLabels {
  std::vector<std::vector<int>> inputs;  // per operand, the label of each dim
  std::vector<int> output;               // the label of each output dim
  int count = 0;                         // labels in use are < count
};

// Parses `equation` ("ij,jk->ik", "...ii->...i", "ij,jk" with the implicit
// output: ellipsis dims, then the letters used once, sorted) for operands of
// the given ranks. The error says what is wrong with the equation.
absl::StatusOr<EinsumLabels> ParseEinsum(const std::string& equation, const std::vector<int64_t>& ranks);

// A parsed equation with every label's size (the operands' dims, where
// ellipsis dims of 1 broadcast).
struct EinsumProblem {
  EinsumLabels labels;
  std::vector<int64_t> sizes;  // per label
  Shape output_shape;
};

// Resolves the label sizes against the operand shapes; the error names the
// label and the sizes that disagree.
absl::StatusOr<EinsumProblem> ResolveEinsum(const EinsumLabels& labels, const std::vector<Shape>& shapes);

// out (of problem.output_shape and the operands' dtype) = the einsum of the
// operands. Both support the numeric types; integers wrap. The planned one's
// intermediate operands are charged to `budget` (if any) while they live.
absl::Status EinsumPlanned(const EinsumProblem& problem, const std::vector<const Tensor*>& operands, Tensor& out,
                           int threads, const std::shared_ptr<MemoryBudget>& budget = nullptr);
absl::Status EinsumReference(const EinsumProblem& problem, const std::vector<const Tensor*>& operands, Tensor& out);

}  // namespace onnx_mini
