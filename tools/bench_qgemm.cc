// bench-qgemm: the products over QuantPanels (kernels/quant/panel_gemm.h) on
// the bench-decoder model's shapes (K 1024 N 2816, K 2816 N 1024, K 1024 N 32000).
//   prefill: 128 rows (--rows), 4- and 8-bit block-32 panels, the int8 path
//     on each VNNI build the host has (and AVX2's) and the float path's forms (dequantize
//     + GEMM, the float tile of AVX-512 or AVX2, A's digits through VNNI),
//     beside MatMulNBits' many-rows path of today (NBitsMatMul), in GOP/s
//     (2 m k n) and against the VNNI peak measured here (independent
//     VPDPBUSD zmm chains, one core, times the threads).
//   q8 decode: 1, 2 and 4 rows of uint8 A against 8-bit panels of an int8 B
//     (PackInt8Panels; QuantPanelsMatMulIntA takes the decode passes of
//     panel_gemv up to PanelGemvMaxRows rows, its tiles beyond), over "cold"
//     copies filling ~200 MB, beside the floor: a
//     read-only vectorized sum over the same copies' codes, timed in the same
//     rounds as the kernels (the ratio is the median of per-round ratios, so
//     that a busy machine slows both sides of it; beside it the fastest
//     round's over the fastest read), and the int16 panels of
//     kernels/quant/int8_matmul.h.
//   bench-qgemm [--threads N] [--rows M] [--q8-decode-only 1]
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

