// The CPU feature table: features from CPUID words (synthetic CPUs), the
// targets derived from them, and the restriction tests use.
#include "runtime/cpu.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace onnx_mini {
namespace {

constexpr uint32_t B(int bit) { return 1u << bit; }

// CPUID leaf 1 ECX: FMA, OSXSAVE, AVX, F16C.
constexpr uint32_t kLeaf1Avx = B(12) | B(27) | B(28) | B(29);
// Leaf 7 EBX: BMI1, AVX2, BMI2; AVX-512 F, DQ, BW, VL.
constexpr uint32_t kLeaf7Avx2 = B(3) | B(5) | B(8);
constexpr uint32_t kLeaf7Avx512 = B(16) | B(17) | B(30) | B(31);
constexpr uint64_t kXcr0Ymm = 0x7, kXcr0Zmm = 0xE7;

CpuidWords Zen5() {
  CpuidWords w;
  w.leaf1_ecx = kLeaf1Avx;
  w.leaf7_ebx = kLeaf7Avx2 | kLeaf7Avx512;
  w.leaf7_ecx = B(11);            // AVX-512 VNNI
  w.leaf7_1_eax = B(4) | B(5);    // AVX-VNNI, AVX-512 BF16
  w.xcr0 = kXcr0Zmm;
  return w;
}

TEST(CpuFeatures, AllOfAZen5) {
  const CpuFeatures f = CpuFeaturesFromCpuid(Zen5());
  EXPECT_TRUE(f.avx2 && f.f16c && f.avx512 && f.avx512_vnni && f.avx_vnni && f.avx512_bf16);
  EXPECT_EQ(f.name(), "avx2 f16c avx512 avx512vnni avxvnni avx512bf16");
  EXPECT_EQ(BestCpuTarget(f), CpuTarget::kAvx512Bf16);
}

TEST(CpuFeatures, AvxVnniWithoutAvx512GivesTheAvx2TargetAndTheVnniFlag) {
  CpuidWords w;  // an Alder Lake: AVX2 and AVX-VNNI, no AVX-512
  w.leaf1_ecx = kLeaf1Avx;
  w.leaf7_ebx = kLeaf7Avx2;
  w.leaf7_1_eax = B(4);
  w.xcr0 = kXcr0Ymm;
  const CpuFeatures f = CpuFeaturesFromCpuid(w);
  EXPECT_TRUE(f.avx2 && f.f16c && f.avx_vnni);
  EXPECT_FALSE(f.avx512 || f.avx512_vnni || f.avx512_bf16);
  EXPECT_EQ(f.name(), "avx2 f16c avxvnni");
  EXPECT_EQ(BestCpuTarget(f), CpuTarget::kAvx2);
  EXPECT_FALSE(CpuTargetUsable(CpuTarget::kAvx512, f));
}

TEST(CpuFeatures, Avx512WithoutBf16NeverGetsTheBf16Target) {
  CpuidWords w = Zen5();  // an Ice Lake server: AVX-512 with VNNI, no BF16
  w.leaf7_1_eax = 0;
  const CpuFeatures f = CpuFeaturesFromCpuid(w);
  EXPECT_TRUE(f.avx512 && f.avx512_vnni);
  EXPECT_FALSE(f.avx512_bf16 || f.avx_vnni);
  EXPECT_EQ(BestCpuTarget(f), CpuTarget::kAvx512);
  EXPECT_FALSE(CpuTargetUsable(CpuTarget::kAvx512Bf16, f));
  // The BF16 bit alone, without the AVX-512 baseline (F, BW, DQ, VL), is no AVX-512 BF16.
  w = Zen5();
  w.leaf7_ebx &= ~B(30);  // no AVX-512 BW
  const CpuFeatures g = CpuFeaturesFromCpuid(w);
  EXPECT_FALSE(g.avx512 || g.avx512_vnni || g.avx512_bf16);
  EXPECT_TRUE(g.avx2 && g.avx_vnni);
  EXPECT_EQ(BestCpuTarget(g), CpuTarget::kAvx2);
}

TEST(CpuFeatures, TheOsMustSaveTheRegisters) {
  // XCR0 without the mask and ZMM state: no AVX-512 of any kind, AVX2 stays.
  CpuidWords w = Zen5();
  w.xcr0 = kXcr0Ymm;
  CpuFeatures f = CpuFeaturesFromCpuid(w);
  EXPECT_FALSE(f.avx512 || f.avx512_vnni || f.avx512_bf16);
  EXPECT_TRUE(f.avx2 && f.f16c && f.avx_vnni);
  EXPECT_EQ(BestCpuTarget(f), CpuTarget::kAvx2);
  // Only part of the ZMM state (no upper 16 registers): still none.
  w.xcr0 = 0x67;
  EXPECT_FALSE(CpuFeaturesFromCpuid(w).avx512);
  // Without YMM state, or without OSXSAVE (XCR0 not readable), nothing at all.
  w.xcr0 = 0x3;
  EXPECT_EQ(CpuFeaturesFromCpuid(w), CpuFeatures());
  w = Zen5();
  w.leaf1_ecx &= ~B(27);
  f = CpuFeaturesFromCpuid(w);
  EXPECT_EQ(f, CpuFeatures());
  EXPECT_EQ(f.name(), "none");
  EXPECT_EQ(BestCpuTarget(f), CpuTarget::kBaseline);
}

TEST(CpuFeatures, Avx2NeedsFmaAndBmi) {
  for (int bit : {3, 5, 8}) {
    CpuidWords w = Zen5();
    w.leaf7_ebx &= ~B(bit);
    EXPECT_FALSE(CpuFeaturesFromCpuid(w).avx2) << "leaf 7 EBX bit " << bit;
  }
  CpuidWords w = Zen5();
  w.leaf1_ecx &= ~B(12);  // no FMA
  const CpuFeatures f = CpuFeaturesFromCpuid(w);
  EXPECT_FALSE(f.avx2);
  EXPECT_TRUE(f.f16c);  // F16C is its own flag
  EXPECT_EQ(BestCpuTarget(f), CpuTarget::kBaseline);
}

TEST(CpuFeatures, BitsRoundTrip) {
  for (uint32_t bits = 0; bits < (1u << CpuFeatures::kCount); ++bits)
    EXPECT_EQ(CpuFeatures::FromBits(bits).bits(), bits);
}

TEST(CpuTarget, NamesAndFeatures) {
  const char* names[] = {"baseline", "avx2", "avx512", "avx512bf16"};
  for (CpuTarget t : kCpuTargets) {
    EXPECT_STREQ(CpuTargetName(t), names[int(t)]);
    EXPECT_EQ(BestCpuTarget(CpuTargetFeatures(t)), t);
  }
  EXPECT_EQ(CpuTargetFeatures(CpuTarget::kAvx512Bf16).name(), "avx2 f16c avx512 avx512bf16");
}

TEST(CpuTarget, ActiveIsTheHostUnlessRestricted) {
  // Reports the choice (the portable build must reach avx512 on AVX-512 machines,
  // avx512bf16 on those with AVX-512 BF16).
  const CpuFeatures host = HostCpuFeatures();
  std::printf("CPU target: active %s, best %s; host features: %s\n", CpuTargetName(BestCpuTarget(ActiveCpuFeatures())),
              CpuTargetName(BestCpuTarget(host)), host.name().c_str());
  if (std::getenv("ONNX_MINI_CPU") == nullptr) {
    EXPECT_EQ(ActiveCpuFeatures(), host);
  }
  EXPECT_TRUE(host.Has(ActiveCpuFeatures()));
  {
    ScopedCpuFeaturesForTesting all(CpuFeatures::FromBits((1u << CpuFeatures::kCount) - 1));
    EXPECT_EQ(ActiveCpuFeatures(), host);  // never more than the host has
    ScopedCpuFeaturesForTesting baseline(CpuTarget::kBaseline);
    EXPECT_EQ(ActiveCpuFeatures(), CpuFeatures());
    EXPECT_EQ(ActiveCpuFeatureBits(), 0u);
  }
  EXPECT_TRUE(host.Has(ActiveCpuFeatures()));
  if (std::getenv("ONNX_MINI_CPU") == nullptr) {
    EXPECT_EQ(ActiveCpuFeatures(), host);
  }
}

}  // namespace
}  // namespace onnx_mini
