// CPU features for run-time dispatch. The default build runs on any x86-64;
// hot loops are compiled once per target from one source, and each kernel
// family picks, from the active features, the best build whose features are
// all there (kernels/cpu_dispatch.h: one table per family, filled once).
// Features are independent flags, detected once (CPUID, and XGETBV for the
// OS's saving of the wider registers): AVX-VNNI comes without AVX-512 on some
// CPUs, AVX-512 without BF16 or VNNI on others. Builds for other
// architectures have no features.
#pragma once

#include <cstdint>
#include <string>

namespace onnx_mini {

struct CpuFeatures {
  bool avx2 = false;         // AVX2, FMA, BMI1/2 (and AVX), YMM state saved by the OS
  bool f16c = false;         // F16C, YMM state saved by the OS
  bool avx512 = false;       // AVX-512 F, BW, DQ, VL, ZMM and mask state saved by the OS
  bool avx512_vnni = false;  // AVX-512 VNNI (int8 dot products on ZMM; needs avx512)
  bool avx_vnni = false;     // AVX-VNNI (the VEX int8 dot products; YMM state)
  bool avx512_bf16 = false;  // AVX-512 BF16 (bfloat16 dot products; needs avx512)

  static constexpr int kCount = 6;  // the flags above; sets of them index 1 << kCount tables
  uint32_t bits() const;
  static CpuFeatures FromBits(uint32_t bits);
  // Whether every feature of `needed` is here.
  bool Has(const CpuFeatures& needed) const { return (bits() & needed.bits()) == needed.bits(); }
  CpuFeatures Intersect(const CpuFeatures& other) const { return FromBits(bits() & other.bits()); }
  bool operator==(const CpuFeatures& other) const { return bits() == other.bits(); }
  bool operator!=(const CpuFeatures& other) const { return bits() != other.bits(); }
  // "avx2 f16c avx512 avx512vnni avxvnni avx512bf16" (those present), "none" for none.
  std::string name() const;
};

// The CPUID words and XCR0 the features are read from (zero where a leaf or
// XGETBV is not available).
struct CpuidWords {
  uint32_t leaf1_ecx = 0;    // FMA 12, OSXSAVE 27, AVX 28, F16C 29
  uint32_t leaf7_ebx = 0;    // BMI1 3, AVX2 5, BMI2 8, AVX512F 16, DQ 17, BW 30, VL 31
  uint32_t leaf7_ecx = 0;    // AVX512_VNNI 11
  uint32_t leaf7_1_eax = 0;  // AVX-VNNI 4, AVX512_BF16 5
  uint64_t xcr0 = 0;         // read only when OSXSAVE: SSE 1, AVX 2, opmask 5, ZMM 6-7
};
// The features those words give (a pure function; tests feed it synthetic words).
CpuFeatures CpuFeaturesFromCpuid(const CpuidWords& words);
// This CPU's (and OS's) features, detected once.
const CpuFeatures& HostCpuFeatures();

// The features the kernels use: HostCpuFeatures(), or fewer when the
// environment variable ONNX_MINI_CPU names a lower target (baseline, avx2,
// avx512, avx512bf16; "auto" or empty: all). When ONNX_MINI_CPU is set, the
// choice is reported once on stderr. Read on first use, then cached.
CpuFeatures ActiveCpuFeatures();
// The same as bits(), for the dispatch tables' lookups.
uint32_t ActiveCpuFeatureBits();
// For tests: make the kernels use only `features` (never more than the
// host's: the intersection). Returns the previous active set. Not for use
// while kernels run.
CpuFeatures RestrictCpuFeaturesForTesting(const CpuFeatures& features);

// The targets kernels are compiled for, each the set of features its builds
// need (a build carries the target attributes of those features). A target is
// usable when all its features are active.
enum class CpuTarget : int {
  kBaseline = 0,    // x86-64 (SSE2)
  kAvx2 = 1,        // avx2 + f16c
  kAvx512 = 2,      // avx2 + f16c + avx512
  kAvx512Bf16 = 3,  // avx2 + f16c + avx512 + avx512_bf16 (only the Attention kernel has this build)
  // The int8 dot-product targets (the quantized products' kernels have builds for them). Not a step of
  // the chain above (AVX-VNNI comes without AVX-512, AVX-512 without VNNI), so not in kCpuTargets: the
  // target a prepared weight records stays the chain's. ONNX_MINI_CPU takes their names too.
  kAvxVnni = 4,     // avx2 + f16c + avx_vnni
  kAvx512Vnni = 5,  // avx2 + f16c + avx512 + avx512_vnni
};
constexpr CpuTarget kCpuTargets[] = {CpuTarget::kBaseline, CpuTarget::kAvx2, CpuTarget::kAvx512,
                                     CpuTarget::kAvx512Bf16};
constexpr CpuTarget kCpuVnniTargets[] = {CpuTarget::kAvxVnni, CpuTarget::kAvx512Vnni};
// The one name of each target: "baseline", "avx2", "avx512", "avx512bf16", "avxvnni", "avx512vnni".
const char* CpuTargetName(CpuTarget target);
CpuFeatures CpuTargetFeatures(CpuTarget target);
inline bool CpuTargetUsable(CpuTarget target, const CpuFeatures& features) {
  return features.Has(CpuTargetFeatures(target));
}
// The last target of kCpuTargets whose features `features` has (for reports).
CpuTarget BestCpuTarget(const CpuFeatures& features);
// The best target the active features allow: what a prepared (packed) weight records, so that a
// kernel of another target never reads it.
inline CpuTarget ActiveCpuTarget() { return BestCpuTarget(ActiveCpuFeatures()); }

// Restricts the active features for the scope of a test (then restores them).
class ScopedCpuFeaturesForTesting {
 public:
  explicit ScopedCpuFeaturesForTesting(const CpuFeatures& features)
      : saved_(RestrictCpuFeaturesForTesting(features)) {}
  explicit ScopedCpuFeaturesForTesting(CpuTarget target) : ScopedCpuFeaturesForTesting(CpuTargetFeatures(target)) {}
  ~ScopedCpuFeaturesForTesting() { RestrictCpuFeaturesForTesting(saved_); }
  ScopedCpuFeaturesForTesting(const ScopedCpuFeaturesForTesting&) = delete;
  ScopedCpuFeaturesForTesting& operator=(const ScopedCpuFeaturesForTesting&) = delete;

 private:
  CpuFeatures saved_;
};

}  // namespace onnx_mini
