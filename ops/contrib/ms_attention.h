// What com.microsoft MultiHeadAttention and Attention (ops/contrib/) share:
// their attributes (num_heads, scale, unidirectional, mask_filter_value);
// their int32 masks (key_padding_mask, mask_index), attention_bias and the
// rows of `unidirectional` the kernel's causal rule cannot say, made into the
// one additive bias of AttentionProblem as onnxruntime's CPU kernels add them
// (masked keys get mask_filter_value, a finite number, not -inf); the bias
// added to a projection; and the run of the attention kernel.
#pragma once

#include <vector>

#include "kernels/attention/attention.h"
#include "runtime/op.h"

namespace onnx_mini {

// The attributes both ops take: num_heads, scale (0: 1/sqrt(H)),
// unidirectional and mask_filter_value.
struct MsAttentionAttrs {
  int64_t heads = 0;
  float scale = 0;
  bool unidirectional = false;
  float filter = -10000;
  // The scale of the scores for heads of `head_size`.
  float ScaleFor(int64_t head_size) const;
};

// Reads and checks them (num_heads positive, scale finite, not negative).
absl::StatusOr<MsAttentionAttrs> ParseMsAttentionAttrs(const Node& node);

enum class MsMaskKind {
  kNone,
  kEnds,        // (B): keys at or past ends[b] are masked; MultiHeadAttention's (3B + 2): its first B
  kEndsStarts,  // (2B): also keys before starts[b] (Attention)
  kRaw2D,       // (B, T): 0 masks the key
  kRaw3D,       // (B, S, T): 0 masks the key for that query
};

struct MsBiasPlan {
  MsMaskKind mask = MsMaskKind::kNone;
  bool attention_bias = false;
  int64_t ab_batch = 1, ab_heads = 1;  // attention_bias (1|B, 1|N, S, T)
  // unidirectional when the kernel's causal rule differs from onnxruntime's
  // (queries and new keys of different lengths): rows but the last hide keys
  // past P + i, with -inf.
  bool causal_rows = false;
  float filter = -10000;
  int64_t dims[4] = {1, 1, 1, 0};  // the bias (1|B, 1|N, 1|S, T)
  bool Any() const { return mask != MsMaskKind::kNone || attention_bias || causal_rows; }
};

// Classifies the mask and attention_bias shapes against p's (B, N, S, T)
// (p's geometry and past length set), fills `plan` and p's mask strides.
// `mha`: the mask forms MultiHeadAttention takes ((B), (3B + 2), (B, T),
// (B, S, T)), else Attention's ((B), (2B), (B, T), (B, S, T)).
absl::Status ResolveMsBias(const InferContext& ctx, const Shape* mask, const Shape* attention_bias, bool mha,
                           MsBiasPlan& plan, AttentionProblem& p);

// The bias for this run (charged to `workspace`), p.mask pointing at it. The
// 1-D masks' positions are checked first: an error writes nothing.
absl::Status MakeMsBias(const KernelContext& ctx, const MsBiasPlan& plan, const Tensor* mask,
                        const Tensor* attention_bias, MemoryReservation& workspace, std::vector<double>& bias,
                        AttentionProblem& p);

// x (rows, width; row stride `stride`) + bias (width) into a new (rows, width)
// tensor of x's type, charged to the budget: the projections' bias before the
// kernel reads them.
absl::StatusOr<Tensor> AddBias(const KernelContext& ctx, DType dtype, const void* x, int64_t rows, int64_t width,
                               int64_t stride, const void* bias, const Shape& shape);

// Runs the attention kernel on a complete problem, as Attention-23 does: the
// fast path when it applies, else the reference; present rows either way.
absl::Status RunMsAttention(const KernelContext& ctx, const AttentionProblem& p, int64_t y_elements,
                            int64_t qk_elements, MemoryReservation& workspace);

}  // namespace onnx_mini
