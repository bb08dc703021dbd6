// kernels/panel_memory.h: the packed weights' memory (huge-page chunks).
#include "kernels/panel_memory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant/quant_panels.h"

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

}  // namespace
}  // namespace onnx_mini
