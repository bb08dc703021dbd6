// Smoke cases: for every registry row, a tiny case that runs it with any
// element types its constraints admit (tests/ops/ops_test.cc runs every row
// with every type it declares). Each family lists its cases beside its tests
// (tests/ops/<family>/smoke.cc), keyed by (domain, op, versions) as the rows
// are: a row picks the one case of its domain and op whose versions cover
// its own, so a row of another domain never borrows an ai.onnx case.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/registry.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {

// One input of a smoke case: its shape and values (empty: all ones; one value: filled).
struct SmokeInput {
  Shape shape;
  std::vector<double> values = {};
};

// What a smoke case runs beyond the row: its inputs, outputs and attributes.
struct SmokeCase {
  std::vector<SmokeInput> inputs;
  size_t outputs = 1;
  Attrs attrs = {};
};

// What a case may depend on: the row (run at its first version) and the
// element types chosen for its input 0 and output 0.
struct SmokeArgs {
  const RegisteredOp& row;
  int64_t opset;
  DType in;
  DType out;
};

struct Smoke {
  std::string domain;
  std::string op;
  Versions versions;  // must cover the whole range of each row it serves
  std::function<SmokeCase(const SmokeArgs&)> make;
  // Adjusts the types chosen for the row's constraints (one per constraint), when they are tied.
  std::function<void(std::vector<DType>&)> tie_types = {};
};

// A case that depends on nothing but the row.
inline std::function<SmokeCase(const SmokeArgs&)> Case(SmokeCase c) {
  return [c](const SmokeArgs&) { return c; };
}

// A tensor of `dtype` shaped and filled as `in` says (strings: "1").
Tensor Filled(DType dtype, const SmokeInput& in);

// The families' cases (tests/ops/<family>/smoke.cc).
std::vector<Smoke> MathSmoke();
std::vector<Smoke> NnSmoke();
std::vector<Smoke> TensorSmoke();
std::vector<Smoke> LlmSmoke();
std::vector<Smoke> QuantSmoke();
std::vector<Smoke> SignalSmoke();
std::vector<Smoke> TextSmoke();
std::vector<Smoke> MlSmoke();
std::vector<Smoke> ContribSmoke();
std::vector<Smoke> AllSmoke();

// The one case among `cases` for `row`: same domain and op, versions
// covering the row's. Null, with `why` set, when there is none or more than one.
const Smoke* FindSmoke(const std::vector<Smoke>& cases, const OpDef& row, std::string* why);

}  // namespace onnx_mini
