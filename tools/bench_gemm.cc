// bench-gemm: the float32 weight products of a decoder's prefill (128 rows of
// A by default), on PackedMatMul as a session runs them, two ways:
//   gemm   - kernels/gemm/gemm.h (our packed kernel: AVX-512 or AVX2, the default)
//   onednn - oneDNN's matmul with its packed weights (the kernels' CPU target
//            capped at baseline for this column: oneDNN still picks its own ISA)
// each with "hot" weights (one matrix, run again and again: it stays in the
// caches) and "cold" ones (enough copies to fill 200 MB, run in turn, as a
// model's layers are), each as GFLOP/s and as % of the FMA peak of the cores
// used (the best of many runs each timed alone, and cold also per CPU
// second at 1 thread, as % of one core's peak: the cores are often shared,
// see Gflops),
// with the machine's floors measured beside them: one core's float32 FMA
// peak (AVX-512 and AVX2), and the memory read bandwidth at 1 and N threads
// (84 MB read in order, from three such buffers in turn so that none is still
// in the caches).
//   bench-gemm [--rows M[,M...]] [--threads N] [--model qwen|tiny] [--no-onednn] [--cold-c]
// --cold-c: the cold runs also write C to buffers not in cache (100 MB of
// them in turn), as a model's MatMul outputs are.
// --model: the Qwen2-sized decoder's products (bench-decoder --quant's float
// form: hidden 1024, MLP 2816, vocabulary 32000; the default) or the tiny
// decoder's (hidden 512, MLP 1408, vocabulary 8192).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/gemm/onednn.h"
#include "kernels/gemm/prepared_matmul.h"
#include "runtime/cpu.h"
#include "runtime/tensor.h"
#include "runtime/thread_pool.h"
#include "tools/read_bandwidth.h"

using namespace onnx_mini;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if defined(__x86_64__)
// One core's float32 FMA peak: kChains independent FMA chains, enough to
// cover the FMA latency (4 cycles) on two pipes (Zen 5's full-width 512-bit
// ones, or Zen 4's double-pumped ones) with room to spare, each kept in a
// register (AVX2 has 16 registers: 12 chains, the two operands and room).
// The best of many short runs: the machine's cores are shared, and a run that
// another process interrupts (a time slice is a few ms) reads low (the old
// probe's one 30 ms run read 115 here on a busy machine, 262 on a quiet one).
constexpr int kChains512 = 16, kChains256 = 12;
// The best GFLOP/s of 200 runs of kChains chains of VEC (LANES floats).
#define ONNX_MINI_PEAK_BODY(kChains, VEC, LANES, SET1, FMA)                                  \
  VEC acc[kChains];                                                                          \
  for (int i = 0; i < kChains; ++i) acc[i] = SET1(float(i));                                 \
  const VEC b = SET1(0.999f), c = SET1(0.001f);                                              \
  const long iters = 200000; /* ~1.5 ms at the peak */                                       \
  double best = 0;                                                                           \
  for (int rep = 0; rep < 200; ++rep) {                                                      \
    const double start = Seconds();                                                          \
    for (long i = 0; i < iters; ++i) {                                                       \
      _Pragma("GCC unroll 16") for (int j = 0; j < kChains; ++j) acc[j] = FMA(acc[j], b, c); \
    }                                                                                        \
    best = std::max(best, double(iters) * kChains * 2 * LANES / (Seconds() - start) / 1e9);  \
  }                                                                                          \
  float sum = 0;                                                                             \
  for (int j = 0; j < kChains; ++j) sum += reinterpret_cast<const float*>(&acc[j])[0];       \
  if (sum == 12345.f) std::puts(""); /* keeps every chain */                                 \
  return best;
[[gnu::target("avx512f")]] double PeakAvx512Gflops() {
  ONNX_MINI_PEAK_BODY(kChains512, __m512, 16, _mm512_set1_ps, _mm512_fmadd_ps)
}
[[gnu::target("avx2,fma")]] double PeakAvx2Gflops() {
  ONNX_MINI_PEAK_BODY(kChains256, __m256, 8, _mm256_set1_ps, _mm256_fmadd_ps)
}
#undef ONNX_MINI_PEAK_BODY
#endif


struct Shape2 {
  int64_t k, n, per_model;  // per_model: how many the decoder's prefill runs
};

// The CPU time this process has used (every thread), in seconds.
double ProcessCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The wall and CPU seconds of the timed runs, for the share of the cores the
// process had (other processes on the machine's cores make the rates read low).
double g_wall = 0, g_cpu = 0;

