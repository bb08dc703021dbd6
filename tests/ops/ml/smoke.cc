// Smoke cases of ops/ml/ (ai.onnx.ml).
#include "tests/ops/smoke.h"

namespace onnx_mini {
namespace {

// LabelEncoder-2 and -3's keys_* and values_* attributes, for element type d.
void AddLabels(onnx::NodeProto& n, const std::string& what, DType d) {
  onnx::AttributeProto* a = n.add_attribute();
  if (d == DType::kString) {
    a->set_name(what + "_strings");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings("");
  } else if (d == DType::kInt64) {
    a->set_name(what + "_int64s");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
  } else {
    a->set_name(what + "_floats");
    a->set_type(onnx::AttributeProto::FLOATS);
    a->add_floats(1);
  }
}

}  // namespace

std::vector<Smoke> MlSmoke() {
  return {
      {kMlDomain, "LabelEncoder", Versions{1, 1},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2, 3}}}, 1, [in = a.in](onnx::NodeProto& n) {
                            onnx::AttributeProto* classes = n.add_attribute();
                            classes->set_name("classes_strings");
                            classes->set_type(onnx::AttributeProto::STRINGS);
                            classes->add_strings("1");
                            if (in == DType::kString) SetAttr(n, "default_int64", int64_t(0));
                            else SetAttr(n, "default_string", std::string());
                          }};
       }},
      {kMlDomain, "LabelEncoder", Versions{2, 3},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2, 3}}}, 1, [in = a.in, out = a.out](onnx::NodeProto& n) {
                            AddLabels(n, "keys", in);
                            AddLabels(n, "values", out);
                          }};
       }},
      {kMlDomain, "LabelEncoder", Versions{4},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2, 3}}}, 1, [in = a.in, out = a.out](onnx::NodeProto& n) {
                            SetAttr(n, "keys_tensor", Filled(in, {{1}}));
                            SetAttr(n, "values_tensor", Filled(out, {{1}}));
                          }};
       }},
      {kMlDomain, "Binarizer", Versions{1}, Case({{{{2, 3}}}})},
      {kMlDomain, "ArrayFeatureExtractor", Versions{1}, Case({{{{2, 3}}, {{2}, {0, 2}}}})},
      {kMlDomain, "TreeEnsemble", Versions{5},
       Case({{{{2, 3}}}, 1, [](onnx::NodeProto& n) {  // one split: x0 <= 0.5 ? 1 : 2
               for (const char* a : {"nodes_featureids", "nodes_truenodeids"}) SetAttr(n, a, std::vector<int64_t>{0});
               SetAttr(n, "nodes_falsenodeids", std::vector<int64_t>{1});
               SetAttr(n, "nodes_trueleafs", std::vector<int64_t>{1});
               SetAttr(n, "nodes_falseleafs", std::vector<int64_t>{1});
               SetAttr(n, "nodes_modes", Tensor::FromVector<uint8_t>({0}, {1}));
               SetAttr(n, "nodes_splits", Tensor::FromVector<float>({0.5f}, {1}));
               SetAttr(n, "leaf_targetids", std::vector<int64_t>{0, 0});
               SetAttr(n, "leaf_weights", Tensor::FromVector<float>({1, 2}, {2}));
               SetAttr(n, "tree_roots", std::vector<int64_t>{0});
             }})},
  };
}

}  // namespace onnx_mini
