// bench-gemm: the float32 weight products of the bench-decoder model's prefill
// (128 rows of A), on PackedMatMul as a session runs them, two ways:
//   gemm   - kernels/gemm/gemm.h (our packed kernel, the default on AVX-512)
//   onednn - oneDNN's matmul with its packed weights (the kernels' CPU target
//            capped at avx2 for this column: oneDNN still picks its own ISA)
// each with "hot" weights (one matrix, run again and again: it stays in the
// caches) and "cold" ones (enough copies to fill 200 MB, run in turn, as a
// model's layers are), with the machine's floors measured beside them: one
// core's FMA peak, and the memory read bandwidth at 1 and N threads (84 MB
// read in order, as a decode step of attn_decode_static_f32 reads its K and
// V, from three such buffers in turn so that none is still in the caches).
//   bench-gemm [--rows M] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
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
// 12 independent FMA chains of 16 floats: the core's float32 peak.
[[gnu::target("avx512f")]] double PeakGflops() {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  const long iters = 20000000;
  const double start = Seconds();
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], b, c);
  const double t = Seconds() - start;
  __m512 sum = acc[0];
  for (int j = 1; j < 12; ++j) sum = _mm512_add_ps(sum, acc[j]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  if (lanes[0] == 12345.f) std::puts("");  // keeps every chain
  return double(iters) * 12 * 32 / t / 1e9;
}
#endif


struct Shape2 {
  int64_t k, n, per_model;  // per_model: how many the decoder's prefill runs
};

// Median GFLOP/s of running every matrix in `mats` once, `rounds` times.
double Gflops(const std::vector<std::unique_ptr<PackedMatMul>>& mats, const float* a, float* c, int64_t m,
              int64_t k, int64_t n, int threads, int rounds) {
  for (auto& p : mats) p->Run(a, c, m, threads);  // packs, makes primitives
  std::vector<double> rates;
  for (int r = 0; r < rounds; ++r) {
    const double start = Seconds();
    for (auto& p : mats) p->Run(a, c, m, threads);
    const double t = (Seconds() - start) / double(mats.size());
    rates.push_back(2.0 * double(m) * double(k) * double(n) / t / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t m = 128;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--rows") m = std::atoll(argv[i + 1]);
    else if (flag == "--threads") threads = std::atoi(argv[i + 1]);
    else return std::fprintf(stderr, "usage: bench-gemm [--rows M] [--threads N]\n"), 2;
  }
  if (m < 1 || threads < 1) return std::fprintf(stderr, "bench-gemm: rows and threads must be >= 1\n"), 2;
  if (!CpuTargetUsable(CpuTarget::kAvx512, HostCpuFeatures())) {
    std::printf("bench-gemm: this CPU has no AVX-512: products run on oneDNN only\n");
    return 0;
  }
#if defined(__x86_64__)
  std::printf("one core's float32 FMA peak: %.0f GFLOP/s\n", PeakGflops());
  std::printf("memory read bandwidth (84 MB in order): 1 thread %.1f GB/s", bench::ReadBandwidthGBs(84 << 20, 1, 3));
  if (threads > 1) std::printf(", %d threads %.1f GB/s", threads, bench::ReadBandwidthGBs(84 << 20, threads, 3));
  std::printf("\n");
#endif
  std::printf("%lld rows of A, %d thread(s); GFLOP/s (median of 5)\n\n", static_cast<long long>(m), threads);
  std::printf("| k x n | in the prefill | gemm hot | gemm cold | onednn hot | onednn cold |\n|---|---|---|---|---|---|\n");
  const Shape2 shapes[] = {{512, 512, 8}, {512, 128, 8}, {512, 1408, 8}, {1408, 512, 4}, {512, 8192, 1}};
  double model_ms[2] = {0, 0};
  for (const Shape2& s : shapes) {
    const int copies = int(200e6 / double(s.k * s.n * 4)) + 1;
    std::vector<Tensor> weights;
    for (int i = 0; i < copies; ++i) {
      weights.push_back(Tensor::Zeros(DType::kFloat, {s.k, s.n}));
      float* w = weights.back().data<float>();
      for (int64_t j = 0; j < s.k * s.n; ++j) w[j] = float((j * 7 + i) % 13) * 0.01f;
    }
    std::vector<float> a(size_t(m * s.k), 0.5f), c(size_t(m * s.n));
    double rate[2][2];  // [gemm, onednn][hot, cold]
    for (int way = 0; way < 2; ++way) {
      ScopedCpuFeaturesForTesting scope(way == 0 ? CpuTarget::kAvx512 : CpuTarget::kAvx2);
      std::vector<std::unique_ptr<PackedMatMul>> all;
      for (const Tensor& w : weights) all.push_back(PackedMatMul::Make(w, false, Tensor(), threads));
      std::vector<std::unique_ptr<PackedMatMul>> one;
      one.push_back(PackedMatMul::Make(weights[0], false, Tensor(), threads));
      rate[way][0] = Gflops(one, a.data(), c.data(), m, s.k, s.n, threads, 5 * copies);
      rate[way][1] = Gflops(all, a.data(), c.data(), m, s.k, s.n, threads, 5);
      model_ms[way] += 2.0 * double(m) * double(s.k) * double(s.n) * double(s.per_model) / rate[way][1] / 1e6;
    }
    std::printf("| %lld x %lld | %lld | %.0f | %.0f | %.0f | %.0f |\n", static_cast<long long>(s.k),
                static_cast<long long>(s.n), static_cast<long long>(s.per_model), rate[0][0], rate[0][1], rate[1][0],
                rate[1][1]);
  }
  std::printf("\nthe prefill's products with cold weights: gemm %.1f ms, onednn %.1f ms\n", model_ms[0], model_ms[1]);
  return 0;
}
