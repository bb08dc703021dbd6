#include "runtime/cpu.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace onnx_mini {

namespace {

constexpr bool Bit(uint64_t word, int bit) { return ((word >> bit) & 1) != 0; }

#if defined(__x86_64__) || defined(__i386__)
CpuidWords ReadCpuid() {
  CpuidWords w;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return w;
  w.leaf1_ecx = ecx;
  unsigned max_sub = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    w.leaf7_ebx = ebx;
    w.leaf7_ecx = ecx;
    max_sub = eax;
  }
  if (max_sub >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) w.leaf7_1_eax = eax;
  if (Bit(w.leaf1_ecx, 27)) {  // OSXSAVE: XGETBV may run
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    w.xcr0 = uint64_t(hi) << 32 | lo;
  }
  return w;
}
#endif

CpuFeatures DetectCpuFeatures() {
#if defined(__x86_64__) || defined(__i386__)
  return CpuFeaturesFromCpuid(ReadCpuid());
#else
  return CpuFeatures();
#endif
}

// HostCpuFeatures() restricted by ONNX_MINI_CPU.
CpuFeatures ChooseCpuFeatures() {
  const CpuFeatures host = HostCpuFeatures();
  const char* env = std::getenv("ONNX_MINI_CPU");
  if (env == nullptr) return host;
  const std::string_view want(env);
  CpuFeatures chosen = host;
  bool known = want.empty() || want == "auto";
  // Every target's name, the VNNI ones too: a test or a benchmark can then run the int8 kernels of AVX-VNNI
  // (a 256-bit core's) on an AVX-512 machine.
  std::string names = "auto";
  auto consider = [&](CpuTarget t) {
    names += std::string(", ") + CpuTargetName(t);
    if (want == CpuTargetName(t)) {
      chosen = host.Intersect(CpuTargetFeatures(t));
      known = true;
    }
  };
  for (CpuTarget t : kCpuTargets) consider(t);
  for (CpuTarget t : kCpuVnniTargets) consider(t);
  if (!known) {
    std::fprintf(stderr, "onnx-mini: ONNX_MINI_CPU=%s is not one of %s; ignored\n", env, names.c_str());
  }
  std::fprintf(stderr, "onnx-mini: CPU target %s (best supported: %s; features: %s)\n",
               CpuTargetName(BestCpuTarget(chosen)), CpuTargetName(BestCpuTarget(host)), chosen.name().c_str());
  return chosen;
}

std::atomic<uint32_t>& ActiveSlot() {
  static std::atomic<uint32_t> slot{ChooseCpuFeatures().bits()};
  return slot;
}

}  // namespace

uint32_t CpuFeatures::bits() const {
  return uint32_t(avx2) | uint32_t(f16c) << 1 | uint32_t(avx512) << 2 | uint32_t(avx512_vnni) << 3 |
         uint32_t(avx_vnni) << 4 | uint32_t(avx512_bf16) << 5;
}

CpuFeatures CpuFeatures::FromBits(uint32_t bits) {
  CpuFeatures f;
  f.avx2 = Bit(bits, 0);
  f.f16c = Bit(bits, 1);
  f.avx512 = Bit(bits, 2);
  f.avx512_vnni = Bit(bits, 3);
  f.avx_vnni = Bit(bits, 4);
  f.avx512_bf16 = Bit(bits, 5);
  return f;
}

std::string CpuFeatures::name() const {
  std::string s;
  const auto add = [&](bool on, const char* n) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += n;
  };
  add(avx2, "avx2");
  add(f16c, "f16c");
  add(avx512, "avx512");
  add(avx512_vnni, "avx512vnni");
  add(avx_vnni, "avxvnni");
  add(avx512_bf16, "avx512bf16");
  return s.empty() ? "none" : s;
}

CpuFeatures CpuFeaturesFromCpuid(const CpuidWords& w) {
  // The OS must save the registers an extension uses (XCR0), or using them
  // faults or loses state: YMM needs SSE and AVX state (bits 1, 2), ZMM also
  // the mask and upper ZMM state (bits 5, 6, 7).
  const bool osxsave = Bit(w.leaf1_ecx, 27);
  const bool ymm = osxsave && (w.xcr0 & 0x6) == 0x6;
  const bool zmm = ymm && (w.xcr0 & 0xE0) == 0xE0;
  const bool avx = ymm && Bit(w.leaf1_ecx, 28);
  CpuFeatures f;
  f.avx2 = avx && Bit(w.leaf7_ebx, 5) && Bit(w.leaf1_ecx, 12) && Bit(w.leaf7_ebx, 3) && Bit(w.leaf7_ebx, 8);
  f.f16c = avx && Bit(w.leaf1_ecx, 29);
  f.avx512 = zmm && Bit(w.leaf7_ebx, 16) && Bit(w.leaf7_ebx, 17) && Bit(w.leaf7_ebx, 30) && Bit(w.leaf7_ebx, 31);
  f.avx512_vnni = f.avx512 && Bit(w.leaf7_ecx, 11);
  f.avx_vnni = f.avx2 && Bit(w.leaf7_1_eax, 4);
  f.avx512_bf16 = f.avx512 && Bit(w.leaf7_1_eax, 5);
  return f;
}

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures host = DetectCpuFeatures();
  return host;
}

uint32_t ActiveCpuFeatureBits() { return ActiveSlot().load(std::memory_order_relaxed); }

CpuFeatures ActiveCpuFeatures() { return CpuFeatures::FromBits(ActiveCpuFeatureBits()); }

CpuFeatures RestrictCpuFeaturesForTesting(const CpuFeatures& features) {
  return CpuFeatures::FromBits(
      ActiveSlot().exchange(HostCpuFeatures().Intersect(features).bits(), std::memory_order_relaxed));
}

const char* CpuTargetName(CpuTarget target) {
  switch (target) {
    case CpuTarget::kBaseline: return "baseline";
    case CpuTarget::kAvx2: return "avx2";
    case CpuTarget::kAvx512: return "avx512";
    case CpuTarget::kAvx512Bf16: return "avx512bf16";
    case CpuTarget::kAvxVnni: return "avxvnni";
    case CpuTarget::kAvx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

CpuFeatures CpuTargetFeatures(CpuTarget target) {
  CpuFeatures f;
  f.avx2 = f.f16c = target != CpuTarget::kBaseline;
  f.avx512 = target == CpuTarget::kAvx512 || target == CpuTarget::kAvx512Bf16 || target == CpuTarget::kAvx512Vnni;
  f.avx512_bf16 = target == CpuTarget::kAvx512Bf16;
  f.avx_vnni = target == CpuTarget::kAvxVnni;
  f.avx512_vnni = target == CpuTarget::kAvx512Vnni;
  return f;
}

CpuTarget BestCpuTarget(const CpuFeatures& features) {
  CpuTarget best = CpuTarget::kBaseline;
  for (CpuTarget t : kCpuTargets)
    if (features.Has(CpuTargetFeatures(t))) best = t;
  return best;
}

}  // namespace onnx_mini
