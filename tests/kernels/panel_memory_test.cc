// kernels/panel_memory.h: the packed weights' memory (huge-page chunks).
#include "kernels/panel_memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kernels/quant/quant_panels.h"
#include "runtime/sanitizers.h"


namespace onnx_mini {
namespace {

// Arrays small and large, freed in a shuffled order: each 64-byte aligned,
// holding what was written to it while the others are written; every chunk
// is unmapped once its arrays are gone.
TEST(PanelMemory, ArraysKeepTheirBytesAndChunksGoWithTheirLastArray) {
  const size_t before = PanelMemoryMappedBytes();
  const std::vector<size_t> sizes = {1,           100,          kPanelMemoryMinBytes - 1, kPanelMemoryMinBytes,
                                     3 << 20,     (1 << 20) + 7, size_t(70) << 20,        5000,
                                     256 << 10,   (2 << 20) - 64};
  std::vector<std::pair<uint8_t*, size_t>> arrays;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto* p = static_cast<uint8_t*>(PanelMemoryAllocate(sizes[i]));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << sizes[i];
    std::memset(p, int(i + 1), sizes[i]);
    arrays.push_back({p, sizes[i]});
  }
  EXPECT_GE(PanelMemoryMappedBytes(), before + (size_t(70) << 20));  // the 70 MiB array has a chunk of its own
  std::mt19937 rng(3);
  std::vector<size_t> order(arrays.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i : order) {
    const auto [p, n] = arrays[i];
    EXPECT_EQ(p[0], uint8_t(i + 1));
    EXPECT_EQ(p[n / 2], uint8_t(i + 1));
    EXPECT_EQ(p[n - 1], uint8_t(i + 1));
    PanelMemoryFree(p, n);
  }
  EXPECT_EQ(PanelMemoryMappedBytes(), before);
}

// QuantPanelsBuffer's arrays through the allocator: sized, copied, freed.
TEST(PanelMemory, PanelBuffersLiveInIt) {
  const size_t before = PanelMemoryMappedBytes();
  {
    QuantPanelsBuffer a;
    ASSERT_TRUE(a.Shape(8, 1024, 2816, 1024));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.codes.data()) % 64, 0u);
    EXPECT_GT(PanelMemoryMappedBytes(), before);
    a.SetCode(2815, 1023, 200);
    QuantPanelsBuffer b = a;
    EXPECT_EQ(b.codes, a.codes);
    EXPECT_EQ(b.codes.size(), size_t(1024 * 2816));
  }
  EXPECT_EQ(PanelMemoryMappedBytes(), before);
}

// With no address space left for a chunk (mmap refused, here by
// RLIMIT_AS in a child), an array comes from the ordinary allocator, keeps
// its bytes and goes back to that allocator: nothing is mapped or unmapped.
TEST(PanelMemory, AnArrayWithoutAChunkUsesTheOrdinaryAllocator) {
#if defined(ONNX_MINI_ASAN) || defined(ONNX_MINI_TSAN)
  GTEST_SKIP() << "not under a sanitizer: its own mappings need the address space";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    // A chunk of its own, full, at the back: the next array needs a new chunk.
    void* big = PanelMemoryAllocate(size_t(70) << 20);
    const size_t mapped = PanelMemoryMappedBytes();
    long pages = 0;
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f || std::fscanf(f, "%ld", &pages) != 1) _exit(2);
    std::fclose(f);
    const rlimit limit{rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE)) + (rlim_t(16) << 20), RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    const size_t n = size_t(1) << 20;
    auto* p = static_cast<uint8_t*>(PanelMemoryAllocate(n));
    std::memset(p, 7, n);
    int bad = 0;
    if (reinterpret_cast<uintptr_t>(p) % 64 != 0) bad |= 4;
    if (PanelMemoryMappedBytes() != mapped) bad |= 8;  // no chunk was made
    if (p[0] != 7 || p[n - 1] != 7) bad |= 16;
    PanelMemoryFree(p, n);
    if (PanelMemoryMappedBytes() != mapped) bad |= 32;  // no chunk was touched
    PanelMemoryFree(big, size_t(70) << 20);
    if (PanelMemoryMappedBytes() != mapped - (size_t(70) << 20)) bad |= 64;
    _exit(bad);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died, status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A child forked while another thread allocates (multiprocessing's fork
// during a session's creation, which packs its weights here): the arena's
// lock and chunk list are taken across the fork, so the child allocates and
// frees its own arrays instead of waiting for ever on a lock whose holder
// is not copied.
TEST(PanelMemory, AChildForkedDuringAnAllocationCanAllocate) {
#ifdef ONNX_MINI_TSAN
  GTEST_SKIP() << "not under ThreadSanitizer: it kills a child of a threaded process";
#endif
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    // Nearly all of its time inside the arena's lock: each array maps and
    // unmaps a chunk of its own.
    while (!stop.load()) {
      void* p = PanelMemoryAllocate(size_t(70) << 20);
      PanelMemoryFree(p, size_t(70) << 20);
    }
  });
  int stuck = 0;
  for (int i = 0; i < 50; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(5);  // a child stuck on the lock dies
      void* p = PanelMemoryAllocate(size_t(1) << 20);
      static_cast<char*>(p)[0] = 1;
      PanelMemoryFree(p, size_t(1) << 20);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++stuck;
      break;  // one is enough, and each costs its alarm
    }
  }
  stop = true;
  busy.join();
  EXPECT_EQ(stuck, 0) << "children that could not allocate";
}

}  // namespace
}  // namespace onnx_mini
