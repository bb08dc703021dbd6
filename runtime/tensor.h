// Tensor: a dtype, a shape and storage that is either owned (shared between
// views) or borrowed from the caller. String tensors hold std::string elements.
#pragma once

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

// A block of memory. Owned blocks are 64-byte aligned; borrowed blocks point at
// the caller's memory and are never freed here.
class Storage {
 public:
  // `zero` false leaves numeric memory uninitialized, for buffers the caller
  // overwrites entirely.
  static std::shared_ptr<Storage> Allocate(DType dtype, int64_t count, bool zero = true);
  static std::shared_ptr<Storage> Borrow(void* data, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool owned() const { return owned_; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;  // allocated bytes (64-byte multiple)
  bool owned_ = false;
  int64_t string_count_ = 0;  // owned string storage: destroy this many
};

class Tensor {
 public:
  // An undefined tensor (an absent optional value).
  Tensor() = default;

  // A new owned tensor. Numeric storage is zero-filled; strings are empty.
  // Fails if the shape is invalid or too large.
  static absl::StatusOr<Tensor> Make(DType dtype, Shape shape);
  // Like Make, but numeric memory is left uninitialized: for outputs that a
  // kernel writes in full.
  static absl::StatusOr<Tensor> MakeUninitialized(DType dtype, Shape shape);
  // Like Make, for tests and tools with small known-valid shapes: an invalid
  // shape or a failed allocation gives an undefined tensor. Runtime code
  // uses Make, which reports the failure.
  static Tensor Zeros(DType dtype, Shape shape);
  // A tensor over caller-owned memory of at least StorageBytes(dtype, count)
  // bytes (for strings: an array of that many std::string).
  static Tensor Borrow(DType dtype, Shape shape, void* data);
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
  // A deep copy into new owned storage (fails when memory runs out).
  absl::StatusOr<Tensor> Clone() const;

 private:
  static absl::StatusOr<Tensor> Create(DType dtype, Shape shape, bool zero);
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
