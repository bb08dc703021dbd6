// The tools' default for libgomp's wait policy: a short spin before a waiting
// thread sleeps, unless the user chose one (OMP_WAIT_POLICY or GOMP_SPINCOUNT).
//
// Why: by default a libgomp thread that waits (at the end of a parallel
// region, or for the next one) spins about 300,000 times, milliseconds,
// before it sleeps. oneDNN's GEMMs and the kernels split work statically over
// OpenMP teams, so when another busy process shares the cores a spinning
// thread takes the CPU its preempted teammate needs, and every parallel region
// waits for a time slice: a 2-thread decode step of bench-decoder's model took
// 10 to 40 times longer (README: "Threads under contention").
//
// libgomp reads the policy once, in its own constructor, before any code of
// ours can run: glibc resets the environment after an executable's
// .preinit_array functions, and a library's constructor runs after those of
// its dependencies, libgomp among them. So the tool sets the variable and
// executes itself again, once, before it does anything else. Programs that
// embed libonnx_mini set the variable themselves (the Python package does).
#pragma once

#include <unistd.h>

#include <cstdlib>

namespace onnx_mini {

// libgomp's spins before sleeping: about 10-30 us here (1,000 measured best of
// 300,000, 10,000, 1,000 and 0 under contention; README).
inline constexpr const char* kToolSpinCount = "1000";

// Call first in main(). Returns only if no re-execution was needed or it failed
// (then the tool runs with libgomp's defaults).
inline void ReexecWithOmpWaitDefault(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kToolSpinCount, 1) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace onnx_mini
