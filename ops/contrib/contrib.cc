// The com.microsoft domain (kMsDomain): onnxruntime's contrib ops, as the LLM
// exports of onnxruntime-genai's model builder and transformers.js use them.
// Semantics follow onnxruntime's CPU kernels (docs/ContribOperators.md and
// onnxruntime/contrib_ops/cpu/); where the two differ, docs/contrib_ops.md says
// which we follow. Each op, or close family of ops, has a file of its own here
// with a function returning its rows; ContribOps() gathers them.
#include "ops/ops.h"

namespace onnx_mini {

std::vector<OpDef> ContribOps() {
  std::vector<OpDef> rows;
  for (auto family : std::initializer_list<std::vector<OpDef> (*)()>{
           GatherBlockQuantizedOps,
           QuantizedMatMulOps,
           FusedMatMulOps,
           GroupQueryAttentionOps,
           SkipNormOps,
           GeluOps,
           MatMulNBitsOps,
           MsRotaryEmbeddingOps,
           MultiHeadAttentionOps,
           BertAttentionOps,
           EmbedLayerNormOps,
       })
    for (OpDef& row : family()) rows.push_back(std::move(row));
  return rows;
}

}  // namespace onnx_mini
