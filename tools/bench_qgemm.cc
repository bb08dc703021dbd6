// bench-qgemm: the products over QuantPanels (kernels/quant/panel_gemm.h) on
// the bench-decoder model's shapes (K 1024 N 2816, K 2816 N 1024, K 1024 N 32000).
//   prefill: 128 rows (--rows), 4- and 8-bit block-32 panels, the int8 path
//     on each VNNI build the host has and the float path's forms (dequantize
//     + GEMM, the AVX-512 float tile, A's digits through VNNI),
//     beside MatMulNBits' many-rows path of today (NBitsMatMul), in GOP/s
//     (2 m k n) and against the VNNI peak measured here (independent
//     VPDPBUSD zmm chains, one core, times the threads).
//   q8 decode: 1 row of uint8 A against 8-bit panels of an int8 B
//     (PackInt8Panels), over "cold" copies filling ~200 MB, beside the floor
//     (bytes of codes over the read bandwidth measured in this run) and the
//     int16 panels of kernels/quant/int8_matmul.h.
//   bench-qgemm [--threads N] [--rows M]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/quant/int8_matmul.h"
#include "kernels/quant/nbits_matmul.h"
#include "kernels/quant/panel_gemm.h"
#include "kernels/quant/quant_panels_int8.h"
#include "runtime/cpu.h"
#include "runtime/thread_pool.h"
#include "tools/read_bandwidth.h"

using namespace onnx_mini;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if defined(__x86_64__)
// One core's VPDPBUSD zmm rate in GOP/s (2 ops a multiply-add), 24
// independent chains (enough to cover the latency).
[[gnu::target("avx512f,avx512bw,avx512vnni")]] double VnniPeakGops() {
  constexpr int kChains = 24;
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-1);
  const int64_t iters = 10000000;
  const double start = Seconds();
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
  const double t = Seconds() - start;
  int32_t sink = 0, lanes[16];
  for (int i = 0; i < kChains; ++i) {
    _mm512_storeu_si512(lanes, acc[i]);
    for (int32_t v : lanes) sink += v;
  }
  if (sink == 12345) std::puts("");
  return double(iters) * kChains * 64 * 2 / t / 1e9;
}
#endif

QuantPanelsBuffer MakePanels(int bits, int64_t k, int64_t n, int64_t block, uint32_t seed) {
  std::mt19937 rng(seed);
  QuantPanelsBuffer buf;
  buf.Shape(bits, k, n, block);
  for (uint8_t& b : buf.codes) b = uint8_t(rng());
  for (float& s : buf.scales) s = 0.01f + 0.001f * float(rng() % 50);
  for (float& z : buf.zeros) z = float(1 << (bits - 1));
  return buf;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  int64_t rows = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
  }
#if defined(__x86_64__)
  const double gbs = bench::ReadBandwidthGBs(int64_t(256) << 20, threads);
  double peak = 0;  // the best of 3 (a busy machine only lowers it)
  if (CpuTargetUsable(CpuTarget::kAvx512Vnni, HostCpuFeatures()))
    for (int i = 0; i < 3; ++i) peak = std::max(peak, VnniPeakGops() * threads);
#else
  const double gbs = 0, peak = 0;
