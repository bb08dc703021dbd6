#include "runtime/tensor.h"
#include "runtime/memory_poison.h"

#include "runtime/checked.h"
#include "runtime/status_macros.h"
#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <cstring>
#include <new>

#include <unistd.h>

#include "runtime/sanitizers.h"
#ifdef ONNX_MINI_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onnx_mini {

int64_t ElementCount(const Shape& shape) { return CheckedProduct(shape).value_or(-1); }

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

namespace {

#ifdef ONNX_MINI_POISON
std::atomic<bool> g_poison{true};
#else
std::atomic<bool> g_poison{false};
#endif

// Under AddressSanitizer a block waiting in the pool is poisoned for it too:
// the pool never frees it, so a read of a released tensor's memory would
// otherwise go unseen.
#ifdef ONNX_MINI_ASAN
void AsanPoison(void* p, size_t bytes) { __asan_poison_memory_region(p, bytes); }
void AsanUnpoison(void* p, size_t bytes) { __asan_unpoison_memory_region(p, bytes); }
#else
void AsanPoison(void*, size_t) {}
void AsanUnpoison(void*, size_t) {}
#endif

// Whether two budgets are one owner (both null, or one control block: a weak
// pointer keeps the block, so a new budget never takes a dead one's identity).
bool SameOwner(const std::weak_ptr<MemoryBudget>& a, const std::shared_ptr<MemoryBudget>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

// Small blocks (up to 16 KiB, multiples of 64 bytes) are kept per thread and
// handed out again for the same size: a small model's run allocates the same
// few hundred tensors every time, and aligned_alloc's slow path (memalign:
// splitting, consolidating) took ~20% of silero VAD's run. A block may come
// back on another thread. Off under AddressSanitizer, whose quarantine finds
// reads of freed tensors.
class SmallBlockCache {
 public:
  static constexpr size_t kMaxBytes = size_t(16) << 10;
  static void* Take(size_t bytes) {
    SmallBlockCache* c = Mine();
    if (c == nullptr || bytes == 0 || bytes > kMaxBytes) return nullptr;
    Slot& s = c->slots_[bytes / 64 - 1];
    if (s.count == 0) return nullptr;
    c->cached_ -= bytes;
    return s.blocks[--s.count];
  }
  // False when the block was not kept (the caller frees it).
  static bool Give(void* p, size_t bytes) {
    SmallBlockCache* c = Mine();
    if (c == nullptr || bytes == 0 || bytes > kMaxBytes || c->cached_ + bytes > kMaxCached) return false;
    Slot& s = c->slots_[bytes / 64 - 1];
    if (s.count == kPerSize) return false;
    s.blocks[s.count++] = p;
    c->cached_ += bytes;
    return true;
  }

 private:
  static constexpr int kPerSize = 8;
  static constexpr size_t kMaxCached = size_t(1) << 20;  // per thread
  struct Slot {
    void* blocks[kPerSize];
    int count = 0;
  };
  // The thread's cache, made at first use; null once the thread's
  // destructors ran (a tensor freed after that goes to the system).
  static SmallBlockCache* Mine() {
#ifdef ONNX_MINI_ASAN
    return nullptr;
#else
    struct Owner {
      SmallBlockCache* cache = new SmallBlockCache();
      ~Owner() {
        SmallBlockCache* c = cache;
        Current() = nullptr;
        for (Slot& s : c->slots_)
          for (int i = 0; i < s.count; ++i) std::free(s.blocks[i]);
        delete c;
      }
    };
    SmallBlockCache*& current = Current();
    if (current == nullptr && !Made()) {
      thread_local Owner owner;
      current = owner.cache;
      Made() = true;  // once: after Owner's destructor, current stays null
    }
    return current;
#endif
  }
  static SmallBlockCache*& Current() {
    thread_local SmallBlockCache* current = nullptr;
    return current;
  }
  static bool& Made() {
    thread_local bool made = false;
    return made;
  }
  Slot slots_[kMaxBytes / 64];
  size_t cached_ = 0;
};

// Large blocks are kept after use and handed out again for the same size:
// a decode loop allocates the same buffers every step, and fresh pages cost
// a page fault each (on this kind of VM, a 64 MiB buffer costs ~150 ms of
// faults against ~2 ms to copy it). Each block remembers the budget (the
// session) that last owned it: the same owner's blocks are preferred, and a
// block that changes owner is reported so that its old contents are cleared.
class BlockPool {
 public:
  static BlockPool& Get() {
    static BlockPool* pool = new BlockPool();  // never destroyed: outlives every tensor
    return *pool;
  }
  // `foreign` is set when the block comes back from another owner.
  void* Take(size_t bytes, const std::shared_ptr<MemoryBudget>& owner, bool* foreign) {
    *foreign = false;
    if (bytes < kMinPooled) {
      if (void* p = SmallBlockCache::Take(bytes)) return p;
      return std::aligned_alloc(64, bytes);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto [first, last] = free_.equal_range(bytes);
      if (first != last) {
        auto it = first;
        while (it != last && !SameOwner(it->second.owner, owner)) ++it;
        // A block without a session (an initializer's, a tool's) may go to
        // no-session memory of another session: it counts as foreign too.
        if (it == last || !owner) {
          it = it == last ? first : it;
          *foreign = true;
        }
        void* p = it->second.data;
        free_.erase(it);
        cached_ -= bytes;
        AsanUnpoison(p, bytes);
        return p;
      }
    }
    return std::aligned_alloc(64, bytes);
  }
  void Give(void* p, size_t bytes, const std::shared_ptr<MemoryBudget>& owner) {
    if (bytes < kMinPooled) {
      if (!SmallBlockCache::Give(p, bytes)) std::free(p);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    while (cached_ + bytes > kMaxCached && !free_.empty()) {  // evict the largest
      auto last = std::prev(free_.end());
      cached_ -= last->first;
      AsanUnpoison(last->second.data, last->first);
      std::free(last->second.data);
      free_.erase(last);
    }
    if (cached_ + bytes > kMaxCached) {
      std::free(p);
      return;
    }
    AsanPoison(p, bytes);
    free_.emplace(bytes, Block{p, owner});
    cached_ += bytes;
  }

 private:
  struct Block {
    void* data;
    std::weak_ptr<MemoryBudget> owner;
  };
  static constexpr size_t kMinPooled = size_t(64) << 10;
  static constexpr size_t kMaxCached = size_t(2) << 30;
  std::mutex mu_;
  std::multimap<size_t, Block> free_;
  size_t cached_ = 0;
};

}  // namespace

bool MemoryBudget::Reserve(size_t bytes) {
  size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& o) noexcept {
  if (this != &o) {
    Reset();
    budget_ = std::move(o.budget_);
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

absl::Status MemoryReservation::Grow(int64_t count, size_t element_bytes, const char* what) {
  size_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(size_t(count), element_bytes, &bytes) || bytes > kMaxTensorBytes)
    return absl::ResourceExhaustedError(absl::StrCat("out of memory for ", what, ": ", count, " elements of ",
                                                     element_bytes, " bytes are too many"));
  if (!budget_ || bytes == 0) return absl::OkStatus();
  const size_t used = budget_->used();
  if (!budget_->Reserve(bytes))
    return absl::ResourceExhaustedError(absl::StrCat("out of memory for ", what, ": its ", bytes,
                                                     " bytes exceed the session's memory limit of ",
                                                     budget_->limit(), " bytes (", used, " in use)"));
  bytes_ += bytes;
  return absl::OkStatus();
}

void MemoryReservation::Reset() {
  if (budget_ && bytes_) budget_->Release(bytes_);
  bytes_ = 0;
}

bool PoisonUninitialized() { return g_poison.load(std::memory_order_relaxed); }
void SetPoisonUninitialized(bool on) { g_poison.store(on, std::memory_order_relaxed); }

size_t DefaultMemoryLimit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return kMaxTensorBytes;
  const uint64_t physical = uint64_t(pages) * uint64_t(page);
  return size_t(physical / 4 * 3);
}

std::shared_ptr<Storage> Storage::Allocate(DType dtype, int64_t count, bool zero,
                                           std::shared_ptr<MemoryBudget> budget) {
  const size_t bytes = StorageBytes(dtype, count);
  if (bytes > kMaxTensorBytes) return nullptr;
  const size_t rounded = (bytes + 63) / 64 * 64;
  // Charged before allocating; given back if the allocator refuses.
  if (budget && !budget->Reserve(rounded)) return nullptr;
  bool foreign = false;
  void* data = rounded == 0 ? nullptr : BlockPool::Get().Take(rounded, budget, &foreign);
  if (rounded != 0 && data == nullptr) {
    if (budget) budget->Release(rounded);
    return nullptr;
  }
  std::shared_ptr<Storage> s(new Storage());
  s->budget_ = std::move(budget);
  s->data_ = data;
  s->bytes_ = bytes;
  s->capacity_ = rounded;
  s->owned_ = true;
  if (dtype == DType::kString) {
    std::string* strings = static_cast<std::string*>(data);
    for (int64_t i = 0; i < count; ++i) new (&strings[i]) std::string();
    s->string_count_ = count;
  } else if (bytes && zero) {
    std::memset(data, 0, bytes);
  } else if (bytes && PoisonUninitialized()) {
    std::memset(data, kPoisonByte, bytes);
  } else if (bytes && foreign) {
    // Another session's contents never reach this one, even through a kernel
    // that failed to write an element; a block reused by its own session (a
    // decode loop's buffers) pays no clearing.
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

std::shared_ptr<Storage> Storage::Adopt(std::unique_ptr<std::string> bytes) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = bytes->data();
  s->bytes_ = bytes->size();
  s->owned_ = false;  // freed with adopted_, not by the pool
  s->adopted_ = std::move(bytes);
  return s;
}

Storage::~Storage() {
  if (!owned_) return;
  std::string* strings = static_cast<std::string*>(data_);
  for (int64_t i = 0; i < string_count_; ++i) strings[i].~basic_string();
  if (data_ && pooled_) BlockPool::Get().Give(data_, capacity_, budget_);
  else if (data_) std::free(data_);
  if (budget_) budget_->Release(capacity_);
}

absl::StatusOr<Tensor> Tensor::Make(DType dtype, Shape shape, const std::shared_ptr<MemoryBudget>& budget) {
  return Create(dtype, std::move(shape), true, budget);
}

absl::StatusOr<Tensor> Tensor::MakeUninitialized(DType dtype, Shape shape,
                                                 const std::shared_ptr<MemoryBudget>& budget) {
  return Create(dtype, std::move(shape), false, budget);
}

absl::StatusOr<Tensor> Tensor::Create(DType dtype, Shape shape, bool zero,
                                      const std::shared_ptr<MemoryBudget>& budget) {
  if (!IsValidDType(int32_t(dtype)))
    return absl::InvalidArgumentError(absl::StrCat("invalid element type ", int(dtype)));
  const int64_t count = ElementCount(shape);
  if (count < 0 || count > int64_t(kMaxTensorBytes) || StorageBytes(dtype, count) > kMaxTensorBytes)
    return absl::InvalidArgumentError(
        absl::StrCat("invalid or too large shape ", ShapeToString(shape)));
  Tensor t;
  const size_t used = budget ? budget->used() : 0;
  t.storage_ = Storage::Allocate(dtype, count, zero, budget);
  if (!t.storage_) {
    const size_t bytes = StorageBytes(dtype, count);
    if (budget && (bytes > budget->limit() || used > budget->limit() - bytes))
      return absl::ResourceExhaustedError(absl::StrCat(
          "out of memory for a ", Name(dtype), " tensor of shape ", ShapeToString(shape), ": its ", bytes,
          " bytes exceed the session's memory limit of ", budget->limit(), " bytes (", used, " in use)"));
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory for a ", Name(dtype), " tensor of shape ",
                     ShapeToString(shape)));
  }
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

Tensor Tensor::Adopt(DType dtype, Shape shape, std::unique_ptr<std::string> bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.size_ = ElementCount(shape);
  t.shape_ = std::move(shape);
  t.storage_ = Storage::Adopt(std::move(bytes));
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Hollow() const {
  Tensor t = *this;
  t.storage_ = Storage::Borrow(nullptr, 0);
  return t;
}

absl::StatusOr<Tensor> Tensor::Clone(const std::shared_ptr<MemoryBudget>& budget) const {
  if (!defined()) return Tensor();
  ASSIGN_OR_RETURN(Tensor t, MakeUninitialized(dtype_, shape_, budget));
  CopyElements(*this, t);
  return t;
}

// The ranges may overlap (copied as memmove does).
void CopyElements(const Tensor& src, Tensor& dst, int threads) {
  if (src.raw() == dst.raw()) return;
  const size_t bytes = src.bytes();
  const char* from = static_cast<const char*>(src.raw());
  char* to = static_cast<char*>(dst.raw());
  // The ranges may overlap (a caller's output buffer over its input, shifted):
  // then the copy is memmove's, in one pass, in the safe direction.
  const bool overlap = bytes && from < to + bytes && to < from + bytes;
  if (src.dtype() == DType::kString) {
    const std::string* in = src.data<std::string>();
    std::string* out = dst.data<std::string>();
    if (overlap && out > in) {
      for (int64_t i = src.size(); i-- > 0;) out[i] = in[i];
    } else {
      for (int64_t i = 0; i < src.size(); ++i) out[i] = in[i];
    }
    return;
  }
  if (overlap || threads <= 1 || bytes < (size_t(1) << 20)) {
    if (bytes) std::memmove(to, from, bytes);
    return;
  }
  // Chunks of 64 KiB on the kernels' pool (a byte copied is an eighth of a unit of work).
  const size_t chunk = size_t(1) << 16;
  const int64_t chunks = int64_t((bytes + chunk - 1) / chunk);
  ParallelFor(threads, chunks, WorkPerIndex{double(chunk) / 8}, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const size_t begin = size_t(c) * chunk;
      std::memcpy(to + begin, from + begin, std::min(chunk, bytes - begin));
    }
  });
}

}  // namespace onnx_mini
