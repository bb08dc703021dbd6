// bench-nbits: MatMulNBits' decode step (1 row of A, 4-bit block-32 weights
// with no zero points, as onnxruntime-genai writes them) over quantized
// panels (kernels/quant/panel_gemv.h) on the bench-decoder model's shapes,
// each path over "cold" weights (copies filling ~200 MB, run in turn, as a
// model's layers are), beside the floor: the bytes of codes and scales over
// the read bandwidth measured in the same run (a vectorized read-only sum,
// bench-gemm's). Paths, each on every CPU target the host has:
//   float-<t>  - accuracy_level 0 (PanelGemvFloat: VNNI targets take A as
//                integer digits, the others dequantize codes in registers, FMA)
//   int8-<t>   - accuracy_level 4 (PanelGemvInt8: VNNI targets, AVX2 by VPMADDUBSW)
//   many-float, many-int8 - with --rows > 1: panel_gemm's many-rows product
// --copies 1 keeps the weights in cache (the kernels' compute alone).
// --zero-points 1: packed 4-bit zero points (the floor counts their bytes).
//   bench-nbits [--threads N] [--rows M] [--copies C] [--zero-points 0|1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/panel_gemv.h"
#include "kernels/quant/quant_panels.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"
#include "tools/read_bandwidth.h"

using namespace onnx_mini;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


struct Weights {
  std::vector<uint8_t> data, zeros;
  std::vector<float> scales;
  NBitsMatrix w;
  QuantPanelsBuffer panels;
};

// With zero_points: random packed 4-bit zero points (the kernels then read
// the panels' float zero points beside the scales).
Weights Make(int64_t k, int64_t n, uint32_t seed, bool zero_points) {
  std::mt19937 rng(seed);
  Weights x;
  x.w.bits = 4;
  x.w.k = k;
  x.w.n = n;
  x.w.block_size = 32;
  x.w.k_blocks = (k + 31) / 32;
  x.w.zero_default = 8;
  x.data.resize(size_t(n * x.w.k_blocks * 16));
  for (uint8_t& b : x.data) b = uint8_t(rng());
  x.scales.resize(size_t(n * x.w.k_blocks));
  for (float& s : x.scales) s = 0.01f + 0.001f * float(rng() % 50);
  x.w.data = x.data.data();
  x.w.scales = x.scales.data();
  if (zero_points) {
    x.zeros.resize(size_t(n * x.w.zero_row_bytes()));
    for (uint8_t& z : x.zeros) z = uint8_t(rng());
    x.w.zero_packed = x.zeros.data();
  }
  PackNBitsPanels(x.w, &x.panels);
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  int64_t rows = 1;
  int copies_wanted = 0;  // 0: enough to fill ~200 MB (cold weights); 1: hot in cache (the kernels' compute)
  bool zero_points = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--copies")) copies_wanted = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--zero-points")) zero_points = std::atoi(argv[i + 1]) != 0;
  }
  const double gbs = bench::ReadBandwidthGBs(int64_t(256) << 20, threads);
  std::printf("threads %d, rows %lld, read bandwidth %.1f GB/s, CPU %s\n", threads, (long long)rows, gbs,
              HostCpuFeatures().name().c_str());
  struct Shape { int64_t k, n; };
  for (const Shape s : {Shape{1024, 2816}, Shape{2816, 1024}, Shape{1024, 32000}}) {
    // The model's bytes: codes and float scales (and 4-bit zero points).
    const int64_t bytes = s.n * (s.k / 32) * (16 + 4) + (zero_points ? s.n * (s.k / 32) / 2 : 0);
    const int copies =
        copies_wanted > 0 ? copies_wanted : int(std::max<int64_t>(2, (int64_t(200) << 20) / bytes));
    std::vector<Weights> mats;
    for (int i = 0; i < copies; ++i) mats.push_back(Make(s.k, s.n, uint32_t(i), zero_points));
    std::vector<float> a(size_t(rows * s.k)), rounded(a.size()), c(size_t(rows * s.n));
    std::mt19937 rng(7);
    for (float& v : a) v = float(int(rng() % 2001) - 1000) / 500.0f;
    std::vector<float> work(size_t(std::max(NBitsMatMulWorkspace(rows, mats[0].w),
                                            PanelGemvWorkspace(rows, mats[0].panels.view))));
    const float zero = 8;
    const double floor_us = double(bytes) / (gbs * 1e9) * 1e6;
    std::printf("K=%lld N=%lld: %.2f MB of codes and scales, floor %.1f us (%d copies)\n", (long long)s.k,
                (long long)s.n, double(bytes) / 1e6, floor_us, copies);
    auto time = [&](const char* name, auto&& run) {
      for (auto& m : mats) run(m);  // warm: pool, pages
      std::vector<double> per;
      for (int r = 0; r < 7; ++r) {
        const double start = Seconds();
        for (auto& m : mats) run(m);
        per.push_back((Seconds() - start) / double(copies) * 1e6);
      }
      std::sort(per.begin(), per.end());
      std::printf("  %-18s %8.1f us  %5.2fx floor  (c[0] = %g)\n", name, per[3], per[3] / floor_us, double(c[0]));
    };
    auto time_panels = [&](const char* name, auto&& run) {
      time(name, [&](const Weights& x) { run(x.panels.view); });
    };
    for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx512, CpuTarget::kAvx2}) {
      if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(t);
      const std::string name = std::string("float-") + CpuTargetName(t);
      time_panels(name.c_str(), [&](const QuantPanels& p) {
        PanelGemvFloat(a.data(), rows, p, zero_points ? nullptr : &zero, nullptr, c.data(), work.data(), threads);
      });
    }
    for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2}) {
      if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(t);
      const std::string name = std::string("int8-") + CpuTargetName(t);
      time_panels(name.c_str(), [&](const QuantPanels& p) {
        PanelGemvInt8(a.data(), rows, p, zero_points ? nullptr : &zero, nullptr, c.data(), work.data(), threads);
      });
    }
    if (rows > 1) {  // panel_gemm's many-rows product on the same panels, for the crossover
      std::vector<uint8_t> many(size_t(std::max(QuantPanelsMatMulManyWorkspace(rows, mats[0].panels.view, true),
                                                QuantPanelsMatMulManyWorkspace(rows, mats[0].panels.view, false))));
      for (bool int8 : {false, true})
        time_panels(int8 ? "many-int8" : "many-float", [&](const QuantPanels& p) {
          QuantPanelsMatMulMany(a.data(), rows, p, int8, nullptr, c.data(), many.data(), threads);
        });
    }
  }
  return 0;
}
