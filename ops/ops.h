// The built-in ops. Each family in ops/ returns its rows of the registry
// table; RegisterBuiltinOps adds them all.
#pragma once

#include <vector>

#include "runtime/registry.h"

namespace onnx_mini {

std::vector<OpDef> BinaryOps();     // Add, Sub, Mul, Div, Mod, Pow, comparisons, And, Or, Where, PRelu, Sum, Max, Min, Mean
std::vector<OpDef> UnaryOps();      // Neg, Abs, Relu, ..., Gelu, Not, the activations, trigonometry, IsNaN, IsInf, Clip, Dropout
std::vector<OpDef> MovementOps();   // Concat, Expand, Gather, Slice, Range, ConstantOfShape, Pad, Trilu, Split
std::vector<OpDef> ReduceOps();     // Reduce*, ArgMax, ArgMin, Softmax, LogSoftmax, Hardmax, TopK, LpNormalization, MeanVarianceNormalization
std::vector<OpDef> MatMulOps();     // MatMul, Gemm
std::vector<OpDef> NormalizationOps();  // LayerNormalization, RMSNormalization
std::vector<OpDef> RotaryOps();         // RotaryEmbedding (ops/llm/rotary.cc)
std::vector<OpDef> CastOps();       // Cast, CastLike
std::vector<OpDef> ShapingOps();    // Identity, Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Transpose
std::vector<OpDef> ConstantOps();   // Constant
std::vector<OpDef> TensorScatterOps();  // TensorScatter
std::vector<OpDef> AttentionOps();      // Attention
std::vector<OpDef> ConvOps();           // Conv, ConvTranspose, ConvInteger
std::vector<OpDef> DeformConvOps();     // DeformConv
std::vector<OpDef> PoolOps();           // MaxPool, AveragePool, LpPool, GlobalMaxPool, GlobalAveragePool, GlobalLpPool
std::vector<OpDef> ImageNormOps();      // BatchNormalization, InstanceNormalization, GroupNormalization, LRN
std::vector<OpDef> RecurrentOps();      // RNN, GRU, LSTM
std::vector<OpDef> ResizeOps();         // Resize, Upsample
std::vector<OpDef> SequenceOps();       // Sequence*, SplitToSequence, ConcatFromSequence, Optional*
std::vector<OpDef> ControlFlowOps();    // If, Loop, Scan
std::vector<OpDef> SwiGLUOps();         // SwiGLU
std::vector<OpDef> LinearAttentionOps();  // LinearAttention, CausalConvWithState (recurrent-state caches)
std::vector<OpDef> FlexAttentionOps();  // ai.onnx.preview FlexAttention
std::vector<OpDef> IndexingOps();       // GatherElements, GatherND, Scatter, ScatterElements, ScatterND, OneHot, Compress, NonZero, Unique
std::vector<OpDef> RearrangeOps();      // Tile, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence, CenterCropPad, Col2Im
std::vector<OpDef> SamplingOps();       // GridSample, AffineGrid, RoiAlign, MaxUnpool, NonMaxSuppression
std::vector<OpDef> EinsumOps();         // Einsum
std::vector<OpDef> LossOps();           // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
std::vector<OpDef> MathOps();           // CumSum, CumProd, Det
std::vector<OpDef> BitCastOps();        // BitCast
std::vector<OpDef> QuantizeOps();       // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul
std::vector<OpDef> SignalOps();         // DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix
std::vector<OpDef> RandomOps();         // RandomNormal, RandomUniform, their Like forms, Bernoulli, Multinomial
std::vector<OpDef> TextOps();           // StringConcat, StringSplit, StringNormalizer, RegexFullMatch, TfIdfVectorizer
std::vector<OpDef> MlOps();             // ai.onnx.ml: LabelEncoder, Binarizer, ArrayFeatureExtractor, TreeEnsemble
std::vector<OpDef> ContribOps();        // com.microsoft (onnxruntime's contrib ops), ops/contrib/
std::vector<OpDef> GatherBlockQuantizedOps();  // com.microsoft GatherBlockQuantized
std::vector<OpDef> QuantizedMatMulOps();       // com.microsoft MatMulIntegerToFloat, DynamicQuantizeMatMul
std::vector<OpDef> FusedMatMulOps();           // com.microsoft FusedMatMul
std::vector<OpDef> GroupQueryAttentionOps();  // com.microsoft GroupQueryAttention
std::vector<OpDef> SkipNormOps();       // SkipLayerNormalization, SkipSimplifiedLayerNormalization (ops/contrib/skip_norm.cc)
std::vector<OpDef> GeluOps();           // com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu (ops/contrib/gelu.cc)
std::vector<OpDef> MatMulNBitsOps();    // com.microsoft MatMulNBits, onnx_mini::DequantizeMatMul (ops/contrib/matmul_nbits.cc)
std::vector<OpDef> MsRotaryEmbeddingOps();  // com.microsoft RotaryEmbedding
std::vector<OpDef> MultiHeadAttentionOps();  // com.microsoft MultiHeadAttention
std::vector<OpDef> BertAttentionOps();  // com.microsoft Attention (BERT-style)
std::vector<OpDef> EmbedLayerNormOps();  // com.microsoft EmbedLayerNormalization

inline constexpr std::vector<OpDef> (*kOpFamilies[])() = {
    BinaryOps, UnaryOps, ShapingOps, CastOps, ConstantOps, MovementOps, ReduceOps, MatMulOps, NormalizationOps, TensorScatterOps, AttentionOps,
    ConvOps, PoolOps, ImageNormOps, RecurrentOps, ResizeOps, SequenceOps, ControlFlowOps,
    DeformConvOps,
    SwiGLUOps, LinearAttentionOps, FlexAttentionOps, RotaryOps,
    IndexingOps, RearrangeOps, SamplingOps, EinsumOps,
    LossOps, MathOps,
    BitCastOps, QuantizeOps,
    SignalOps, RandomOps,
    TextOps, MlOps,
    ContribOps,
};

// Adds every built-in row to `registry`; fails on a malformed or overlapping row.
absl::Status RegisterBuiltinOps(OpRegistry& registry);

// BuiltinOps() (declared in runtime/registry.h) is defined in ops/ops.cc.

}  // namespace onnx_mini
