// bench-nbits: MatMulNBits' decode step (1 row of A, 4-bit block-32 weights
// with no zero points, as onnxruntime-genai writes them) on the bench-decoder
// model's shapes, each path over "cold" weights (copies filling ~200 MB, run
// in turn, as a model's layers are), beside the floor: the bytes of codes and
// scales over the read bandwidth measured in the same run (a vectorized
// read-only sum, bench-gemm's). Paths:
//   float      - accuracy_level 0: codes dequantized in registers, FMA
//   acc4-float - accuracy_level 4 before VNNI: A rounded to int8 values, then the float path
//   int8-<t>   - accuracy_level 4 on each VNNI target the host has (NBitsMatMulInt8)
//   bench-nbits [--threads N] [--rows M]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/quant/nbits_matmul.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"
#include "tools/read_bandwidth.h"

using namespace onnx_mini;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


struct Weights {
  std::vector<uint8_t> data;
  std::vector<float> scales;
  NBitsMatrix w;
};

Weights Make(int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Weights x;
  x.w.bits = 4;
  x.w.k = k;
  x.w.n = n;
  x.w.block_size = 32;
  x.w.k_blocks = (k + 31) / 32;
  x.data.resize(size_t(n * x.w.k_blocks * 16));
  for (uint8_t& b : x.data) b = uint8_t(rng());
  x.scales.resize(size_t(n * x.w.k_blocks));
  for (float& s : x.scales) s = 0.01f + 0.001f * float(rng() % 50);
  x.w.data = x.data.data();
  x.w.scales = x.scales.data();
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  int64_t rows = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
  }
  const double gbs = bench::ReadBandwidthGBs(int64_t(256) << 20, threads);
  std::printf("threads %d, rows %lld, read bandwidth %.1f GB/s, CPU %s\n", threads, (long long)rows, gbs,
              HostCpuFeatures().name().c_str());
  struct Shape { int64_t k, n; };
  for (const Shape s : {Shape{1024, 2816}, Shape{1024, 32000}}) {
    const int64_t bytes = s.n * (s.k / 32) * (16 + 4);
    const int copies = int(std::max<int64_t>(2, (int64_t(200) << 20) / bytes));
    std::vector<Weights> mats;
    for (int i = 0; i < copies; ++i) mats.push_back(Make(s.k, s.n, uint32_t(i)));
    std::vector<float> a(size_t(rows * s.k)), rounded(a.size()), c(size_t(rows * s.n));
    std::mt19937 rng(7);
    for (float& v : a) v = float(int(rng() % 2001) - 1000) / 500.0f;
    std::vector<float> work(size_t(NBitsMatMulWorkspace(rows, mats[0].w)));
    const double floor_us = double(bytes) / (gbs * 1e9) * 1e6;
    std::printf("K=%lld N=%lld: %.2f MB of codes and scales, floor %.1f us (%d copies)\n", (long long)s.k,
                (long long)s.n, double(bytes) / 1e6, floor_us, copies);
    auto time = [&](const char* name, auto&& run) {
      for (auto& m : mats) run(m.w);  // warm: pool, pages
      std::vector<double> per;
      for (int r = 0; r < 7; ++r) {
        const double start = Seconds();
        for (auto& m : mats) run(m.w);
        per.push_back((Seconds() - start) / double(copies) * 1e6);
      }
      std::sort(per.begin(), per.end());
      std::printf("  %-18s %8.1f us  %5.2fx floor  (c[0] = %g)\n", name, per[3], per[3] / floor_us, double(c[0]));
    };
    time("float", [&](const NBitsMatrix& w) { NBitsMatMul(a.data(), rows, w, nullptr, c.data(), work.data(), threads); });
    time("acc4-float", [&](const NBitsMatrix& w) {
      NBitsRoundRowsToInt8(a.data(), rows, w.k, w.block_size, rounded.data());
      NBitsMatMul(rounded.data(), rows, w, nullptr, c.data(), work.data(), threads);
    });
    for (CpuTarget t : kCpuVnniTargets) {
      if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(t);
      const std::string name = std::string("int8-") + CpuTargetName(t);
      time(name.c_str(), [&](const NBitsMatrix& w) {
        NBitsMatMulInt8(a.data(), rows, w, nullptr, c.data(), work.data(), threads);
      });
    }
  }
  return 0;
}
