// What the rewrite tests share: each rewrite gives the results of the graph
// as written (the same model run with SessionOptions::graph_rewrites on and
// off), and fires only where it may.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/element.h"
#include "runtime/session.h"
#include "tests/ops/op_tester.h"
#include "tools/model_builder.h"

namespace onnx_mini {

inline std::vector<std::string> OpTypes(const Session& s) {
  std::vector<std::string> ops;
  for (const Node& n : s.graph().nodes) ops.push_back(n.op_type);
  return ops;
}

// Two values agree: within `tol` relative to 1 + |b|, or both NaN (a NaN
// row of the graph as written must be NaN after the rewrite too).
inline bool Agree(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= tol * (1 + std::fabs(b));
}

// Runs `m` both ways, each way one session over every input set in `runs`
// (shapes may change between them); checks the outputs agree within `tol`
// and returns the rewritten session's op types. `on`: the rewritten
// session's options (graph_rewrites is forced on).
inline std::vector<std::string> RunBothWaysMany(const ModelBuilder& m, const std::vector<std::vector<NamedTensor>>& runs,
                                         double tol, SessionOptions on = {}) {
  SessionOptions off = on;
  on.graph_rewrites = true;
  off.graph_rewrites = false;
  auto a = m.Build(on);
  auto b = m.Build(off);
  EXPECT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  if (!a.ok() || !b.ok()) return {};
  for (size_t run = 0; run < runs.size(); ++run) {
    auto ya = (*a)->Run(runs[run]);
    auto yb = (*b)->Run(runs[run]);
    EXPECT_TRUE(ya.ok() && yb.ok()) << "run " << run << ": " << ya.status() << " / " << yb.status();
    if (!ya.ok() || !yb.ok()) return {};
    EXPECT_EQ(ya->size(), yb->size());
    for (size_t k = 0; k < ya->size() && k < yb->size(); ++k) {
      const Tensor& x = (*ya)[k];
      const Tensor& y = (*yb)[k];
      EXPECT_EQ(x.dtype(), y.dtype());
      EXPECT_EQ(x.shape(), y.shape()) << "run " << run << " output " << k;
      if (x.shape() != y.shape()) continue;
      int64_t bad = 0;
      for (int64_t i = 0; i < x.size() && bad < 5; ++i)
        if (!Agree(GetDouble(x, i), GetDouble(y, i), tol)) {
          ++bad;
          ADD_FAILURE() << "run " << run << " output " << k << " [" << i << "]: " << GetDouble(x, i)
                        << " rewritten, " << GetDouble(y, i) << " as written";
        }
    }
  }
  EXPECT_EQ(OpTypes(**b).size(), m.graph().node_size());  // off: as written
  return OpTypes(**a);
}

inline std::vector<std::string> RunBothWays(const ModelBuilder& m, const std::vector<NamedTensor>& inputs, double tol) {
  return RunBothWaysMany(m, {inputs}, tol);
}

}  // namespace onnx_mini
