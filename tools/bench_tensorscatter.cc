// bench-tensorscatter: the decode step of ../shared/bench's
// tensorscatter_decode_f32 (a 4x8x4096x128 float cache, one token per batch
// entry written at valid lengths - 1), timed three ways, beside the machine's
// copy bandwidth:
//   copy      - a fresh present_cache each step (allocation + bulk copy + slices)
//   copy-into - present_cache in a caller buffer distinct from past_cache
//   in-place  - present_cache bound to past_cache's own buffer (slices only)
//   bench-tensorscatter [--repeat N] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tools/model_builder.h"

using namespace onnx_mini;

namespace {

double MedianMs(int repeat, const std::function<void()>& f) {
  std::vector<double> times;
  f();  // warm-up
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 20, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--repeat") repeat = std::max(1, std::atoi(argv[i + 1]));
    else if (std::string(argv[i]) == "--threads") threads = std::max(1, std::atoi(argv[i + 1]));
  }
  const int64_t B = 4, H = 8, M = 4096, D = 128;
  ModelBuilder m(24, 10);
  m.Input("past", DType::kFloat, {B, H, M, D}).Input("upd", DType::kFloat, {B, H, 1, D});
  m.Input("idx", DType::kInt64, {B}).Output("present", DType::kFloat, {B, H, M, D});
  SetAttr(m.Node("TensorScatter", {"past", "upd", "idx"}, {"present"}), "axis", int64_t(2));
  SessionOptions options;
  options.threads = threads;
  absl::StatusOr<std::unique_ptr<Session>> session = m.Build(options);
  if (!session.ok()) {
    std::fprintf(stderr, "bench-tensorscatter: %s\n", std::string(session.status().message()).c_str());
    return 1;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  Tensor past = Tensor::Zeros(DType::kFloat, {B, H, M, D});
  Tensor upd = Tensor::Zeros(DType::kFloat, {B, H, 1, D});
  for (int64_t i = 0; i < past.size(); ++i) past.data<float>()[i] = normal(rng);
  for (int64_t i = 0; i < upd.size(); ++i) upd.data<float>()[i] = normal(rng);
  Tensor idx = Tensor::FromVector<int64_t>({1023, 2047, 3071, 4095}, {B});
  const std::vector<NamedTensor> feeds = {{"past", past}, {"upd", upd}, {"idx", idx}};

  const double copy_ms = MedianMs(repeat, [&] {
    std::vector<Tensor> out;
    if (!(*session)->Run(feeds, &out).ok()) std::abort();
  });
  Tensor target = Tensor::Zeros(DType::kFloat, {B, H, M, D});
  const double copy_into_ms = MedianMs(repeat, [&] {
    std::vector<Tensor> out = {target};
    if (!(*session)->Run(feeds, &out).ok()) std::abort();
  });
  const double in_place_ms = MedianMs(repeat, [&] {
    std::vector<Tensor> out = {past};
    if (!(*session)->Run(feeds, &out).ok()) std::abort();
  });
  const double memcpy_ms = MedianMs(repeat, [&] { CopyElements(past, target, threads); });
  const double mib = double(past.bytes()) / (1 << 20);
  const double copy_gbs = 2.0 * double(past.bytes()) / (memcpy_ms * 1e6);  // read + write
  std::printf("tensorscatter_decode_f32: cache %.0f MiB, %d threads, median of %d\n", mib, threads, repeat);
  std::printf("  copy       %9.3f ms\n", copy_ms);
  std::printf("  copy-into  %9.3f ms\n", copy_into_ms);
  std::printf("  in-place   %9.4f ms\n", in_place_ms);
  std::printf("  memcpy of the cache: %.3f ms = %.1f GB/s (read + write)\n", memcpy_ms, copy_gbs);
  return 0;
}
