// Tensor: a dtype, a shape and storage that is either owned (shared between
// views) or borrowed from the caller. String tensors hold std::string elements.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/dtype.h"

namespace onnx_mini {

using Shape = std::vector<int64_t>;

// The largest tensor onnx-mini will allocate (1 TiB); larger shapes are errors.
constexpr size_t kMaxTensorBytes = size_t(1) << 40;

// The largest rank a shape function will build (shape inputs longer than this
// are refused before anything is allocated).
constexpr int64_t kMaxRank = 4096;

// Number of elements of a shape; -1 if a dim is negative or the product overflows.
int64_t ElementCount(const Shape& shape);
std::string ShapeToString(const Shape& shape);

// A cap on the bytes of the owned blocks allocated against it, shared by
// everything a session allocates (outputs, temporaries, folded constants):
// a block reserves its size before it is allocated and returns it when freed.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  // Takes `bytes` from the budget; false (and nothing taken) if over the limit.
  bool Reserve(size_t bytes);
  void Release(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t limit() const { return limit_; }
  size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

// The default cap of a session: three quarters of the physical memory.
size_t DefaultMemoryLimit();

// Bytes held against a MemoryBudget for memory that is not a Storage block
// (a kernel's std::vector workspace, weights packed at session creation):
// taken before the memory is allocated, given back when destroyed. Without a
// budget it takes nothing and always succeeds. Move-only.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  explicit MemoryReservation(std::shared_ptr<MemoryBudget> budget) : budget_(std::move(budget)) {}
  MemoryReservation(MemoryReservation&& o) noexcept : budget_(std::move(o.budget_)), bytes_(o.bytes_) { o.bytes_ = 0; }
  MemoryReservation& operator=(MemoryReservation&& o) noexcept;
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  ~MemoryReservation() { Reset(); }

  // Takes `count` elements of `element_bytes` more (one atomic add).
  // ResourceExhausted naming `what`, the bytes and the limit when the budget
  // refuses or the product overflows; nothing is taken then.
  absl::Status Grow(int64_t count, size_t element_bytes, const char* what);
  // Gives everything back.
  void Reset();
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<MemoryBudget> budget_;
  size_t bytes_ = 0;
};

// A block of memory. Owned blocks are 64-byte aligned; borrowed blocks point at
// the caller's memory and are never freed here.
class Storage {
 public:
  // `zero` false leaves numeric memory uninitialized, for buffers the caller
  // overwrites entirely.
  // `budget` (optional) is charged for the block while it lives; null if the
  // budget or the allocator refuses.
  static std::shared_ptr<Storage> Allocate(DType dtype, int64_t count, bool zero = true,
                                           std::shared_ptr<MemoryBudget> budget = nullptr);
  static std::shared_ptr<Storage> Borrow(void* data, size_t bytes);
  // Storage that owns `bytes` (a parsed initializer's raw data, taken without a copy).
  static std::shared_ptr<Storage> Adopt(std::unique_ptr<std::string> bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool owned() const { return owned_; }
  // Freed for good: the block goes back to the system, not to the pool
  // (a constant the session drops after packing it).
  void ReturnToSystemWhenFreed() { pooled_ = false; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;  // allocated bytes (64-byte multiple)
  bool owned_ = false;
  bool pooled_ = true;
  int64_t string_count_ = 0;  // owned string storage: destroy this many
  std::unique_ptr<std::string> adopted_;  // Adopt's bytes (data_ points into them)
  std::shared_ptr<MemoryBudget> budget_;  // charged capacity_ bytes, if set
};

class Tensor {
 public:
  // An undefined tensor (an absent optional value).
  Tensor() = default;

  // A new owned tensor. Numeric storage is zero-filled; strings are empty.
  // Fails if the shape is invalid or too large, or (ResourceExhausted) if the
  // memory or the optional budget is not there.
  static absl::StatusOr<Tensor> Make(DType dtype, Shape shape,
                                     const std::shared_ptr<MemoryBudget>& budget = nullptr);
  // Like Make, but numeric memory is left uninitialized: for outputs that a
  // kernel writes in full.
  static absl::StatusOr<Tensor> MakeUninitialized(DType dtype, Shape shape,
                                                  const std::shared_ptr<MemoryBudget>& budget = nullptr);
  // Like Make, for tests and tools with small known-valid shapes: an invalid
  // shape or a failed allocation gives an undefined tensor. Runtime code
  // uses Make, which reports the failure.
  static Tensor Zeros(DType dtype, Shape shape);
  // A tensor over caller-owned memory of at least StorageBytes(dtype, count)
  // bytes (for strings: an array of that many std::string).
  static Tensor Borrow(DType dtype, Shape shape, void* data);
  // A tensor over `bytes`, which it owns from now on. The caller checked that they hold
  // exactly dtype x shape's elements and are aligned to the element (runtime/alignment.h).
  static Tensor Adopt(DType dtype, Shape shape, std::unique_ptr<std::string> bytes);
  // A scalar or 1-D owned tensor, handy in tests and tools.
  template <class T>
  static Tensor FromVector(const std::vector<T>& values, Shape shape);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return int64_t(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[size_t(i)]; }
  int64_t size() const { return size_; }
  size_t bytes() const { return StorageBytes(dtype_, size_); }

  void* raw() { return storage_ ? storage_->data() : nullptr; }
  const void* raw() const { return storage_ ? storage_->data() : nullptr; }
  template <class T> T* data() { return static_cast<T*>(raw()); }
  template <class T> const T* data() const { return static_cast<const T*>(raw()); }

  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // A view with another shape of the same element count, sharing storage.
  Tensor Reshaped(Shape shape) const;
  // The same dtype and shape without data (raw() is nullptr, defined() holds):
  // a constant whose storage the session freed (PrepareContext::release).
  Tensor Hollow() const;
  // A deep copy into new owned storage (fails when memory runs out).
  absl::StatusOr<Tensor> Clone(const std::shared_ptr<MemoryBudget>& budget = nullptr) const;

 private:
  static absl::StatusOr<Tensor> Create(DType dtype, Shape shape, bool zero,
                                       const std::shared_ptr<MemoryBudget>& budget);
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<Storage> storage_;
};

// Copies all elements of src into dst (same dtype and element count); large
// copies are split across `threads` threads.
void CopyElements(const Tensor& src, Tensor& dst, int threads = 1);

template <class T>
Tensor Tensor::FromVector(const std::vector<T>& values, Shape shape) {
  Tensor t = Zeros(DTypeOf<T>::value, std::move(shape));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size() && int64_t(i) < t.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace onnx_mini