// A read-only sum over bytes [0, n) (n a multiple of 256) on `threads`
// threads: the floor's read.
float ReadSum(const uint8_t* p, int64_t n, int threads) {
  const float* x = reinterpret_cast<const float*>(p);
  const int64_t floats = n / 4 / 64 * 64, per = (floats / 64 + threads - 1) / threads * 64;
  std::vector<float> sums(static_cast<size_t>(threads), 0.0f);
  ParallelFor(threads, threads, 1, [&](int64_t t, int64_t) {
    const int64_t begin = std::min(floats, t * per), end = std::min(floats, (t + 1) * per);
#if defined(__x86_64__)
    if (CpuTargetUsable(CpuTarget::kAvx512, HostCpuFeatures())) {
      sums[size_t(t)] = bench::SumFloatsAvx512(x, begin, end);
      return;
    }
#endif
    sums[size_t(t)] = bench::SumFloatsPlain(x, begin, end);
  });
  float total = 0;
  for (float f : sums) total += f;
  return total;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  int64_t rows = 128;
  bool q8_decode_only = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rows")) rows = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--q8-decode-only")) q8_decode_only = std::atoi(argv[i + 1]) != 0;
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
    const int64_t most = std::max<int64_t>(rows, 4);  // A, C and aq hold the q8 decode's 4 rows
    std::vector<float> a(size_t(most * k)), c(size_t(most * n));
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
      if (q8_decode_only) break;
      std::printf("prefill K=%lld N=%lld bits=%d block 32\n", (long long)k, (long long)n, bits);
      const QuantPanelsBuffer buf = MakePanels(bits, k, n, 32, uint32_t(bits));
      int64_t wsf_bytes = 0;
      for (QuantPanelsFloatPath path :
           {QuantPanelsFloatPath::kGemm, QuantPanelsFloatPath::kTile, QuantPanelsFloatPath::kDigits})
        wsf_bytes = std::max(wsf_bytes, QuantPanelsMatMulManyWorkspace(rows, buf.view, false, path));
      std::vector<uint8_t> wsf(static_cast<size_t>(wsf_bytes));
      for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2}) {
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        std::vector<uint8_t> ws8(size_t(QuantPanelsMatMulManyWorkspace(rows, buf.view, true)));  // the target's
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
    std::vector<uint8_t> aq(size_t(most * k));
    for (uint8_t& v : aq) v = uint8_t(rng());
    std::vector<int8_t> packed16(size_t(Int8PackedBSize(k, n)));
    Int8PackB(b.data(), false, k, n, packed16.data());
    std::vector<float> scale(1, 0.02f * bscale);
    for (int64_t m : {rows, int64_t{1}, int64_t{2}, int64_t{4}}) {
      const bool decode = m <= 4;
      if (q8_decode_only && !decode) continue;
      const int64_t bytes = k * n;  // one byte a weight (scales: 3 x 4 bytes a column)
      const int copies = decode ? int(std::max<int64_t>(2, (int64_t(200) << 20) / bytes)) : 1;
      std::vector<QuantPanelsBuffer> mats(static_cast<size_t>(copies));
      for (auto& p : mats) PackInt8Panels(src, &p);
      std::vector<std::vector<int8_t>> olds(size_t(copies), packed16);
      QuantPanelsIntA x;
      x.a = aq.data();
      x.a_zero = 128;
      x.a_scale = 0.02f;
      x.m = m;
      std::vector<int16_t> ws16(size_t(Int8MatMulWorkspaceSize(m, k)));
      Int8MatMulArgs old;
      old.a = aq.data();
      old.a_zero = 128;
      old.scale = scale.data();
      old.m = m;
      old.k = k;
      old.n = n;
      old.c = c.data();
      // The floor's read: copy i's codes summed as floats, split over the threads.
      float read_sink = 0;
      auto read = [&](int i) {
        const QuantPanels& v = mats[size_t(i)].view;
        read_sink += ReadSum(v.codes, v.panels * v.k_blocks * v.block_bytes(), threads);
      };
      if (decode)
        std::printf("q8 decode K=%lld N=%lld rows=%lld: %.2f MB of codes (%d copies)\n", (long long)k, (long long)n,
                    (long long)m, double(bytes) / 1e6, copies);
      else
        std::printf("q8 prefill K=%lld N=%lld rows=%lld\n", (long long)k, (long long)n, (long long)m);
      auto time_q8 = [&](const std::string& name, auto&& run) {
        for (int i = 0; i < copies; ++i) run(i);
        std::vector<double> per, ratio, floor;
        for (int r = 0; r < (decode ? 15 : 5); ++r) {
          double start = Seconds();
          for (int i = 0; i < copies; ++i) run(i);
          per.push_back((Seconds() - start) / copies);
          if (!decode) continue;
          start = Seconds();
          for (int i = 0; i < copies; ++i) read(i);
          floor.push_back((Seconds() - start) / copies);
          ratio.push_back(per.back() / floor.back());
        }
        const double t = Median(per);
        if (decode)
          std::printf("  %-26s %9.3f ms  floor %.3f ms (%.1f GB/s)  %5.2fx floor (fastest rounds %.2fx)\n",
                      name.c_str(), t * 1e3, Median(floor) * 1e3, double(bytes) / Median(floor) / 1e9, Median(ratio),
                      *std::min_element(per.begin(), per.end()) / *std::min_element(floor.begin(), floor.end()));
        else
          std::printf("  %-26s %9.2f ms %7.0f GOP/s  %4.0f%% of peak\n", name.c_str(), t * 1e3,
                      2.0 * double(m) * double(k) * double(n) / t / 1e9,
                      peak > 0 ? 100 * 2.0 * double(m) * double(k) * double(n) / t / 1e9 / peak : 0.0);
      };
      for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2}) {
        if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
        ScopedCpuFeaturesForTesting scope(t);
        std::vector<uint8_t> ws(size_t(QuantPanelsMatMulIntAWorkspace(m, mats[0].view)));  // the target's
        time_q8(std::string("panels-") + CpuTargetName(t), [&](int i) {
          QuantPanelsMatMulIntA(x, mats[size_t(i)].view, nullptr, c.data(), ws.data(), threads);
        });
      }
      time_q8("int16 panels (before)", [&](int i) {
        Int8MatMulPacked(old, olds[size_t(i)].data(), ws16.data(), threads);
      });
      if (read_sink == 12345.f) std::puts("");
    }
  }
  // A decode step of the bench-decoder model's q8 form: its 57 products in
  // order (8 layers of q, k, v, o, gate, up, down, then the LM head), one row
  // each, against a read of the same panels in the same order, by rounds.
  {
    struct Product {
      int64_t k, n;
    };
    std::vector<Product> step;
    for (int l = 0; l < 8; ++l)
      for (Product p : {Product{1024, 1024}, Product{1024, 256}, Product{1024, 256}, Product{1024, 1024},
                        Product{1024, 2816}, Product{1024, 2816}, Product{2816, 1024}})
        step.push_back(p);
    step.push_back({1024, 32000});
    std::vector<QuantPanelsBuffer> mats(step.size());
    int64_t bytes = 0, most = 0;
    for (size_t i = 0; i < step.size(); ++i) {
      std::vector<int8_t> b(size_t(step[i].k * step[i].n));
      for (int8_t& v : b) v = int8_t(rng());
      const float bscale = 0.01f;
      const int8_t bzero = 3;
      Int8PanelsSource src;
      src.b = b.data();
      src.k = step[i].k;
      src.n = step[i].n;
      src.scale = &bscale;
      src.zero = &bzero;
      PackInt8Panels(src, &mats[i]);
      bytes += step[i].k * step[i].n;
      most = std::max(most, QuantPanelsMatMulIntAWorkspace(1, mats[i].view));
    }
    std::vector<uint8_t> aq(2816), ws(static_cast<size_t>(most));
    for (uint8_t& v : aq) v = uint8_t(rng());
    std::vector<float> c(32000);
    const float uniform = 3 + 128;  // the int8 zero point as the panels hold it
    std::printf("q8 decode step: %zu products, %.1f MB of codes\n", step.size(), double(bytes) / 1e6);
    for (CpuTarget t : {CpuTarget::kAvx512Vnni, CpuTarget::kAvxVnni, CpuTarget::kAvx2}) {
      if (!CpuTargetUsable(t, HostCpuFeatures())) continue;
      ScopedCpuFeaturesForTesting scope(t);
      std::vector<double> per, floor, ratio;
      float sink = 0;
      for (int r = 0; r < 11; ++r) {
        double start = Seconds();
        for (size_t i = 0; i < step.size(); ++i) {
          QuantPanelsIntA x;
          x.a = aq.data();
          x.a_zero = 128;
          x.a_scale = 0.02f;
          x.m = 1;
          QuantPanelsMatMulIntA(x, mats[i].view, nullptr, c.data(), ws.data(), threads, &uniform);
        }
        per.push_back(Seconds() - start);
        start = Seconds();
        for (size_t i = 0; i < step.size(); ++i)
          sink += ReadSum(mats[i].view.codes, mats[i].view.panels * mats[i].view.block_bytes(), threads);
        floor.push_back(Seconds() - start);
        if (r > 0) ratio.push_back(per.back() / floor.back());  // round 0 warms up
      }
      if (sink == 12345.f) std::puts("");
      std::printf("  %-26s %9.3f ms  floor %.3f ms (%.1f GB/s)  %5.2fx floor  (c[0] = %g)\n",
                  (std::string("panels-") + CpuTargetName(t)).c_str(), Median(per) * 1e3, Median(floor) * 1e3,
                  double(bytes) / Median(floor) / 1e9, Median(ratio), double(c[0]));
    }
  }
  return 0;
}
