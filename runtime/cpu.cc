#include "runtime/cpu.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace onnx_mini {

namespace {

constexpr CpuTarget kCpuTargets[] = {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512,
                                     CpuTarget::kAvx512Bf16};

CpuTarget DetectCpuTarget() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's cpu model also checks that the OS saves the AVX / AVX-512 state.
  __builtin_cpu_init();
  // F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    f16c && __builtin_cpu_supports("bmi") &&
                    __builtin_cpu_supports("bmi2");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  // AVX-512 BF16 from CPUID leaf 7, sub-leaf 1 (EAX bit 5): GCC 12's
  // __builtin_cpu_supports does not know it.
  const bool bf16 = avx512 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
  return bf16 ? CpuTarget::kAvx512Bf16 : avx512 ? CpuTarget::kAvx512 : avx2 ? CpuTarget::kAvx2 : CpuTarget::kBaseline;
#else
  return CpuTarget::kBaseline;
#endif
}

// BestCpuTarget() capped by ONNX_MINI_CPU.
CpuTarget ChooseCpuTarget() {
  const CpuTarget best = BestCpuTarget();
  const char* env = std::getenv("ONNX_MINI_CPU");
  if (env == nullptr) return best;
  const std::string_view want(env);
  CpuTarget chosen = best;
  bool known = want.empty() || want == "auto";
  for (CpuTarget t : kCpuTargets)
    if (want == CpuTargetName(t)) {
      chosen = std::min(t, best);
      known = true;
    }
  if (!known)
    std::fprintf(stderr, "onnx-mini: ONNX_MINI_CPU=%s is not auto, baseline, avx2, avx512 or avx512bf16; ignored\n",
                 env);
  std::fprintf(stderr, "onnx-mini: CPU target %s (best supported: %s)\n", CpuTargetName(chosen),
               CpuTargetName(best));
  return chosen;
}

std::atomic<int>& ActiveCpuTargetSlot() {
  static std::atomic<int> slot{int(ChooseCpuTarget())};
  return slot;
}

}  // namespace

const char* CpuTargetName(CpuTarget target) {
  switch (target) {
    case CpuTarget::kBaseline: return "baseline";
    case CpuTarget::kAvx2: return "avx2";
    case CpuTarget::kAvx512: return "avx512";
    case CpuTarget::kAvx512Bf16: return "avx512bf16";
  }
  return "unknown";
}

CpuTarget BestCpuTarget() {
  static const CpuTarget best = DetectCpuTarget();
  return best;
}

CpuTarget ActiveCpuTarget() { return CpuTarget(ActiveCpuTargetSlot().load(std::memory_order_relaxed)); }

CpuTarget SetCpuTargetForTesting(CpuTarget target) {
  return CpuTarget(ActiveCpuTargetSlot().exchange(int(std::min(target, BestCpuTarget())), std::memory_order_relaxed));
}

}  // namespace onnx_mini
