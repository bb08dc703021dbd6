// The per-target entry-point tables: which build each set of features gets,
// and the builds the kernel families pick on this machine.
#include "kernels/cpu_dispatch.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "kernels/attention/attention.h"
#include "kernels/gemm/gemm.h"
#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_gemv.h"
#include "kernels/vec/vec_math.h"

namespace onnx_mini {
namespace {

CpuFeatures With(CpuTarget target, bool vnni = false, bool avx_vnni = false) {
  CpuFeatures f = CpuTargetFeatures(target);
  f.avx512_vnni = vnni;
  f.avx_vnni = avx_vnni;
  return f;
}

TEST(CpuDispatchTable, EachFeatureSetGetsItsBestBuild) {
  const CpuDispatchTable<int> table{{CpuTarget::kAvx512Bf16, 3},
                                    {CpuTarget::kAvx512, 2},
                                    {CpuTarget::kAvx2, 1},
                                    {CpuTarget::kBaseline, 0}};
  EXPECT_EQ(table.For(CpuFeatures()).entries, 0);
  EXPECT_EQ(table.For(With(CpuTarget::kAvx2)).entries, 1);
  EXPECT_EQ(table.For(With(CpuTarget::kAvx2, false, true)).entries, 1);  // AVX-VNNI without AVX-512
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512, true)).entries, 2);      // AVX-512 without BF16
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512Bf16, true, true)).entries, 3);
  // AVX2 without F16C is not the avx2 target; AVX-512 BF16 without AVX2 is none.
  CpuFeatures f = With(CpuTarget::kAvx2);
  f.f16c = false;
  EXPECT_EQ(table.For(f).entries, 0);
  f = CpuFeatures();
  f.avx512 = f.avx512_bf16 = true;
  EXPECT_EQ(table.For(f).entries, 0);
  // Every set gets a build whose features it has.
  for (uint32_t bits = 0; bits < (1u << CpuFeatures::kCount); ++bits) {
    const CpuFeatures set = CpuFeatures::FromBits(bits);
    const auto& build = table.For(set);
    EXPECT_TRUE(CpuTargetUsable(build.target, set)) << set.name();
    EXPECT_EQ(build.target, BestCpuTarget(set)) << set.name();
  }
}

TEST(CpuDispatchTable, AFamilyWithoutATargetTakesTheNextBuildDown) {
  // As the strided copy: an AVX2 build only, used on the AVX-512 targets too.
  const CpuDispatchTable<int> table{{CpuTarget::kAvx2, 1}, {CpuTarget::kBaseline, 0}};
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512Bf16)).entries, 1);
  EXPECT_EQ(table.For(CpuFeatures()).entries, 0);
  // As the packed GEMM: an AVX-512 build only.
  const CpuDispatchTable<int> gemm{{CpuTarget::kAvx512, 1}, {CpuTarget::kBaseline, 0}};
  EXPECT_EQ(gemm.For(With(CpuTarget::kAvx2, false, true)).entries, 0);
  EXPECT_EQ(gemm.For(With(CpuTarget::kAvx512Bf16)).entries, 1);
}

TEST(CpuDispatchTable, TheVnniTargetsNeedTheirOwnFeature) {
  // As MatMulNBits' int8 decode: 512-bit VNNI first, then AVX-VNNI, else none.
  const CpuDispatchTable<int> table{{CpuTarget::kAvx512Vnni, 2}, {CpuTarget::kAvxVnni, 1}, {CpuTarget::kBaseline, 0}};
  EXPECT_EQ(table.For(With(CpuTarget::kAvx2, false, true)).entries, 1);
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512, true)).entries, 2);
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512Bf16, true, true)).entries, 2);
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512, false, true)).entries, 1);  // AVX-512 without its VNNI
  EXPECT_EQ(table.For(With(CpuTarget::kAvx512Bf16)).entries, 0);
  EXPECT_EQ(table.For(CpuFeatures()).entries, 0);
  EXPECT_STREQ(CpuTargetName(CpuTarget::kAvxVnni), "avxvnni");
  EXPECT_STREQ(CpuTargetName(CpuTarget::kAvx512Vnni), "avx512vnni");
  // Outside the chain: the best target of a set stays the chain's.
  EXPECT_EQ(BestCpuTarget(With(CpuTarget::kAvx512Bf16, true, true)), CpuTarget::kAvx512Bf16);
}

