// The op families. Each returns its rows of the registry table; the registry
// concatenates them in this order.
#pragma once

#include <vector>

#include "runtime/op.h"

namespace onnx_mini {

std::vector<OpDef> BinaryOps();     // Add, Sub, Mul, Div
std::vector<OpDef> CastOps();       // Cast
std::vector<OpDef> ShapingOps();    // Identity, Reshape, Shape, Transpose
std::vector<OpDef> ConstantOps();   // Constant
std::vector<OpDef> TensorScatterOps();  // TensorScatter
std::vector<OpDef> AttentionOps();      // Attention

inline constexpr std::vector<OpDef> (*kOpFamilies[])() = {
    BinaryOps, CastOps, ShapingOps, ConstantOps, TensorScatterOps, AttentionOps,
};

}  // namespace onnx_mini
