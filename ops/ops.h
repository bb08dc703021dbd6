// The op families. Each returns its rows of the registry table; the registry
// concatenates them in this order.
#pragma once

#include <vector>

#include "runtime/op.h"

namespace onnx_mini {

std::vector<OpDef> BinaryOps();     // Add, Sub, Mul, Div, Mod, Pow, comparisons, And, Or, Where, Sum
std::vector<OpDef> UnaryOps();      // Neg, Abs, Relu, Ceil, Floor, Sqrt, Exp, Log, Tanh, Erf, Sigmoid, Reciprocal, Gelu, Not
std::vector<OpDef> MovementOps();   // Concat, Expand, Squeeze, Unsqueeze, Gather, Slice, Range, ConstantOfShape, Pad, Trilu
std::vector<OpDef> ReduceOps();     // ReduceMax/Sum/Mean, ArgMax, Softmax
std::vector<OpDef> MatMulOps();     // MatMul, Gemm
std::vector<OpDef> NormalizationOps();  // LayerNormalization, RMSNormalization, RotaryEmbedding
std::vector<OpDef> CastOps();       // Cast, CastLike
std::vector<OpDef> ShapingOps();    // Identity, Reshape, Flatten, Shape, Size, Transpose
std::vector<OpDef> ConstantOps();   // Constant
std::vector<OpDef> TensorScatterOps();  // TensorScatter
std::vector<OpDef> AttentionOps();      // Attention

inline constexpr std::vector<OpDef> (*kOpFamilies[])() = {
    BinaryOps, UnaryOps, CastOps, ShapingOps, MovementOps, ConstantOps, ReduceOps, MatMulOps, NormalizationOps,
    TensorScatterOps, AttentionOps,
};

}  // namespace onnx_mini
