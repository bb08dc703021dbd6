// Rotary position embedding kernels: ai.onnx RotaryEmbedding-23 today;
// com.microsoft RotaryEmbedding (another input order, a scalar position
// offset) and GroupQueryAttention's do_rotary (Q and K inside a packed QKV,
// positions from each row's past length) fill the same problem. The op
// validates everything (shapes, rotary_dim, positions inside the caches);
// the kernels assume a valid problem.
#pragma once

#include <cstdint>

#include "kernels/attention/attention.h"
#include "runtime/dtype.h"

namespace onnx_mini {

struct RotaryProblem {
  DType dtype = DType::kFloat;  // x, y, cos and sin: float, float16, bfloat16 or double
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0;
  int64_t rotary_dim = 0;    // even, <= head_size; the rest of a head is copied
  bool interleaved = false;  // pairs (2i, 2i + 1); else (i, i + rotary_dim / 2)
  // Layouts of x and y, as (b, h, s) -> a head's first element; d contiguous.
  HeadView x_view, y_view;
  const void* x = nullptr;
  void* y = nullptr;  // may be x (in place)
  // cos and sin: row p holds rotary_dim / 2 values for position p.
  const void* cos = nullptr;
  const void* sin = nullptr;
  int64_t cache_stride = 0;  // between rows (rotary_dim / 2 when dense)
  // The position (cache row) of token (b, s):
  //   position_ids[b * seq + s] when given (ai.onnx: (B, S) ids);
  //   else row_offsets[b] + s when given (a row's past length, or a scalar
  //   start broadcast to every row);
  //   else b * seq + s (ai.onnx without ids: the caches are (B, S, half)).
  const int64_t* position_ids = nullptr;
  const int64_t* row_offsets = nullptr;

  int64_t Position(int64_t b, int64_t s) const {
    if (position_ids) return position_ids[b * seq + s];
    if (row_offsets) return row_offsets[b] + s;
    return b * seq + s;
  }
};

// The plain reference: each output from double arithmetic, rounded once.
void RotaryReference(const RotaryProblem& p);
// The kernel the ops run: each token's cos and sin widened once for all its
// heads, pairs rotated in the compute type (float for the 16-bit types).
void Rotary(const RotaryProblem& p);

}  // namespace onnx_mini
