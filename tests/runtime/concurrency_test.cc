// Concurrent Run calls on one session give the results of serial runs. Its
// own executable, so that the ThreadSanitizer build (-DONNX_MINI_TSAN=ON)
// compiles little: kernels run single-threaded there (threads = 1), since
// libgomp is not instrumented and would hide or invent races.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "runtime/element.h"
#include "runtime/registry.h"
#include "runtime/session.h"

namespace onnx_mini {
namespace {

// Inputs from the declared types: unknown dims are `len`, values small.
std::vector<NamedTensor> Inputs(const Session& s, int64_t len, int seed) {
  std::vector<NamedTensor> feeds;
  for (const ValueInfo& in : s.inputs()) {
    Shape shape;
    for (const Dim& d : *in.type.dims) shape.push_back(d.known() ? d.value : len);
    Tensor t = Tensor::Zeros(in.type.dtype, shape);
    for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, double((i * 7 + seed) % 11) / 4);
    if (in.type.dtype == DType::kInt64)
      for (int64_t i = 0; i < t.size(); ++i) t.data<int64_t>()[i] = (i * 7 + seed) % 11;
    feeds.push_back({in.name, t});
  }
  return feeds;
}

bool SameBits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].shape() != b[k].shape() || a[k].bytes() != b[k].bytes() ||
        std::memcmp(a[k].raw(), b[k].raw(), a[k].bytes()) != 0)
      return false;
  return true;
}

TEST(Concurrency, RunsOnOneSessionFromManyThreadsMatchSerialRuns) {
  SessionOptions options;
  options.threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Load(std::string(ONNX_MINI_TESTDATA) + "/decoder/dynamic.onnx", BuiltinOps(), options);
  ASSERT_TRUE(s.ok()) << s.status();
  constexpr int kThreads = 8, kRuns = 4;
  std::vector<std::vector<NamedTensor>> feeds;
  std::vector<std::vector<Tensor>> expected;
  for (int t = 0; t < kThreads; ++t) {
    // Prefill-sized runs too: oneDNN's GEMMs over packed weights need a
    // scratchpad there, which concurrent runs must not share.
    feeds.push_back(Inputs(**s, std::vector<int64_t>{1, 24, 3, 24}[size_t(t % 4)], t));
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(feeds.back());
    ASSERT_TRUE(out.ok()) << out.status();
    expected.push_back(*out);
  }
  std::vector<int> agreed(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(feeds[size_t(t)]);
        if (out.ok() && SameBits(*out, expected[size_t(t)])) ++agreed[size_t(t)];
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(agreed[size_t(t)], kRuns) << "thread " << t;
}

}  // namespace
}  // namespace onnx_mini
