#include "runtime/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onnx_mini {

int64_t ElementCount(const Shape& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && count > INT64_MAX / d) return -1;
    count *= d;
  }
  return count;
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

std::shared_ptr<Storage> Storage::Allocate(DType dtype, int64_t count) {
  const size_t bytes = StorageBytes(dtype, count);
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* data = rounded == 0 ? nullptr : std::aligned_alloc(64, rounded);
  if (rounded != 0 && data == nullptr) return nullptr;
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->owned_ = true;
  if (dtype == DType::kString) {
    std::string* strings = static_cast<std::string*>(data);
    for (int64_t i = 0; i < count; ++i) new (&strings[i]) std::string();
    s->string_count_ = count;
  } else if (bytes) {
    std::memset(data, 0, bytes);
  }
  return s;
}

std::shared_ptr<Storage> Storage::Borrow(void* data, size_t bytes) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->owned_ = false;
  return s;
}

Storage::~Storage() {
  if (!owned_) return;
  std::string* strings = static_cast<std::string*>(data_);
  for (int64_t i = 0; i < string_count_; ++i) strings[i].~basic_string();
  std::free(data_);
}

absl::StatusOr<Tensor> Tensor::Make(DType dtype, Shape shape) {
  if (!IsValidDType(int32_t(dtype)))
    return absl::InvalidArgumentError(absl::StrCat("invalid element type ", int(dtype)));
  const int64_t count = ElementCount(shape);
  if (count < 0 || count > int64_t(kMaxTensorBytes) || StorageBytes(dtype, count) > kMaxTensorBytes)
    return absl::InvalidArgumentError(
        absl::StrCat("invalid or too large shape ", ShapeToString(shape)));
  Tensor t;
  t.storage_ = Storage::Allocate(dtype, count);
  if (!t.storage_)
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory for a ", Name(dtype), " tensor of shape ",
                     ShapeToString(shape)));
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.size_ = count;
  return t;
}

Tensor Tensor::Zeros(DType dtype, Shape shape) {
  absl::StatusOr<Tensor> t = Make(dtype, std::move(shape));
  return t.ok() ? *std::move(t) : Tensor();
}

Tensor Tensor::Borrow(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.size_ = ElementCount(shape);
  t.shape_ = std::move(shape);
  t.storage_ = Storage::Borrow(data, StorageBytes(dtype, t.size_));
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t = Zeros(dtype_, shape_);
  CopyElements(*this, t);
  return t;
}

void CopyElements(const Tensor& src, Tensor& dst) {
  if (src.raw() == dst.raw()) return;
  if (src.dtype() == DType::kString) {
    const std::string* from = src.data<std::string>();
    std::string* to = dst.data<std::string>();
    for (int64_t i = 0; i < src.size(); ++i) to[i] = from[i];
  } else if (src.bytes()) {
    std::memcpy(dst.raw(), src.raw(), src.bytes());
  }
}

}  // namespace onnx_mini
