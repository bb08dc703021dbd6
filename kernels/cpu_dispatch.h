// The one table of per-target entry points of a kernel family. A family
// compiles its hot code once per CpuTarget (runtime/cpu.h) and lists its
// builds, best first, each with the target it was compiled for; the table
// maps every set of CPU features to the first build whose target's features
// are all in the set. It is filled once (a function-local static: first use,
// thread-safe), and a call looks up the active features' entry (one relaxed
// load and an index, as cheap as a switch), so restricting the features in
// a test changes the build every family uses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "runtime/cpu.h"

namespace onnx_mini {

template <class Entries>
class CpuDispatchTable {
 public:
  struct Build {
    CpuTarget target;
    Entries entries;
  };
  // `builds` best first; the last should be kBaseline (a set no build
  // matches gets the last build).
  CpuDispatchTable(std::initializer_list<Build> builds) : builds_(builds) {
    for (uint32_t set = 0; set < pick_.size(); ++set) {
      const CpuFeatures features = CpuFeatures::FromBits(set);
      size_t i = 0;
      while (i + 1 < builds_.size() && !features.Has(CpuTargetFeatures(builds_[i].target))) ++i;
      pick_[set] = &builds_[i];
    }
  }
  CpuDispatchTable(const CpuDispatchTable&) = delete;
  CpuDispatchTable& operator=(const CpuDispatchTable&) = delete;

  // The active features' build, and its entries.
  const Build& ActiveBuild() const { return *pick_[ActiveCpuFeatureBits() & (pick_.size() - 1)]; }
  const Entries& Active() const { return ActiveBuild().entries; }
  const Build& For(const CpuFeatures& features) const { return *pick_[features.bits()]; }

 private:
  std::vector<Build> builds_;
  std::array<const Build*, size_t{1} << CpuFeatures::kCount> pick_{};
};

}  // namespace onnx_mini
