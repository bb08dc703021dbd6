// Smoke cases of ops/math/ (binary, unary, reduce, matmul, einsum, math, random).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> MathSmoke() {
  std::vector<Smoke> cases;
  // Binary: [2, 3] with [3], broadcasting.
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Less", "LessOrEqual", "Greater",
                         "GreaterOrEqual", "And", "Or", "Xor", "Sum", "Max", "Min", "Mean", "PRelu", "BitwiseAnd",
                         "BitwiseOr", "BitwiseXor", "BitShift"}) {
    const std::string name = op;
    cases.push_back({kOnnxDomain, op, Versions{1}, [name](const SmokeArgs& a) {
                       SmokeCase c{{{{2, 3}, {2}}, {{3}, {1}}}};
                       if (name == "Mod") c.attrs = [](onnx::NodeProto& n) { SetAttr(n, "fmod", int64_t(1)); };
                       if (name == "BitShift")
                         c.attrs = [](onnx::NodeProto& n) { SetAttr(n, "direction", std::string("LEFT")); };
                       if (a.opset < 7)  // legacy broadcasting
                         c.attrs = [](onnx::NodeProto& n) { SetAttr(n, "broadcast", int64_t(1)); };
                       return c;
                     }});
  }
  cases.push_back({kOnnxDomain, "Where", Versions{9}, Case({{{{2, 3}}, {{2, 3}}, {{3}}}})});
  // Elementwise over one input, and the reductions over it.
  for (const char* op :
       {"Neg", "Abs", "Relu", "Ceil", "Floor", "Sqrt", "Exp", "Log", "Tanh", "Erf", "Sigmoid", "Reciprocal",
        "Gelu", "Not", "BitwiseNot", "Elu", "Selu", "Celu", "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus",
        "Softsign", "Mish", "Swish", "ThresholdedRelu", "Shrink", "Sign", "Round", "Sin", "Cos", "Tan", "Asin",
        "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "Clip", "Dropout",
        "ReduceMax", "ReduceSum", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
        "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "Softmax", "LogSoftmax", "Hardmax",
        "LpNormalization"})
    cases.push_back({kOnnxDomain, op, Versions{1}, Case({{{{2, 3}}}})});
  cases.push_back({kOnnxDomain, "Det", Versions{11}, Case({{{{2, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "MeanVarianceNormalization", Versions{9}, Case({{{{1, 2, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "TopK", Versions{1, 9},
                   Case({{{{2, 3}}}, 2, [](onnx::NodeProto& n) { SetAttr(n, "k", int64_t(2)); }})});
  cases.push_back({kOnnxDomain, "TopK", Versions{10}, Case({{{{2, 3}}, {{1}, {2}}}, 2})});
  cases.push_back({kOnnxDomain, "MatMul", Versions{1}, Case({{{{2, 3}}, {{3, 2}}}})});
  cases.push_back({kInternalDomain, "FusedMatMul", Versions{1}, Case({{{{2, 3}}, {{3, 2}}, {{2}}}})});
  cases.push_back({kOnnxDomain, "Gemm", Versions{1}, Case({{{{2, 3}}, {{3, 2}}, {{2, 2}}}})});
  cases.push_back({kOnnxDomain, "Einsum", Versions{12},
                   Case({{{{2, 3}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "equation", std::string("ij->ji")); }})});
  for (const char* op : {"CumSum", "CumProd"})
    cases.push_back({kOnnxDomain, op, Versions{11}, Case({{{{2, 3}}, {{}, {1}}}})});
  for (const char* op : {"RandomNormal", "RandomUniform"})
    cases.push_back({kOnnxDomain, op, Versions{1}, [](const SmokeArgs& a) {
                       return SmokeCase{{}, 1, [out = a.out](onnx::NodeProto& n) {
                                          SetAttr(n, "shape", std::vector<int64_t>{2, 3});
                                          SetAttr(n, "dtype", int64_t(out));
                                        }};
                     }});
  for (const char* op : {"RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"})
    cases.push_back({kOnnxDomain, op, Versions{1}, [](const SmokeArgs& a) {
                       return SmokeCase{{{{2, 3}, {0.5}}}, 1,
                                        [out = a.out](onnx::NodeProto& n) { SetAttr(n, "dtype", int64_t(out)); }};
                     }});
  return cases;
}

}  // namespace onnx_mini
