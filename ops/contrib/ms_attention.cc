#include "ops/contrib/ms_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/vec/arith.h"
#include "ops/common.h"
#include "runtime/checked.h"

namespace onnx_mini {

using MsTypes = TypeList<float, Float16>;  // the T of the com.microsoft attention ops

float MsAttentionAttrs::ScaleFor(int64_t head_size) const {
  return scale > 0 ? scale : 1.0f / std::sqrt(float(head_size));
}

absl::StatusOr<MsAttentionAttrs> ParseMsAttentionAttrs(const Node& node) {
  MsAttentionAttrs a;
  a.heads = node.attr_int("num_heads", 0);
  if (a.heads <= 0) return AttributeError(node, absl::StrCat("num_heads must be positive, got ", a.heads));
  a.scale = node.attr_float("scale", 0);
  if (!std::isfinite(a.scale) || a.scale < 0)
    return AttributeError(node, absl::StrCat("scale ", a.scale, " must be finite and not negative (0: 1/sqrt(H))"));
  a.unidirectional = node.attr_int("unidirectional", 0) != 0;
  a.filter = node.attr_float("mask_filter_value", -10000.0f);
  return a;
}

absl::Status ResolveMsBias(const InferContext& ctx, const Shape* mask, const Shape* attention_bias, bool mha,
                           MsBiasPlan& plan, AttentionProblem& p) {
  const int64_t B = p.batch, N = p.q_heads, S = p.q_len, T = p.total_len;
  if (mask) {
    const Shape& m = *mask;
    const std::optional<int64_t> three_b = CheckedAdd(CheckedMul(B, 3).value_or(-1), 2);
    if (m.size() == 1 && m[0] == B) plan.mask = MsMaskKind::kEnds;
    else if (m.size() == 1 && mha && three_b && m[0] == *three_b) plan.mask = MsMaskKind::kEnds;
    else if (m.size() == 1 && !mha && m[0] == 2 * B) plan.mask = MsMaskKind::kEndsStarts;
    else if (m.size() == 2 && m[0] == B && m[1] == T) plan.mask = MsMaskKind::kRaw2D;
    else if (m.size() == 3 && m[0] == B && m[1] == S && m[2] == T) plan.mask = MsMaskKind::kRaw3D;
    else if (m.size() == 4 && !mha)
      return NotImplemented(ctx.node(), absl::StrCat("a 4-D mask_index ", ShapeToString(m),
                                                     " (onnxruntime's CPU kernel has none either)"));
    else
      return ctx.Error(absl::StrCat(mha ? "key_padding_mask " : "mask_index ", ShapeToString(m), " must be (", B,
                                    mha ? absl::StrCat("), (", 3 * B + 2) : absl::StrCat("), (", 2 * B), "), (",
                                    B, ", ", T, ") or (", B, ", ", S, ", ", T, ") with batch ", B, ", ", S,
                                    " queries and ", T, " keys"));
  }
  if (attention_bias) {
    const Shape& a = *attention_bias;
    if (a.size() != 4 || (a[0] != 1 && a[0] != B) || (a[1] != 1 && a[1] != N) || a[2] != S || a[3] != T)
      return ctx.Error(absl::StrCat("attention_bias ", ShapeToString(a), " must be (1 or ", B, ", 1 or ", N, ", ", S,
                                    ", ", T, ")"));
    plan.attention_bias = true;
    plan.ab_batch = a[0];
    plan.ab_heads = a[1];
  }
  if (!plan.Any()) return absl::OkStatus();
  plan.dims[0] = plan.mask != MsMaskKind::kNone ? B : plan.ab_batch;
  plan.dims[1] = plan.ab_heads;
  plan.dims[2] = plan.mask == MsMaskKind::kRaw3D || plan.attention_bias || plan.causal_rows ? S : 1;
  plan.dims[3] = T;
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    p.mask_stride[d] = plan.dims[d] == 1 && d < 3 ? 0 : stride;
    stride = CheckedMul(stride, plan.dims[d]).value_or(0);
  }
  p.mask_len = T;
  return absl::OkStatus();
}

