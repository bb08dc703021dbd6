// The kernel of com.microsoft EmbedLayerNormalization (ops/contrib/
// embed_layer_norm.cc): per token, the sum of its word, position and segment
// embedding rows, layer-normalized. The op checks every index against its
// table; the kernels assume a valid problem.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace onnx_mini {

struct EmbedLayerNormProblem {
  DType dtype = DType::kFloat;  // tables, gamma, beta, outputs: float or float16
  int64_t batch = 0, seq = 0, hidden = 0;
  const int32_t* ids = nullptr;           // (B, S) rows of `word`
  const int32_t* segment_ids = nullptr;   // (B, S) rows of `segment`, or null (no segments)
  const int32_t* position_ids = nullptr;  // (B, S) or (1, S) rows of `position`, or null: token s takes row s
  bool position_ids_per_batch = false;    // position_ids is (B, S)
  const void* word = nullptr;
  const void* position = nullptr;
  const void* segment = nullptr;
  const void* gamma = nullptr;
  const void* beta = nullptr;  // or null
  float epsilon = 1e-12f;
  void* y = nullptr;    // (B, S, hidden)
  void* sum = nullptr;  // (B, S, hidden) the rows before normalization, or null

  int64_t Position(int64_t b, int64_t s) const {
    return position_ids ? position_ids[(position_ids_per_batch ? b * seq : 0) + s] : s;
  }
};

// The plain reference: every step in double, each output rounded once (the
// normalization reads the sum as stored in T, as the kernel does).
void EmbedLayerNormReference(const EmbedLayerNormProblem& p);
// The kernel the op runs: a token's sum in float, its moments in double,
// tokens split over the kernels' pool.
void EmbedLayerNorm(const EmbedLayerNormProblem& p, int threads);

}  // namespace onnx_mini
