// Kernels of the recurrent-state ops (docs/llm_ops.md): LinearAttention-27
// and CausalConvWithState-27. The ops (linear_attention.cc) validate shapes
// and attributes and fill a problem; the kernels assume a valid one. Each has
// a plain reference (the spec's steps one by one, double sums) and a fast
// kernel that updates the state where it lies: when the session hands the
// kernel past_state's own buffer as present_state, a decode step costs
// O(state), never a copy of it.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace onnx_mini {

struct LinearAttentionProblem {
  int64_t batch = 0, len = 0;  // B, T
  int64_t q_heads = 0, kv_heads = 0, dk = 0, dv = 0;
  float scale = 1;
  bool gated = false;          // decay given: S *= exp(g)
  bool delta = false;          // beta given: delta-rule correction
  bool decay_per_key = false;  // decay (B, T, Hkv*dk); else (B, T, Hkv)
  bool beta_per_head = false;  // beta (B, T, Hkv); else (B, T, 1)
  DType dtype = DType::kFloat;        // T: query, key, value, decay, beta, output
  DType state_dtype = DType::kFloat;  // S: past_state, present_state
  // Q (B, T, Hq*dk), K (B, T, Hkv*dk), V (B, T, Hkv*dv); past (B, Hkv, dk, dv)
  // or null for zeros. present may be past's own buffer.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* decay = nullptr;
  const void* beta = nullptr;
  const void* past = nullptr;
  void* y = nullptr;        // (B, T, Hq*dv)
  void* present = nullptr;  // (B, Hkv, dk, dv)
};

void LinearAttentionReference(const LinearAttentionProblem& p);
void LinearAttentionFast(const LinearAttentionProblem& p, int threads);

struct CausalConvProblem {
  int64_t batch = 0, channels = 0, len = 0, kernel = 1;  // B, C, L, k
  bool silu = false;
  DType dtype = DType::kFloat;
  // input (B, C, L), weight (C, 1, k), bias (C) or null, past (B, C, k-1) or
  // null for zeros; output (B, C, L), present (B, C, k-1), which may be past's
  // own buffer.
  const void* input = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  const void* past = nullptr;
  void* output = nullptr;
  void* present = nullptr;
};

void CausalConvReference(const CausalConvProblem& p);
void CausalConvFast(const CausalConvProblem& p, int threads);

}  // namespace onnx_mini
