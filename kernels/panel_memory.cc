#include "kernels/panel_memory.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace onnx_mini {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kChunkBytes = size_t(64) << 20;
constexpr size_t kAlign = 64;

struct Chunk {
  char* base = nullptr;
  size_t size = 0, used = 0;
  int64_t live = 0;
};

struct Arena {
  std::mutex mu;
  std::vector<Chunk> chunks;  // the last one is where new arrays go
  size_t mapped = 0;
};

Arena* the_arena = nullptr;  // zero before any dynamic initialization

// Never destroyed: arrays may be freed during static destruction. Its lock
// is held across a fork (as glibc's malloc holds its own), so that a child
// forked while another thread allocates finds it free and the chunk list
// whole; the child's copy of the lock belongs to the forking thread.
Arena* MakeArena() {
  Arena* a = new Arena;
  pthread_atfork([] { the_arena->mu.lock(); }, [] { the_arena->mu.unlock(); }, [] { the_arena->mu.unlock(); });
  return a;
}

Arena& TheArena() {
  if (the_arena == nullptr) the_arena = MakeArena();  // only during static initialization
  return *the_arena;
}

// Made as the library loads, before the process has threads: made on first
// use (a function-local static), a child forked while another thread was
// making it waited for ever on the static's guard (PanelMemory's fork test,
// 1 run in 6).
[[maybe_unused]] const bool arena_made_at_load = (TheArena(), true);

// `size` bytes (a multiple of 2 MiB) at a 2 MiB boundary, advised for huge
// pages; null when the mapping cannot be made.
char* MapChunk(size_t size) {
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t base = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (base > start) munmap(raw, base - start);
  const uintptr_t end = start + size + kHugePage;
  if (end > base + size) munmap(reinterpret_cast<void*>(base + size), end - (base + size));
  madvise(reinterpret_cast<void*>(base), size, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
  return reinterpret_cast<char*>(base);
}

}  // namespace

void* PanelMemoryAllocate(size_t bytes) {
  if (bytes < kPanelMemoryMinBytes || bytes > (size_t(1) << 48))
    return ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(kAlign));
  const size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.chunks.empty() || a.chunks.back().size - a.chunks.back().used < need) {
    const size_t size = std::max(kChunkBytes, (need + kHugePage - 1) / kHugePage * kHugePage);
    char* base = MapChunk(size);
    if (!base) return ::operator new(bytes, std::align_val_t(kAlign));
    // The chunk filling up stays until its arrays are freed; one with none is unmapped now.
    if (!a.chunks.empty() && a.chunks.back().live == 0) {
      munmap(a.chunks.back().base, a.chunks.back().size);
      a.mapped -= a.chunks.back().size;
      a.chunks.pop_back();
    }
    a.chunks.push_back(Chunk{base, size, 0, 0});
    a.mapped += size;
  }
  Chunk& c = a.chunks.back();
  char* p = c.base + c.used;
  c.used += need;
  ++c.live;
  return p;
}

void PanelMemoryFree(void* p, size_t bytes) {
  if (!p) return;
  if (bytes < kPanelMemoryMinBytes || bytes > (size_t(1) << 48)) {
    ::operator delete(p, std::align_val_t(kAlign));
    return;
  }
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  const char* q = static_cast<const char*>(p);
  for (size_t i = 0; i < a.chunks.size(); ++i) {
    Chunk& c = a.chunks[i];
    if (q < c.base || q >= c.base + c.size) continue;
    if (--c.live == 0) {  // its last array: the memory goes back to the system
      munmap(c.base, c.size);
      a.mapped -= c.size;
      a.chunks.erase(a.chunks.begin() + int64_t(i));
    } else {
      // Others live on in the chunk (another session's weights): the pages
      // wholly inside this array go back now (a huge page is split at its
      // edges), so a closed session's weights do not stay resident.
      static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
      const uintptr_t begin = (reinterpret_cast<uintptr_t>(q) + page - 1) / page * page;
      const uintptr_t end = (reinterpret_cast<uintptr_t>(q) + bytes) / page * page;
      if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    }
    return;
  }
  // Not in a chunk: the ordinary allocator's (a mapping that failed).
  ::operator delete(p, std::align_val_t(kAlign));
}

size_t PanelMemoryMappedBytes() {
  Arena& a = TheArena();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.mapped;
}

}  // namespace onnx_mini
