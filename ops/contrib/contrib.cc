// The com.microsoft domain (kMsDomain): onnxruntime's contrib ops, as the LLM
// exports of onnxruntime-genai's model builder and transformers.js use them.
// Semantics follow onnxruntime's CPU kernels (docs/ContribOperators.md and
// onnxruntime/contrib_ops/cpu/); where the two differ, docs/ says which we follow.
// Each op, or close family of ops, gets a file of its own here, and its rows are
// gathered below.
#include "ops/ops.h"

namespace onnx_mini {

std::vector<OpDef> ContribOps() { return {}; }

}  // namespace onnx_mini
