// y = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) of a
// row's halves (or GPT-J's rotate_every_two of its pairs): HF's apply_rotary_pos_emb as exporters write it, with cos and
// sin full rows (D values each) that the graph computes at run time
// (Cos/Sin of position_ids times inv_freq), broadcast over the leading dims
// as the pattern's Mul and Add broadcast. The onnx_mini::RotateHalf op (the
// rotary rewrite) validates; the kernels assume a valid problem.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace onnx_mini {

struct RotateHalfProblem {
  DType dtype = DType::kFloat;  // x, cos, sin, y: float, double, float16 or bfloat16
  int64_t dims[3] = {1, 1, 1};  // y's leading dims; y is contiguous [dims, d]
  int64_t d = 0;                // row length, even
  // GPT-J's rotate_every_two instead: pairs (2i, 2i + 1), rotated to
  // (-x[2i + 1], x[2i]); else halves, rotate_half(x) = (-x[h:], x[:h]).
  bool interleaved = false;
  // Element offset of a row per step of each leading dim (0 where broadcast).
  int64_t x_strides[3] = {}, cos_strides[3] = {}, sin_strides[3] = {};
  const void* x = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  void* y = nullptr;  // not x, cos or sin
};

// The plain reference: each output from double arithmetic, rounded once.
void RotateHalfReference(const RotateHalfProblem& p);
// Rows in the compute type (float for the 16-bit types): loops that vectorize.
void RotateHalf(const RotateHalfProblem& p);

}  // namespace onnx_mini