TEST(CpuDispatchTable, FamiliesFollowTheActiveFeatures) {
  const CpuFeatures host = HostCpuFeatures();
  for (CpuTarget t : kCpuTargets) {
    if (!CpuTargetUsable(t, host)) continue;
    ScopedCpuFeaturesForTesting scope(t);
    SCOPED_TRACE(CpuTargetName(t));
    EXPECT_EQ(VecMathTarget(), t == CpuTarget::kAvx512Bf16 ? CpuTarget::kAvx512 : t);
    EXPECT_EQ(GemmPackedAvailable(), CpuTargetUsable(CpuTarget::kAvx2, ActiveCpuFeatures()));
    // Attention's bfloat16 build only for bfloat16, and only with AVX-512 BF16 active.
    EXPECT_EQ(AttentionFastTarget(DType::kBFloat16), t);
    EXPECT_EQ(AttentionFastTarget(DType::kFloat16), t == CpuTarget::kAvx512Bf16 ? CpuTarget::kAvx512 : t);
    // The chain's targets have no VNNI: the int8 product's AVX2 build (VPMADDUBSW).
    EXPECT_EQ(PanelGemvInt8Target(), t == CpuTarget::kBaseline ? CpuTarget::kBaseline : CpuTarget::kAvx2);
  }
  if (host.avx512_bf16) {
    CpuFeatures no_bf16 = host;  // AVX-512 (and VNNI) without BF16
    no_bf16.avx512_bf16 = false;
    ScopedCpuFeaturesForTesting scope(no_bf16);
    EXPECT_EQ(AttentionFastTarget(DType::kBFloat16), CpuTarget::kAvx512);
  }
  if (host.avx2 && host.f16c && host.avx_vnni) {
    CpuFeatures avx2_vnni = CpuTargetFeatures(CpuTarget::kAvx2);  // AVX-VNNI without AVX-512
    avx2_vnni.avx_vnni = true;
    ScopedCpuFeaturesForTesting scope(avx2_vnni);
    EXPECT_EQ(ActiveCpuFeatures(), avx2_vnni);
    EXPECT_EQ(VecMathTarget(), CpuTarget::kAvx2);
    EXPECT_EQ(AttentionFastTarget(DType::kBFloat16), CpuTarget::kAvx2);
    EXPECT_TRUE(GemmPackedAvailable());
    EXPECT_EQ(PanelGemvInt8Target(), CpuTarget::kAvxVnni);
  }
  if (host.avx512 && host.avx512_vnni) {
    ScopedCpuFeaturesForTesting scope(CpuTarget::kAvx512Vnni);  // without AVX-VNNI or BF16
    EXPECT_EQ(PanelGemvInt8Target(), CpuTarget::kAvx512Vnni);
    EXPECT_EQ(VecMathTarget(), CpuTarget::kAvx512);
  }
  // Unrestricted (ONNX_MINI_CPU unset), the host's best builds.
  if (std::getenv("ONNX_MINI_CPU") == nullptr) {
    const CpuTarget best = BestCpuTarget(host);
    EXPECT_EQ(VecMathTarget(), best == CpuTarget::kAvx512Bf16 ? CpuTarget::kAvx512 : best);
    EXPECT_EQ(GemmPackedAvailable(), CpuTargetUsable(CpuTarget::kAvx2, host));
  }
}

}  // namespace
}  // namespace onnx_mini
