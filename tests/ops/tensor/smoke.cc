// Smoke cases of ops/tensor/ (bitcast, cast, constant, indexing, movement, rearrange, shaping).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> TensorSmoke() {
  const auto attr_to = [](const char* name) {
    return [name](const SmokeArgs& a) {
      return SmokeCase{{{{2, 3}}}, 1, [name, out = a.out](onnx::NodeProto& n) { SetAttr(n, name, int64_t(out)); }};
    };
  };
  std::vector<Smoke> cases = {
      {kOnnxDomain, "Cast", Versions{1}, attr_to("to")},
      {kOnnxDomain, "CastLike", Versions{15}, Case({{{{2, 3}}, {{1}}}})},
      // The two types must have one width: each type is cast to itself.
      {kOnnxDomain, "BitCast", Versions{26}, attr_to("to"),
       [](std::vector<DType>& t) { t[0] = t[1] = t[0] != DType::kFloat ? t[0] : t[1]; }},
      {kOnnxDomain, "Constant", Versions{1},
       [](const SmokeArgs& a) {
         return SmokeCase{{}, 1, [out = a.out](onnx::NodeProto& n) { SetAttr(n, "value", Filled(out, {{2}})); }};
       }},
      {kOnnxDomain, "Reshape", Versions{1, 4},
       Case({{{{2, 3}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "shape", std::vector<int64_t>{3, 2}); }})},
      {kOnnxDomain, "Reshape", Versions{5}, Case({{{{2, 3}}, {{2}, {3, 2}}}})},
      {kOnnxDomain, "Squeeze", Versions{1}, Case({{{{1, 3}}}})},
      {kOnnxDomain, "Unsqueeze", Versions{1, 12},
       Case({{{{3}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axes", std::vector<int64_t>{0}); }})},
      {kOnnxDomain, "Unsqueeze", Versions{13}, Case({{{{3}}, {{1}, {0}}}})},
      {kOnnxDomain, "Concat", Versions{1},
       Case({{{{2, 3}}, {{1, 3}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(0)); }})},
      {kOnnxDomain, "Expand", Versions{8}, Case({{{{1, 3}}, {{2}, {2, 3}}}})},
      {kOnnxDomain, "Gather", Versions{1}, Case({{{{3, 2}}, {{2}, {0, 2}}}})},
      {kOnnxDomain, "Slice", Versions{1, 9}, Case({{{{4}}}, 1, [](onnx::NodeProto& n) {
                                                    SetAttr(n, "starts", std::vector<int64_t>{1});
                                                    SetAttr(n, "ends", std::vector<int64_t>{3});
                                                  }})},
      {kOnnxDomain, "Slice", Versions{10}, Case({{{{4}}, {{1}, {1}}, {{1}, {3}}}})},
      {kOnnxDomain, "Range", Versions{11}, Case({{{{}, {0}}, {{}, {3}}, {{}, {1}}}})},
      {kOnnxDomain, "ConstantOfShape", Versions{9},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2}, {2, 3}}}, 1,
                          [out = a.out](onnx::NodeProto& n) { SetAttr(n, "value", Filled(out, {{1}})); }};
       }},
      {kOnnxDomain, "Pad", Versions{1, 10},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2, 3}}}, 1, [opset = a.opset](onnx::NodeProto& n) {
                            SetAttr(n, opset < 2 ? "paddings" : "pads", std::vector<int64_t>{0, 1, 0, 1});
                          }};
       }},
      {kOnnxDomain, "Pad", Versions{11}, Case({{{{2, 3}}, {{4}, {0, 1, 0, 1}}}})},
      {kOnnxDomain, "Trilu", Versions{14}, Case({{{{3, 3}}}})},
      {kOnnxDomain, "Split", Versions{1}, Case({{{{4, 2}}}, 2})},
      {kOnnxDomain, "GatherElements", Versions{11}, Case({{{{2, 3}}, {{2, 3}, {0, 1}}}})},
      {kOnnxDomain, "GatherND", Versions{11}, Case({{{{2, 3}}, {{1, 1}, {1}}}})},
      {kOnnxDomain, "Scatter", Versions{9, 10}, Case({{{{2, 3}}, {{1, 3}, {1}}, {{1, 3}}}})},
      {kOnnxDomain, "ScatterElements", Versions{11}, Case({{{{2, 3}}, {{1, 3}, {1}}, {{1, 3}}}})},
      {kOnnxDomain, "ScatterND", Versions{11}, Case({{{{2, 3}}, {{1, 1}, {1}}, {{1, 3}}}})},
      {kOnnxDomain, "OneHot", Versions{9}, Case({{{{3}, {0, 1, 2}}, {{}, {3}}, {{2}, {0, 1}}}})},
      {kOnnxDomain, "Compress", Versions{9},
       Case({{{{2, 3}}, {{2}, {1, 0}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "axis", int64_t(0)); }})},
      {kOnnxDomain, "NonZero", Versions{9}, Case({{{{2, 3}}}})},
      {kOnnxDomain, "Unique", Versions{11}, Case({{{{2, 3}}}})},
      {kOnnxDomain, "Tile", Versions{6}, Case({{{{2, 3}}, {{2}, {1, 2}}}})},
      {kOnnxDomain, "EyeLike", Versions{9}, attr_to("dtype")},
      {kOnnxDomain, "DepthToSpace", Versions{1},
       Case({{{{1, 4, 1, 1}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "blocksize", int64_t(2)); }})},
      {kOnnxDomain, "SpaceToDepth", Versions{1},
       Case({{{{1, 1, 2, 2}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "blocksize", int64_t(2)); }})},
      {kOnnxDomain, "ReverseSequence", Versions{10}, Case({{{{2, 3}}, {{3}, {1}}}})},
      {kOnnxDomain, "CenterCropPad", Versions{18}, Case({{{{2, 3}}, {{2}, {1, 4}}}})},
      {kOnnxDomain, "Col2Im", Versions{18}, Case({{{{1, 4, 1}}, {{2}, {2, 2}}, {{2}, {2, 2}}}})},
  };
  for (const char* op : {"Identity", "Flatten", "Shape", "Size", "Transpose"})
    cases.push_back({kOnnxDomain, op, Versions{1}, Case({{{{2, 3}}}})});
  return cases;
}

}  // namespace onnx_mini
