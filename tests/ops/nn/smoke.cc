// Smoke cases of ops/nn/ (conv, deform_conv, image_norm, loss, norm, pool, resize, rnn, sampling).
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> NnSmoke() {
  std::vector<Smoke> cases;
  for (const char* op : {"Conv", "ConvTranspose", "ConvInteger"})
    cases.push_back({kOnnxDomain, op, Versions{1}, Case({{{{1, 2, 3, 3}}, {{2, 2, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "QLinearConv", Versions{10},
                   Case({{{{1, 2, 3, 3}}, {{}}, {{}}, {{2, 2, 2, 2}}, {{}}, {{}}, {{}}, {{}}, {{2}}}})});
  cases.push_back({kInternalDomain, "FusedConv", Versions{1},
                   Case({{{{1, 2, 3, 3}}, {{2, 2, 2, 2}}, {{2}}, {{1, 2, 2, 2}}}, 1, [](onnx::NodeProto& n) {
                     for (const char* name : {"activations", "alphas", "betas"}) {
                       onnx::AttributeProto* a = n.add_attribute();
                       a->set_name(name);
                       a->set_type(name[0] == 'a' && name[1] == 'c' ? onnx::AttributeProto::STRINGS
                                                                    : onnx::AttributeProto::FLOATS);
                       if (a->type() == onnx::AttributeProto::STRINGS) {
                         a->add_strings("LeakyRelu");
                         a->add_strings("Add");
                       } else {
                         a->add_floats(0.1f);
                         a->add_floats(0.f);
                       }
                     }
                   }})});
  cases.push_back({kOnnxDomain, "DeformConv", Versions{19}, Case({{{{1, 2, 3, 3}}, {{2, 2, 2, 2}}, {{1, 8, 2, 2}}}})});
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"})
    cases.push_back({kOnnxDomain, op, Versions{1}, Case({{{{1, 1, 3, 3}}}, 1, [](onnx::NodeProto& n) {
                                                          SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2});
                                                        }})});
  for (const char* op : {"GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool"})
    cases.push_back({kOnnxDomain, op, Versions{1}, Case({{{{2, 3}}}})});
  cases.push_back({kOnnxDomain, "BatchNormalization", Versions{1}, Case({{{{2, 3}}, {{3}}, {{3}}, {{3}}, {{3}}}})});
  cases.push_back({kOnnxDomain, "InstanceNormalization", Versions{1}, Case({{{{1, 2, 3}}, {{2}}, {{2}}}})});
  cases.push_back({kOnnxDomain, "GroupNormalization", Versions{18},
                   Case({{{{1, 2, 3}}, {{1}}, {{1}}}, 1,
                         [](onnx::NodeProto& n) { SetAttr(n, "num_groups", int64_t(1)); }})});
  cases.push_back({kOnnxDomain, "LRN", Versions{1},
                   Case({{{{1, 2, 3}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "size", int64_t(1)); }})});
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    cases.push_back({kOnnxDomain, op, Versions{12}, Case({{{{2, 3}}, {{2}, {0}}}})});
  cases.push_back({kOnnxDomain, "LayerNormalization", Versions{17}, Case({{{{2, 3}}, {{3}}, {{3}}}})});
  cases.push_back({kOnnxDomain, "RMSNormalization", Versions{23}, Case({{{{2, 3}}, {{3}}}})});
  cases.push_back({kOnnxDomain, "RotaryEmbedding", Versions{23}, Case({{{{1, 2, 3, 4}}, {{1, 3, 2}}, {{1, 3, 2}}}})});
  // The rotary rewrite's op for cos and sin computed at run time: x [B, H, S, D], cos and sin [B, 1, S, D].
  cases.push_back({kInternalDomain, "RotateHalf", Versions{1}, Case({{{{1, 2, 3, 4}}, {{1, 1, 3, 4}}, {{1, 1, 3, 4}}}})});
  // The rotary rewrite's RotaryEmbedding (ids of one row stand for all): x [B, H, S, D], tables [P, D / 2], ids [1, S].
  cases.push_back({kInternalDomain, "RotaryEmbedding", Versions{1},
                   Case({{{{2, 2, 3, 4}}, {{4, 2}}, {{4, 2}}, {{1, 3}, {0}}}})});
  cases.push_back({kOnnxDomain, "Upsample", Versions{7, 8}, Case({{{{1, 1, 2, 2}}}, 1, [](onnx::NodeProto& n) {
                                                                    onnx::AttributeProto* a = n.add_attribute();
                                                                    a->set_name("scales");
                                                                    a->set_type(onnx::AttributeProto::FLOATS);
                                                                    for (float f : {1.0f, 1.0f, 2.0f, 2.0f}) a->add_floats(f);
                                                                  }})});
  cases.push_back({kOnnxDomain, "Upsample", Versions{9}, Case({{{{1, 1, 2, 2}}, {{4}, {1, 1, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "Resize", Versions{10, 10}, Case({{{{1, 1, 2, 2}}, {{4}, {1, 1, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "Resize", Versions{11}, Case({{{{1, 1, 2, 2}}, {{0}}, {{4}, {1, 1, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "RNN", Versions{1}, Case({{{{1, 1, 1}}, {{1, 1, 1}}, {{1, 1, 1}}}, 2})});
  cases.push_back({kOnnxDomain, "GRU", Versions{1}, Case({{{{1, 1, 1}}, {{1, 3, 1}}, {{1, 3, 1}}}, 2})});
  cases.push_back({kOnnxDomain, "LSTM", Versions{1}, Case({{{{1, 1, 1}}, {{1, 4, 1}}, {{1, 4, 1}}}, 3})});
  cases.push_back({kOnnxDomain, "GridSample", Versions{16},
                   Case({{{{1, 1, 2, 2}}, {{1, 1, 1, 2}, {0}}}, 1,
                         [](onnx::NodeProto& n) { SetAttr(n, "mode", std::string("nearest")); }})});
  cases.push_back({kOnnxDomain, "AffineGrid", Versions{20}, Case({{{{1, 2, 3}}, {{4}, {1, 1, 2, 2}}}})});
  cases.push_back({kOnnxDomain, "RoiAlign", Versions{10}, Case({{{{1, 1, 2, 2}}, {{1, 4}, {0, 0, 1, 1}}, {{1}, {0}}}})});
  cases.push_back({kOnnxDomain, "MaxUnpool", Versions{9},
                   Case({{{{1, 1, 1, 1}}, {{1, 1, 1, 1}, {0}}}, 1,
                         [](onnx::NodeProto& n) { SetAttr(n, "kernel_shape", std::vector<int64_t>{2, 2}); }})});
  cases.push_back({kOnnxDomain, "NonMaxSuppression", Versions{10},
                   Case({{{{1, 1, 4}, {0, 0, 1, 1}}, {{1, 1, 1}}, {{1}, {1}}}})});
  return cases;
}

}  // namespace onnx_mini