absl::Status MakeMsBias(const KernelContext& ctx, const MsBiasPlan& plan, const Tensor* mask,
                        const Tensor* attention_bias, MemoryReservation& workspace, std::vector<double>& bias,
                        AttentionProblem& p) {
  if (!plan.Any()) return absl::OkStatus();
  const int64_t B = p.batch, S = p.q_len, T = p.total_len;
  const int32_t* m = mask && plan.mask != MsMaskKind::kNone ? mask->data<int32_t>() : nullptr;
  // 1-D masks index the keys: each row's end (and start) checked first.
  if (plan.mask == MsMaskKind::kEnds || plan.mask == MsMaskKind::kEndsStarts) {
    const int64_t n = plan.mask == MsMaskKind::kEnds ? B : 2 * B;
    for (int64_t i = 0; i < n; ++i)
      if (m[i] < 0)
        return ctx.Error(absl::StrCat("mask ", i < B ? "end" : "start", " position ", m[i], " of batch row ", i % B,
                                      " is negative"));
  }
  const std::optional<int64_t> count = CheckedMul(CheckedMul(plan.dims[0], plan.dims[1]).value_or(-1),
                                                  CheckedMul(plan.dims[2], plan.dims[3]).value_or(-1));
  if (!count || *count < 0)
    return ctx.Error(absl::StrCat("the attention bias of (", plan.dims[0], ", ", plan.dims[1], ", ", plan.dims[2], ", ",
                                  plan.dims[3], ") elements overflows"));
  RETURN_IF_ERROR(ctx.Grow(workspace, *count, sizeof(double), "the attention mask and bias as one float bias"));
  bias.assign(size_t(*count), 0.0);
  std::vector<double> ab;
  if (plan.attention_bias) {
    RETURN_IF_ERROR(ctx.Grow(workspace, attention_bias->size(), sizeof(double), "attention_bias widened"));
    ab.resize(size_t(attention_bias->size()));
    RETURN_IF_ERROR(Dispatch<MsTypes>(ctx, attention_bias->dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      const E* a = attention_bias->data<E>();
      for (size_t i = 0; i < ab.size(); ++i) ab[i] = double(Widen(a[i]));
    }));
  }
  const double filter = plan.filter;
  const int64_t past = p.cache.past_len;
  double* out = bias.data();
  for (int64_t b = 0; b < plan.dims[0]; ++b)
    for (int64_t h = 0; h < plan.dims[1]; ++h)
      for (int64_t i = 0; i < plan.dims[2]; ++i, out += T) {
        switch (plan.mask) {
          case MsMaskKind::kNone: break;
          case MsMaskKind::kEnds:
          case MsMaskKind::kEndsStarts: {
            const int64_t end = std::min<int64_t>(m[b], T);
            for (int64_t j = end; j < T; ++j) out[j] = filter;
            if (plan.mask == MsMaskKind::kEndsStarts) {
              const int64_t start = std::min<int64_t>(m[B + b], T);
              for (int64_t j = 0; j < start; ++j) out[j] = filter;
            }
            break;
          }
          case MsMaskKind::kRaw2D:
            for (int64_t j = 0; j < T; ++j) out[j] = m[b * T + j] > 0 ? 0.0 : filter;
            break;
          case MsMaskKind::kRaw3D:
            for (int64_t j = 0; j < T; ++j) out[j] = m[(b * S + i) * T + j] > 0 ? 0.0 : filter;
            break;
        }
        if (plan.attention_bias) {
          const double* a = ab.data() + (((plan.ab_batch == 1 ? 0 : b) * plan.ab_heads + h) * S + i) * T;
          for (int64_t j = 0; j < T; ++j) out[j] += a[j];
        }
        if (plan.causal_rows && i + 1 < S)
          for (int64_t j = past + i + 1; j < T; ++j) out[j] = -std::numeric_limits<double>::infinity();
      }
  p.mask = bias.data();
  return absl::OkStatus();
}

absl::StatusOr<Tensor> AddBias(const KernelContext& ctx, DType dtype, const void* x, int64_t rows, int64_t width,
                               int64_t stride, const void* bias, const Shape& shape) {
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(dtype, shape));
  RETURN_IF_ERROR(Dispatch<MsTypes>(ctx, dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* in = static_cast<const E*>(x);
    const E* b = static_cast<const E*>(bias);
    E* o = out.data<E>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c) o[r * width + c] = Narrow<E>(Widen(in[r * stride + c]) + Widen(b[c]));
  }));
  return out;
}

absl::Status RunMsAttention(const KernelContext& ctx, const AttentionProblem& p, int64_t y_elements,
                            int64_t qk_elements, MemoryReservation& workspace) {
  // With nothing to write (an empty Y and no scores) the loops over the keys
  // would be work over a dim with no data.
  const bool nothing_to_compute = y_elements == 0 && (!p.qk_data || qk_elements == 0);
  const bool fast = !nothing_to_compute && UsesFastPath(p);
  if (!nothing_to_compute)
    RETURN_IF_ERROR(ctx.Grow(workspace, AttentionWorkspaceBytes(p, ctx.threads(), fast), 1,
                             fast ? "the attention kernel's workspaces" : "the attention reference's rows"));
  if (fast) {
    AttentionFast(p, ctx.threads());  // with present_key/present_value
    return absl::OkStatus();
  }
  WritePresent(p, ctx.threads());
  if (!nothing_to_compute) AttentionReference(p);
  return absl::OkStatus();
}

}  // namespace onnx_mini
