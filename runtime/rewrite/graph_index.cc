#include "runtime/rewrite/graph_index.h"

namespace onnx_mini {
namespace rewrite {

Attribute IntAttr(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = v;
  return a;
}
Attribute FloatAttr(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = v;
  return a;
}

bool LastDimIs(const Index& ix, const std::string& x, int64_t n) {
  const auto d = ix.DimsOf(x);
  return d && !d->empty() && d->back() == n;
}

}  // namespace rewrite
}  // namespace onnx_mini