// GFLOP/s of `rounds` runs of every matrix in `mats` once, each run timed
// alone: the best run by wall time (the one least disturbed by other
// processes: a run of a few ms fits between their time slices), the best
// GFLOP per CPU second into `per_cpu` (one core's rate while it computed,
// blind to time slices given to others: the wall rate of a quiet machine;
// only at 1 thread, as the process's CPU clock counts the other threads' time
// only at scheduler ticks, up to ms late), and the median by wall time into
// `median`.
// `outs` (optional): the timed runs write C to these in turn, as a model's
// outputs land in memory not in cache (C reused stays in L2).
double Gflops(const std::vector<std::unique_ptr<PackedMatMul>>& mats, const float* a, float* c, int64_t m,
              int64_t k, int64_t n, int threads, int rounds, double* per_cpu, double* median,
              const std::vector<std::vector<float>>* outs = nullptr) {
  for (auto& p : mats) p->Run(a, c, m, threads);  // packs, makes primitives
  size_t next_out = 0;
  const double flops = 2.0 * double(m) * double(k) * double(n);
  std::vector<double> rates;
  *per_cpu = 0;
  for (int r = 0; r < rounds; ++r) {
    for (auto& p : mats) {
      float* out = outs ? const_cast<float*>((*outs)[next_out++ % outs->size()].data()) : c;
      const double start = Seconds(), cpu = ProcessCpuSeconds();
      p->Run(a, out, m, threads);
      const double wall = Seconds() - start, used = ProcessCpuSeconds() - cpu;
      g_wall += wall * threads;
      g_cpu += used;
      rates.push_back(flops / wall / 1e9);
      *per_cpu = std::max(*per_cpu, flops / std::max(used, 1e-9) / 1e9);
    }
  }
  std::sort(rates.begin(), rates.end());
  *median = rates[rates.size() / 2];
  return rates.back();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> rows = {128};
  int threads = 1;
  std::string model = "qwen";
  bool onednn = true, cold_c = false;
  const char* usage = "usage: bench-gemm [--rows M[,M...]] [--threads N] [--model qwen|tiny] [--no-onednn] [--cold-c]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-onednn") {
      onednn = false;
      continue;
    }
    if (flag == "--cold-c") {
      cold_c = true;
      continue;
    }
    if (i + 1 >= argc) return std::fprintf(stderr, "%s", usage), 2;
    const char* value = argv[++i];
    if (flag == "--rows") {
      rows.clear();
      for (const char* p = value; *p;) {
        char* end = nullptr;
        rows.push_back(std::strtoll(p, &end, 10));
        if (end == p || rows.back() < 1 || rows.back() > (1 << 20))
          return std::fprintf(stderr, "bench-gemm: rows must be 1 to 2^20\n"), 2;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') return std::fprintf(stderr, "%s", usage), 2;
      }
    } else if (flag == "--threads") {
      threads = std::atoi(value);
    } else if (flag == "--model") {
      model = value;
    } else {
      return std::fprintf(stderr, "%s", usage), 2;
    }
  }
  if (rows.empty() || threads < 1 || threads > 256 || (model != "qwen" && model != "tiny"))
    return std::fprintf(stderr, "%s", usage), 2;
  if (!CpuTargetUsable(CpuTarget::kAvx2, HostCpuFeatures())) {
    std::printf("bench-gemm: this CPU has no AVX2: products run on oneDNN only\n");
    return 0;
  }
  // The packed GEMM's best build here, and the peak its % are of.
  const bool avx512 = CpuTargetUsable(CpuTarget::kAvx512, HostCpuFeatures());
  const CpuTarget gemm_target = avx512 ? CpuTarget::kAvx512 : CpuTarget::kAvx2;
  double peak = 0;
#if defined(__x86_64__)
  auto probe_peak = [&] { return avx512 ? PeakAvx512Gflops() : PeakAvx2Gflops(); };
  peak = probe_peak();
  if (avx512)
    std::printf("one core's float32 FMA peak: AVX-512 %.0f GFLOP/s, AVX2 %.0f GFLOP/s (%d and %d chains, the best "
                "of 200 runs)\n",
                peak, PeakAvx2Gflops(), kChains512, kChains256);
  else
    std::printf("one core's float32 FMA peak: AVX2 %.0f GFLOP/s (%d chains, the best of 200 runs; no AVX-512)\n",
                peak, kChains256);
  std::printf("memory read bandwidth (84 MB in order): 1 thread %.1f GB/s", bench::ReadBandwidthGBs(84 << 20, 1, 3));
  if (threads > 1) std::printf(", %d threads %.1f GB/s", threads, bench::ReadBandwidthGBs(84 << 20, threads, 3));
  std::printf("\n");
