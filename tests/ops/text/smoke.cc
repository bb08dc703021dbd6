// Smoke cases of ops/text/.
#include "tests/ops/smoke.h"

namespace onnx_mini {

std::vector<Smoke> TextSmoke() {
  return {
      {kOnnxDomain, "StringConcat", Versions{20}, Case({{{{2, 3}}, {{3}}}})},
      {kOnnxDomain, "StringSplit", Versions{20}, Case({{{{2, 3}}}, 2})},
      {kOnnxDomain, "StringNormalizer", Versions{10}, Case({{{{3}}}})},
      {kOnnxDomain, "RegexFullMatch", Versions{20},
       Case({{{{2, 3}}}, 1, [](onnx::NodeProto& n) { SetAttr(n, "pattern", std::string("a*")); }})},
      {kOnnxDomain, "TfIdfVectorizer", Versions{9},
       [](const SmokeArgs& a) {
         return SmokeCase{{{{2, 3}}}, 1, [in = a.in](onnx::NodeProto& n) {
                            SetAttr(n, "mode", std::string("TF"));
                            for (const char* name : {"min_gram_length", "max_gram_length"}) SetAttr(n, name, int64_t(1));
                            SetAttr(n, "max_skip_count", int64_t(0));
                            SetAttr(n, "ngram_counts", std::vector<int64_t>{0});
                            SetAttr(n, "ngram_indexes", std::vector<int64_t>{0});
                            if (in != DType::kString) {
                              SetAttr(n, "pool_int64s", std::vector<int64_t>{1});
                              return;
                            }
                            onnx::AttributeProto* pool = n.add_attribute();
                            pool->set_name("pool_strings");
                            pool->set_type(onnx::AttributeProto::STRINGS);
                            pool->add_strings("");
                          }};
       }},
  };
}

}  // namespace onnx_mini
