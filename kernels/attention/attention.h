// Attention compute kernels (SEMANTICS.md part B). The op (attention.cc)
// validates everything and fills AttentionProblem; these kernels assume a
// valid problem. Two implementations: a plain reference that materializes the
// scores with double accumulation, and a fast one that streams key blocks with
// an online softmax and skips keys no row can see.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/vec/round.h"
#include "runtime/cpu.h"
#include "runtime/tensor.h"

namespace onnx_mini {

// A 4-index view (b, h, s, d) of a Q/K/V/Y/past tensor: 3D (B, S, H*D) and
// 4D (B, H, S, D) layouts differ only in strides; d is contiguous.
struct HeadView {
  int64_t stride_b = 0, stride_h = 0, stride_s = 0;
  static HeadView Of4D(int64_t heads, int64_t len, int64_t dim) {
    return {heads * len * dim, len * dim, dim};
  }
  static HeadView Of3D(int64_t heads, int64_t len, int64_t dim) {
    return {len * heads * dim, dim, heads * dim};
  }
  int64_t At(int64_t b, int64_t h, int64_t s) const { return b * stride_b + h * stride_h + s * stride_s; }
};

// The KV cache the keys come from, per batch row b:
//  - keys [0, PastLen(b)) are cached: rows of `past_key`/`past_value`, laid
//    out as (B, Hkv, capacity, D|Dv);
//  - keys [PastLen(b), PastLen(b) + kv_len) are this step's new K/V rows;
//  - keys at or past valid_lens[b] (nonpad_kv_seqlen) are hidden, and so are
//    the positions past a row's own keys when rows are ragged (total_len is
//    the longest row's).
// PastLen(b) is also where the new keys are written in present. Attention-23
// and 24 with past: one past_len, capacity P, present a concatenation of
// capacity P + Skv. Attention-24 with nonpad_kv_seqlen (an external static
// cache as K/V): no past, valid_lens = nonpad. A shared buffer (present the
// same memory as past, as GroupQueryAttention binds it): only the new rows
// are written, at each row's own offset.
struct KvCacheView {
  const void* past_key = nullptr;  // null: no past
  const void* past_value = nullptr;
  int64_t capacity = 0;  // the past buffers' sequence extent
  int64_t past_len = 0;                // every row's past length, unless past_lens
  const int64_t* past_lens = nullptr;  // (B,) per-row past lengths (ragged rows), or null
  const int64_t* valid_lens = nullptr; // (B,) valid keys per row (nonpad_kv_seqlen), or null
  // Outputs (null when not requested): (B, Hkv, present_capacity, D|Dv).
  void* present_key = nullptr;
  void* present_value = nullptr;
  int64_t present_capacity = 0;

  int64_t PastLen(int64_t b) const { return past_lens ? past_lens[b] : past_len; }
  bool HasPast() const { return past_lens != nullptr || past_len > 0; }
  // present_* are past_*'s memory: only the new rows are written.
  bool Shared() const { return present_key != nullptr && present_key == past_key; }
};

struct AttentionProblem {
  int64_t batch = 0, q_heads = 0, kv_heads = 0;
  int64_t q_len = 0;      // Sq
  int64_t kv_len = 0;     // Skv (new keys)
  int64_t total_len = 0;  // T: key positions (P + Skv; the longest row's with ragged rows)
  int64_t head_size = 0, v_head_size = 0;
  DType dtype = DType::kFloat;  // T1 (= T2)

  HeadView q, k, v, y;  // layouts of Q, K, V and Y
  const void* q_data = nullptr;
  const void* k_data = nullptr;
  const void* v_data = nullptr;
  KvCacheView cache;  // past and present keys and values, per-row lengths

  float scale = 1;  // s; Q and K are each multiplied by Cast_T1(sqrt(s))
  float softcap = 0;
  bool causal = false;
  int64_t left_window = -1, right_window = -1;  // opset 25; -1 unbounded
  // A query row past its batch row's keys (a right-padded prompt) sits at the
  // row's last key for the causal and window rules (GroupQueryAttention).
  bool clamp_position = false;
  // (Hq,) an extra logit per query head in every row's softmax denominator
  // (GroupQueryAttention's head_sink; smooth_softmax: all 0), or null.
  const float* sinks = nullptr;
  // Softmax precision: kFloat, kDouble, kFloat16, kBFloat16 (default: T1).
  DType softmax_dtype = DType::kFloat;

  // The mask as an additive bias in float (bool already 0 / -inf, numeric
  // already rounded to T1), with broadcast strides over (B, Hq, Sq, Tm); keys
  // j >= mask_len get -inf (the opset 24+ short-mask padding).
  const double* mask = nullptr;
  int64_t mask_stride[4] = {0, 0, 0, 0};
  int64_t mask_len = 0;

  int qk_mode = 0;  // qk_matmul_output_mode

  // Outputs (null when not requested): Y in layout `y`; qk (B, Hq, Sq, T).
  void* y_data = nullptr;
  void* qk_data = nullptr;

  int64_t group() const { return q_heads / kv_heads; }
  // Keys row b holds: its past and the new ones.
  int64_t KeyCount(int64_t b) const { return cache.PastLen(b) + kv_len; }
  // Offset of query row i's causal frontier and window centre for batch b (A13, A15).
  int64_t Offset(int64_t b) const {
    if (cache.HasPast()) return cache.PastLen(b);
    if (cache.valid_lens) return cache.valid_lens[b] - q_len;
    return 0;
  }
  // Keys of row i that the causal, window and length rules leave visible:
  // [first, last). The mask may hide more.
  void VisibleKeys(int64_t b, int64_t i, int64_t& first, int64_t& last) const;
};

// Fills present_key/present_value (if requested) from past and new keys.
void WritePresent(const AttentionProblem& p, int threads);

// The plain reference: full score tensor, double accumulation, and every
// cast point of the function body rounded to T1 or the softmax precision.
void AttentionReference(const AttentionProblem& p);

// The fast kernel: per (batch, kv head, query block), all query heads of the
// group share each K/V block; key blocks stream through an online softmax;
// keys outside [first, last) are never touched. Requires qk_data == null and a
// softmax precision no lower than the compute type (see UsesFastPath). Also
// writes present_key/present_value (if requested), as WritePresent does.
void AttentionFast(const AttentionProblem& p, int threads);
bool UsesFastPath(const AttentionProblem& p);
// The build of the fast kernel the active CPU features select for `dtype`
// (avx512bf16 for bfloat16 only; for tests and reports).
CpuTarget AttentionFastTarget(DType dtype);
// The most bytes of workspace AttentionFast (`fast`) or AttentionReference
// allocates for `p` at `threads` threads, for the session's memory budget;
// -1 if it overflows.
int64_t AttentionWorkspaceBytes(const AttentionProblem& p, int threads, bool fast);

}  // namespace onnx_mini
