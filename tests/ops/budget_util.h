// Memory-budget checks for ops with workspaces or made outputs: a model run
// under a small SessionOptions::memory_limit fails cleanly, naming the node
// and the limit, before the workspace is allocated, and the session stays
// usable; under the default limit the same run gives the outputs.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/session.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {

// Runs `m` on `inputs` under `limit` bytes and expects ResourceExhausted
// naming `node` and the limit; then the same session runs `fits` (inputs
// whose run fits the limit), several times: a failed run gave every byte
// back. Then, under the default limit, returns the outputs of `inputs`.
inline std::vector<Value> RunOverThenUnderBudget(const ModelBuilder& m, const std::vector<NamedValue>& inputs,
                                                 size_t limit, const std::string& node,
                                                 const std::vector<NamedValue>& fits) {
  SessionOptions small;
  small.memory_limit = limit;
  absl::StatusOr<std::unique_ptr<Session>> session = m.Build(small);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  for (int i = 0; i < 3; ++i) {
    std::vector<Value> out;
    const absl::Status s = (*session)->RunValues(inputs, &out);
    EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("'" + node + "'")) << s;
    EXPECT_THAT(std::string(s.message()),
                ::testing::HasSubstr("exceed the session's memory limit of " + std::to_string(limit) + " bytes"))
        << s;
    const absl::Status again = (*session)->RunValues(fits, &out);
    EXPECT_TRUE(again.ok()) << again;
  }
  absl::StatusOr<std::unique_ptr<Session>> big = m.Build();
  EXPECT_TRUE(big.ok()) << big.status();
  if (!big.ok()) return {};
  std::vector<Value> out;
  const absl::Status s = (*big)->RunValues(inputs, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// Runs `t` under `limit` bytes and expects ResourceExhausted naming the node
// (OpTester's are named by ModelBuilder: 'Op_1') and the limit.
inline void ExpectOverBudget(OpTester t, size_t limit) {
  t.memory_limit = limit;
  absl::StatusOr<std::vector<Tensor>> out = t.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(out.status())) << out.status();
  EXPECT_THAT(std::string(out.status().message()), ::testing::HasSubstr(t.op + " node '")) << out.status();
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::HasSubstr("exceed the session's memory limit of " + std::to_string(limit) + " bytes"))
      << out.status();
}

}  // namespace onnx_mini