#endif
  std::printf("threads %d, rows %lld, read bandwidth %.1f GB/s, VNNI zmm peak %.0f GOP/s, CPU %s\n", threads,
              (long long)rows, gbs, peak, HostCpuFeatures().name().c_str());
  std::mt19937 rng(7);
  const int64_t shapes[][2] = {{1024, 2816}, {2816, 1024}, {1024, 32000}};  // K, N
  for (const auto& shape : shapes) {
    const int64_t k = shape[0], n = shape[1];
    std::vector<float> a(size_t(rows * k)), c(size_t(rows * n));
    for (float& v : a) v = float(int(rng() % 2001) - 1000) / 500.0f;
    const double ops = 2.0 * double(rows) * double(k) * double(n);
    auto time = [&](const std::string& name, auto&& run) {
      run();
      std::vector<double> per;
      for (int r = 0; r < 5; ++r) {
        const double start = Seconds();
        run();
        per.push_back(Seconds() - start);
      }
      const double t = Median(per);
      std::printf("  %-26s %9.2f ms %7.0f GOP/s  %4.0f%% of peak  (c[0] = %g)\n", name.c_str(), t * 1e3,
                  ops / t / 1e9, peak > 0 ? 100 * ops / t / 1e9 / peak : 0.0, double(c[0]));
    };
    for (int bits : {4, 8}) {
      std::printf("prefill K=%lld N=%lld bits=%d block 32\n", (long long)k, (long long)n, bits);
      const QuantPanelsBuffer buf = MakePanels(bits, k, n, 32, uint32_t(bits));
      std::vector<uint8_t> ws8(size_t(QuantPanelsMatMulManyWorkspace(rows, buf.view, true)));
      int64_t wsf_bytes = 0;
      for (QuantPanelsFloatPath path :
           {QuantPanelsFloatPath::kGemm, QuantPanelsFloatPath::kTile, QuantPanelsFloatPath::kDigits})
        wsf_bytes = std::max(wsf_bytes, QuantPanelsMatMulManyWorkspace(rows, buf.view, false, path));
      std::vector<uint8_t> wsf(static_cast<size_t>(wsf_bytes));
      for (CpuTarget t : kCpuVnniTargets) {
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        time(std::string("int8-") + CpuTargetName(t),
             [&] { QuantPanelsMatMulMany(a.data(), rows, buf.view, true, nullptr, c.data(), ws8.data(), threads); });
      }
      time("float (dequantize + GEMM)", [&] {
        QuantPanelsMatMulMany(a.data(), rows, buf.view, false, nullptr, c.data(), wsf.data(), threads,
                              QuantPanelsFloatPath::kGemm);
      });
      if (QuantPanelsFloatTileTarget() != CpuTarget::kBaseline)
        time(std::string("float tile-") + CpuTargetName(QuantPanelsFloatTileTarget()), [&] {
          QuantPanelsMatMulMany(a.data(), rows, buf.view, false, nullptr, c.data(), wsf.data(), threads,
                                QuantPanelsFloatPath::kTile);
        });
      for (CpuTarget t : kCpuVnniTargets) {
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        if (QuantPanelsDigitsTarget() != t) continue;
        time(std::string("float digits-") + CpuTargetName(t), [&] {
          QuantPanelsMatMulMany(a.data(), rows, buf.view, false, nullptr, c.data(), wsf.data(), threads,
                                QuantPanelsFloatPath::kDigits);
        });
      }
      if (bits == 4) {  // MatMulNBits' many-rows path today, on the same sizes
        NBitsMatrix w;
        w.bits = 4;
        w.k = k;
        w.n = n;
        w.block_size = 32;
        w.k_blocks = k / 32;
        std::vector<uint8_t> data(size_t(n * k / 2), 0x5A);
        std::vector<float> scales(size_t(n * k / 32), 0.01f);
        w.data = data.data();
        w.scales = scales.data();
        std::vector<float> work(size_t(NBitsMatMulWorkspace(rows, w)));
        time("NBitsMatMul (today)",
             [&] { NBitsMatMul(a.data(), rows, w, nullptr, c.data(), work.data(), threads); });
      }
    }
    // q8: uint8 A against an int8 B.
    std::vector<int8_t> b(size_t(k * n));
    for (int8_t& v : b) v = int8_t(rng());
    const float bscale = 0.01f;
    Int8PanelsSource src;
    src.b = b.data();
    src.k = k;
    src.n = n;
    src.scale = &bscale;
    std::vector<uint8_t> aq(size_t(rows * k));
    for (uint8_t& v : aq) v = uint8_t(rng());
    std::vector<int8_t> packed16(size_t(Int8PackedBSize(k, n)));
    Int8PackB(b.data(), false, k, n, packed16.data());
    std::vector<float> scale(1, 0.02f * bscale);
    for (int64_t m : {rows, int64_t{1}}) {
      const int64_t bytes = k * n;  // one byte a weight (scales: 3 x 4 bytes a column)
      const int copies = m == 1 ? int(std::max<int64_t>(2, (int64_t(200) << 20) / bytes)) : 1;
      std::vector<QuantPanelsBuffer> mats(static_cast<size_t>(copies));
      for (auto& p : mats) PackInt8Panels(src, &p);
      std::vector<std::vector<int8_t>> olds(size_t(copies), packed16);
      QuantPanelsIntA x;
      x.a = aq.data();
      x.a_zero = 128;
      x.a_scale = 0.02f;
      x.m = m;
      std::vector<uint8_t> ws(size_t(QuantPanelsMatMulIntAWorkspace(m, mats[0].view)));
      std::vector<int16_t> ws16(size_t(Int8MatMulWorkspaceSize(m, k)));
      Int8MatMulArgs old;
      old.a = aq.data();
      old.a_zero = 128;
      old.scale = scale.data();
      old.m = m;
      old.k = k;
      old.n = n;
      old.c = c.data();
      const double floor_ms = double(bytes) / (gbs * 1e9) * 1e3;
      if (m == 1)
        std::printf("q8 decode K=%lld N=%lld: %.2f MB of codes, floor %.3f ms (%d copies)\n", (long long)k,
                    (long long)n, double(bytes) / 1e6, floor_ms, copies);
      else
        std::printf("q8 prefill K=%lld N=%lld rows=%lld\n", (long long)k, (long long)n, (long long)m);
      auto time_q8 = [&](const std::string& name, auto&& run) {
        for (int i = 0; i < copies; ++i) run(i);
        std::vector<double> per;
        for (int r = 0; r < 5; ++r) {
          const double start = Seconds();
          for (int i = 0; i < copies; ++i) run(i);
          per.push_back((Seconds() - start) / copies);
        }
        const double t = Median(per);
        if (m == 1)
          std::printf("  %-26s %9.3f ms  %5.2fx floor\n", name.c_str(), t * 1e3, t * 1e3 / floor_ms);
        else
          std::printf("  %-26s %9.2f ms %7.0f GOP/s  %4.0f%% of peak\n", name.c_str(), t * 1e3,
                      2.0 * double(m) * double(k) * double(n) / t / 1e9,
                      peak > 0 ? 100 * 2.0 * double(m) * double(k) * double(n) / t / 1e9 / peak : 0.0);
      };
      for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2}) {
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        time_q8(std::string("panels-") + CpuTargetName(t), [&](int i) {
          QuantPanelsMatMulIntA(x, mats[size_t(i)].view, nullptr, c.data(), ws.data(), threads);
        });
      }
      time_q8("int16 panels (today)", [&](int i) {
        Int8MatMulPacked(old, olds[size_t(i)].data(), ws16.data(), threads);
      });
    }
  }
  return 0;
}
