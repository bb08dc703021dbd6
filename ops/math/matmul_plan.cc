#include "ops/math/matmul_plan.h"

#include "kernels/gemm/prepared_matmul.h"

namespace onnx_mini {

absl::Status PlanMatMul(const InferContext& ctx, Shape sa, Shape sb, const std::string& sides, MatMulPlan& p) {
  if (sa.empty() || sb.empty()) return ctx.Error("A and B must have rank >= 1");
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  p.M = sa[sa.size() - 2];
  p.K = sa.back();
  p.N = sb.back();
  if (sb[sb.size() - 2] != p.K) return ctx.Error(absl::StrCat("inner dimensions differ: ", sides));
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  std::vector<Dim> da, db;
  for (int64_t d : batch_a) da.push_back(Dim::Known(d));
  for (int64_t d : batch_b) db.push_back(Dim::Known(d));
  ASSIGN_OR_RETURN(const std::vector<Dim> batch, BroadcastDims(ctx, da, db));
  p.batch.clear();
  for (const Dim& d : batch) p.batch.push_back(d.value);
  p.stride_a = BroadcastStrides(batch_a, p.batch);
  p.stride_b = BroadcastStrides(batch_b, p.batch);
  p.batches = ElementCount(p.batch);
  p.count_a = ElementCount(batch_a);
  p.count_b = ElementCount(batch_b);
  p.one_call = (p.count_a == 1 || batch_a == p.batch) && (p.count_b == 1 || batch_b == p.batch);
  p.b_matrix = sb.size() == 2;
  p.output = p.batch;
  if (!a_vec) p.output.push_back(p.M);
  if (!b_vec) p.output.push_back(p.N);
  return absl::OkStatus();
}

std::shared_ptr<const PackedGemmB> SharedPackedB(PrepareContext& ctx, size_t i, bool trans_b) {
  const Tensor& b = *ctx.constant(i);
  return ctx.Shared<PackedGemmB>(i, trans_b ? "gemm_f32 panels of B^T" : "gemm_f32 panels of B",
                                 [&] { return PackGemmB(b, trans_b, ctx.budget()); });
}

}  // namespace onnx_mini
