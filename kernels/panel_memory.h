// Memory for packed weights (the quantized panels, QuantPanelsBuffer, and
// the float GEMM's, PackedGemmB): large arrays
// come from 2 MiB-aligned chunks advised for transparent huge pages
// (MADV_HUGEPAGE; the kernel's default, "madvise", gives them only to memory
// that asks). A decode step streams every weight once: over 4 KiB pages each
// 4 KiB of codes costs a TLB miss (a 123 MB q8 step, ~30000 of them), over
// 2 MiB pages a few dozen. Arrays are packed one after another into a chunk
// (64 MiB, or one array's size rounded up to 2 MiB), so small matrices
// share huge pages too; a chunk is unmapped when its last array is freed,
// and an array freed before that gives its pages back (MADV_DONTNEED).
// Arrays below kPanelMemoryMinBytes, or any when the mapping fails to be
// made, use the ordinary allocator.
#pragma once

#include <cstddef>
#include <new>

namespace onnx_mini {

inline constexpr size_t kPanelMemoryMinBytes = size_t(64) << 10;

// 64-byte aligned; throws std::bad_alloc as operator new does.
void* PanelMemoryAllocate(size_t bytes);
void PanelMemoryFree(void* p, size_t bytes);
// Bytes currently held in chunks (mapped, touched or not), for tests.
size_t PanelMemoryMappedBytes();

template <class T>
struct PanelAllocator {
  using value_type = T;
  PanelAllocator() = default;
  template <class U>
  PanelAllocator(const PanelAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(PanelMemoryAllocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { PanelMemoryFree(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PanelAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const PanelAllocator<U>&) const { return false; }
};

}  // namespace onnx_mini
