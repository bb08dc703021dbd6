// CPU targets for run-time dispatch. The default build runs on any x86-64;
// hot loops (the bulk float16 conversions, the Attention fast kernel) are
// compiled once per target from one source, and the best target the CPU (and
// OS) supports is chosen at run time, once. Each target includes the ones
// below it. Builds for other architectures have only kBaseline.
#pragma once

namespace onnx_mini {

enum class CpuTarget : int {
  kBaseline = 0,  // x86-64 (SSE2)
  kAvx2 = 1,      // + AVX2, FMA, F16C, BMI1/2
  kAvx512 = 2,    // + AVX-512 F, BW, VL, DQ
  kAvx512Bf16 = 3,  // + AVX-512 BF16 (bfloat16 dot products; only the Attention kernel uses it)
};
const char* CpuTargetName(CpuTarget target);  // "baseline", "avx2", "avx512", "avx512bf16"
// The best target this CPU supports.
CpuTarget BestCpuTarget();
// The target the kernels use: BestCpuTarget(), or lower if the environment
// variable ONNX_MINI_CPU names a lower one (baseline, avx2, avx512, avx512bf16; "auto" or
// empty: the best). When ONNX_MINI_CPU is set, the choice is reported once
// on stderr. Read on first use, then cached.
CpuTarget ActiveCpuTarget();
// For tests: make the kernels use `target` (capped at BestCpuTarget()).
// Returns the previous active target. Not for use while kernels run.
CpuTarget SetCpuTargetForTesting(CpuTarget target);

}  // namespace onnx_mini
