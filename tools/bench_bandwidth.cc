// bench-bandwidth: the memory read bandwidth (tools/read_bandwidth.h: a
// vectorized read-only sum over 256 MiB, median of 9) at each thread count,
// one JSON line, for tools/bench/compare.py's floors:
//   bench-bandwidth [--threads 1,2] [--mib 256]
//   {"mib": 256, "read_gbs": {"1": 31.2, "2": 49.8}}
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/read_bandwidth.h"

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  long mib = 256;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads.clear();
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long t = std::strtol(p, &end, 10);
        if (end == p || t < 1 || t > 1024) return std::fprintf(stderr, "bench-bandwidth: bad --threads\n"), 2;
        threads.push_back(int(t));
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return std::fprintf(stderr, "bench-bandwidth: bad --threads\n"), 2;
      }
    } else if (arg == "--mib" && i + 1 < argc) {
      mib = std::atol(argv[++i]);
      if (mib < 1 || mib > (1 << 16)) return std::fprintf(stderr, "bench-bandwidth: bad --mib\n"), 2;
    } else {
      return std::fprintf(stderr, "usage: bench-bandwidth [--threads 1,2] [--mib 256]\n"), 2;
    }
  }
  std::string out = "{\"mib\": " + std::to_string(mib) + ", \"read_gbs\": {";
  for (size_t k = 0; k < threads.size(); ++k) {
    char item[64];
    std::snprintf(item, sizeof item, "%s\"%d\": %.2f", k ? ", " : "", threads[k],
                  onnx_mini::bench::ReadBandwidthGBs(int64_t(mib) << 20, threads[k]));
    out += item;
  }
  std::printf("%s}}\n", out.c_str());
  return 0;
}
