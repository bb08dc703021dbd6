// The built-in ops. Each family in ops/ returns its rows of the registry
// table; RegisterBuiltinOps adds them all.
#pragma once

#include <vector>

#include "runtime/registry.h"

namespace onnx_mini {

std::vector<OpDef> BinaryOps();     // Add, Sub, Mul, Div, Mod, Pow, comparisons, And, Or, Where, Sum
std::vector<OpDef> UnaryOps();      // Neg, Abs, Relu, Ceil, Floor, Sqrt, Exp, Log, Tanh, Erf, Sigmoid, Reciprocal, Gelu, Not
std::vector<OpDef> MovementOps();   // Concat, Expand, Gather, Slice, Range, ConstantOfShape, Pad, Trilu, Split
std::vector<OpDef> ReduceOps();     // ReduceMax/Sum/Mean, ArgMax, Softmax, TopK
std::vector<OpDef> MatMulOps();     // MatMul, Gemm
std::vector<OpDef> NormalizationOps();  // LayerNormalization, RMSNormalization, RotaryEmbedding
std::vector<OpDef> CastOps();       // Cast, CastLike
std::vector<OpDef> ShapingOps();    // Identity, Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Transpose
std::vector<OpDef> ConstantOps();   // Constant
std::vector<OpDef> TensorScatterOps();  // TensorScatter
std::vector<OpDef> AttentionOps();      // Attention
std::vector<OpDef> SequenceOps();       // Sequence*, SplitToSequence, ConcatFromSequence, Optional*
std::vector<OpDef> ControlFlowOps();    // If, Loop, Scan

inline constexpr std::vector<OpDef> (*kOpFamilies[])() = {
    BinaryOps, UnaryOps, ShapingOps, CastOps, ConstantOps, MovementOps, ReduceOps, MatMulOps, NormalizationOps, TensorScatterOps, AttentionOps,
    SequenceOps, ControlFlowOps,
};

// Adds every built-in row to `registry`; fails on a malformed or overlapping row.
absl::Status RegisterBuiltinOps(OpRegistry& registry);

// BuiltinOps() (declared in runtime/registry.h) is defined in ops/ops.cc.

}  // namespace onnx_mini
