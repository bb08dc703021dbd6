#include "tests/ops/smoke.h"

#include "absl/strings/str_cat.h"

namespace onnx_mini {

Tensor Filled(DType dtype, const SmokeInput& in) {
  Tensor t = Tensor::Zeros(dtype, in.shape);
  if (dtype == DType::kString) {
    for (int64_t i = 0; i < t.size(); ++i) t.data<std::string>()[i] = "1";  // a number, for Cast
    return t;
  }
  for (int64_t i = 0; i < t.size(); ++i)
    SetDouble(t, i, in.values.empty() ? 1.0 : in.values[size_t(i) % in.values.size()]);
  return t;
}

std::vector<Smoke> AllSmoke() {
  std::vector<Smoke> all;
  for (auto family : {MathSmoke, NnSmoke, TensorSmoke, LlmSmoke, QuantSmoke, SignalSmoke, TextSmoke, MlSmoke, ContribSmoke})
    for (Smoke& s : family()) all.push_back(std::move(s));
  return all;
}

const Smoke* FindSmoke(const std::vector<Smoke>& cases, const OpDef& row, std::string* why) {
  const auto end = [](int last) { return last == 0 ? INT64_MAX : int64_t(last); };
  const std::string name =
      absl::StrCat(DomainName(row.domain), "::", row.op_type, " versions ", row.since_version, "..",
                   row.last_version == 0 ? std::string() : absl::StrCat(row.last_version));
  const Smoke* found = nullptr;
  for (const Smoke& s : cases) {
    if (s.domain != row.domain || s.op != row.op_type) continue;
    if (s.versions.since > row.since_version || end(s.versions.last) < end(row.last_version)) continue;
    if (found != nullptr) {
      *why = absl::StrCat(name, ": more than one smoke case covers it");
      return nullptr;
    }
    found = &s;
  }
  if (found == nullptr) *why = absl::StrCat(name, ": no smoke case (add one to tests/ops/<family>/smoke.cc)");
  return found;
}

}  // namespace onnx_mini