#endif
  // The cores the products may use: the peak they can reach is that many cores' peak.
  const int cores = std::max(1, std::min(threads, int(std::max(1u, std::thread::hardware_concurrency()))));
  std::printf("%s decoder's products, %d thread(s); GFLOP/s: the best run (hot: 5 x copies runs, 20 at least, "
              "cold: 5 rounds over the copies), %% of %d core(s)' %s peak (probed again beside each shape: "
              "the highest)\n",
              model.c_str(), threads, cores, avx512 ? "AVX-512" : "AVX2");
  const std::vector<Shape2> shapes =
      model == "qwen"
          ? std::vector<Shape2>{{1024, 1024, 16}, {1024, 256, 16}, {1024, 2816, 16}, {2816, 1024, 8}, {1024, 32000, 1}}
          : std::vector<Shape2>{{512, 512, 8}, {512, 128, 8}, {512, 1408, 8}, {1408, 512, 4}, {512, 8192, 1}};
  for (const int64_t m : rows) {
    std::printf("\n%lld rows of A\n\n", static_cast<long long>(m));
    std::printf("| k x n | in the prefill | gemm hot | %% peak | gemm cold | %% peak | cold per CPU s | %% 1 core "
                "| onednn hot | onednn cold |\n|---|---|---|---|---|---|---|---|---|---|\n");
    double model_ms[2] = {0, 0};
    std::vector<std::array<double, 5>> table;  // gemm hot, cold, cold per CPU s; onednn hot, cold
    for (const Shape2& s : shapes) {
      const int copies = int(200e6 / double(s.k * s.n * 4)) + 1;
      std::vector<Tensor> weights;
      for (int i = 0; i < copies; ++i) {
        weights.push_back(Tensor::Zeros(DType::kFloat, {s.k, s.n}));
        float* w = weights.back().data<float>();
        for (int64_t j = 0; j < s.k * s.n; ++j) w[j] = float((j * 7 + i) % 13) * 0.01f;
      }
      std::vector<float> a(size_t(m * s.k), 0.5f), c(size_t(m * s.n));
      std::vector<std::vector<float>> outs;
      if (cold_c) outs.assign(size_t(100e6 / double(m * s.n * 4)) + 1, std::vector<float>(size_t(m * s.n), 0.0f));
      double rate[2][2] = {{0, 0}, {0, 0}};  // [gemm, onednn][hot, cold]
      double cold_cpu[2] = {0, 0};
      for (int way = 0; way < (onednn ? 2 : 1); ++way) {
        ScopedCpuFeaturesForTesting scope(way == 0 ? gemm_target : CpuTarget::kBaseline);
        std::vector<std::unique_ptr<PackedMatMul>> all;
        for (const Tensor& w : weights) all.push_back(PackedMatMul::Make(w, false, Tensor(), threads));
        std::vector<std::unique_ptr<PackedMatMul>> one;
        one.push_back(PackedMatMul::Make(weights[0], false, Tensor(), threads));
        double median_hot = 0, median_cold = 0, cpu_hot = 0;
        rate[way][0] =
            Gflops(one, a.data(), c.data(), m, s.k, s.n, threads, std::max(20, 5 * copies), &cpu_hot, &median_hot);
        rate[way][1] = Gflops(all, a.data(), c.data(), m, s.k, s.n, threads, 5, &cold_cpu[way], &median_cold,
                              cold_c ? &outs : nullptr);
        model_ms[way] += 2.0 * double(m) * double(s.k) * double(s.n) * double(s.per_model) / median_cold / 1e6;
      }
      table.push_back({rate[0][0], rate[0][1], cold_cpu[0], rate[1][0], rate[1][1]});  // cold_cpu: per CPU s
#if defined(__x86_64__)
      peak = std::max(peak, probe_peak());
#endif
    }
    const double cores_peak = peak * cores;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Shape2& s = shapes[i];
      const std::array<double, 5>& r = table[i];
      std::printf("| %lld x %lld | %lld | %.0f | %.0f%% | %.0f | %.0f%% | ", static_cast<long long>(s.k),
                  static_cast<long long>(s.n), static_cast<long long>(s.per_model), r[0], 100 * r[0] / cores_peak,
                  r[1], 100 * r[1] / cores_peak);
      if (threads == 1) std::printf("%.0f | %.0f%% | ", r[2], 100 * r[2] / peak);
      else std::printf("- | - | ");
      if (onednn) std::printf("%.0f | %.0f |\n", r[3], r[4]);
      else std::printf("- | - |\n");
    }
    std::printf("\nthe peak the %% are of: %.0f GFLOP/s per core", peak);
    // Below ~95%, other processes had the cores part of the time: the wall
    // rates (the best run of each: short runs dodge them) and the times
    // (median runs) read low; the rates per CPU second do not.
    std::printf("\nCPU time / (wall time x threads) over the timed runs: %.0f%%",
                100 * g_cpu / std::max(g_wall, 1e-9));
    g_wall = g_cpu = 0;
    std::printf("\nthe prefill's products with cold weights (median runs): gemm %.1f ms", model_ms[0]);
    if (onednn) std::printf(", onednn %.1f ms", model_ms[1]);
    std::printf("\n");
  }
  return 0;
}
