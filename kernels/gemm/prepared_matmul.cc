#include "kernels/gemm/prepared_matmul.h"

#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemv.h"
#include "kernels/gemm/onednn.h"

namespace onnx_mini {

namespace {

bool OneDnnType(DType dtype, dnnl::memory::data_type& dt) {
  if (dtype == DType::kFloat) dt = dnnl::memory::data_type::f32;
  else if (dtype == DType::kBFloat16) dt = dnnl::memory::data_type::bf16;
  else return false;
  return true;
}

// Row counts of A with a cached primitive; more distinct ones get a primitive
// made per call (oneDNN's own cache still helps them).
constexpr size_t kMaxPackedShapes = 16;

}  // namespace

struct PackedMatMul::Impl {
  Tensor b, bias;
  dnnl::memory::data_type dt = dnnl::memory::data_type::f32;
  int64_t k = 0, n = 0;
  bool trans_b = false;
  int threads = 1;
  std::shared_ptr<MemoryBudget> budget;  // charged for gemm_b and the layouts
  dnnl::memory::desc b_md, bias_md;
  // B in each layout a primitive asked for (usually one for every M).
  struct Layout {
    dnnl::memory::desc md;
    dnnl::memory mem;
  };
  struct Entry {
    dnnl::matmul primitive;
    dnnl::memory::desc a_md, c_md, scratchpad_md;
    size_t layout = 0;
  };
  // B packed for GemmPackedF32 (float32 on AVX2 or AVX-512), made by Make (or
  // shared), or by the first run if memory was short then. Written once
  // under pack_mu, then read freely once gemm_ready says so.
  mutable std::mutex pack_mu;
  mutable std::atomic<bool> gemm_ready{false};
  mutable std::shared_ptr<const PackedGemmB> gemm_b;
  // Whether B goes to GemmPackedF32: float32 on AVX2 or AVX-512, with panels at
  // most twice B's size (a B of few columns pads every row to a panel).
  bool UsesPackedGemm() const {
    const int64_t size = GemmPackedSize(k, n);
    return dt == dnnl::memory::data_type::f32 && GemmPackedAvailable() && size >= 0 && size / 2 <= k * n;
  }
  // Packs B for GemmPackedF32 once; false (a later call tries again) when
  // the memory cannot be had. (Not std::call_once: a callable that fails by
  // throwing can leave the next call_once waiting for ever in libstdc++.)
  bool PackForGemm() const {
    if (gemm_ready.load(std::memory_order_acquire)) return true;
    std::lock_guard<std::mutex> lock(pack_mu);
    if (gemm_ready.load(std::memory_order_relaxed)) return true;
    if (!b.defined()) return false;
    std::shared_ptr<const PackedGemmB> packed = PackGemmB(b, trans_b, budget);
    if (!packed) return false;
    gemm_b = std::move(packed);
    gemm_ready.store(true, std::memory_order_release);
    return true;
  }
  mutable std::mutex mu;
  mutable std::vector<Layout> layouts;
  mutable MemoryReservation layouts_reserved;  // the layouts' bytes, against budget
  mutable std::map<int64_t, Entry> entries;

  // The primitive for M rows, with B in its layout. Call with mu held and the
  // thread count set.
  Entry Make(int64_t m) const {
    using dnnl::memory;
    Entry e;
    e.a_md = memory::desc({m, k}, dt, memory::format_tag::ab);
    e.c_md = memory::desc({m, n}, dt, memory::format_tag::ab);
    const memory::desc any({k, n}, dt, memory::format_tag::any);
    const dnnl::matmul::desc d = bias.defined() ? dnnl::matmul::desc(e.a_md, any, bias_md, e.c_md)
                                                : dnnl::matmul::desc(e.a_md, any, e.c_md);
    // The user-mode scratchpad makes concurrent runs of the primitive safe:
    // each run brings its own (oneDNN's library scratchpad is shared).
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::matmul::primitive_desc pd(d, attr, OneDnnEngine());
    e.scratchpad_md = pd.scratchpad_desc();
    const memory::desc want = pd.weights_desc();
    e.layout = layouts.size();
    for (size_t i = 0; i < layouts.size(); ++i)
      if (layouts[i].md == want) e.layout = i;
    if (e.layout == layouts.size()) {
      if (!layouts_reserved.Grow(int64_t(want.get_size()), 1, "B reordered for oneDNN").ok()) throw std::bad_alloc();
      memory src(b_md, OneDnnEngine(), const_cast<void*>(b.raw()));
      memory dst(want, OneDnnEngine());
      dnnl::stream stream(OneDnnEngine());
      dnnl::reorder(src, dst).execute(stream, src, dst);
      stream.wait();
      layouts.push_back({want, dst});
    }
    e.primitive = dnnl::matmul(pd);
    return e;
  }
};

std::shared_ptr<const PackedGemmB> PackGemmB(const Tensor& b, bool trans_b,
                                             const std::shared_ptr<MemoryBudget>& budget) {
  if (b.dtype() != DType::kFloat || b.shape().size() != 2 || b.raw() == nullptr || !GemmPackedAvailable())
    return nullptr;
  const int64_t k = b.shape()[trans_b ? 1 : 0], n = b.shape()[trans_b ? 0 : 1];
  const int64_t size = GemmPackedSize(k, n);
  if (k <= 0 || n <= 0 || size < 0 || size / 2 > k * n) return nullptr;
  auto packed = std::make_shared<PackedGemmB>();
  packed->reserved = MemoryReservation(budget);
  if (!packed->reserved.Grow(size, sizeof(float), "the packed GEMM's panels").ok()) return nullptr;
  try {
    packed->panels.resize(size_t(size));
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  GemmPackB(b.data<float>(), k, n, trans_b, packed->panels.data());
  packed->target = ActiveCpuTarget();
  packed->k = k;
  packed->n = n;
  packed->trans_b = trans_b;
  return packed;
}

PackedMatMul::PackedMatMul(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackedMatMul::~PackedMatMul() = default;

std::unique_ptr<PackedMatMul> PackedMatMul::Make(const Tensor& b, bool trans_b, const Tensor& bias, int threads,
                                                 const std::shared_ptr<MemoryBudget>& budget,
                                                 std::shared_ptr<const PackedGemmB> packed) {
  using dnnl::memory;
  auto impl = std::make_unique<Impl>();
  if (!OneDnnType(b.dtype(), impl->dt) || b.shape().size() != 2 || threads <= 0) return nullptr;
  const int64_t k = b.shape()[trans_b ? 1 : 0], n = b.shape()[trans_b ? 0 : 1];
  if (k <= 0 || n <= 0) return nullptr;
  if (bias.defined() && (bias.dtype() != b.dtype() || bias.size() != n)) return nullptr;
  impl->b = b;
  impl->bias = bias;
  impl->k = k;
  impl->n = n;
  impl->trans_b = trans_b;
  impl->threads = threads;
  impl->budget = budget;
  impl->layouts_reserved = MemoryReservation(budget);
  try {
    impl->b_md = memory::desc({k, n}, impl->dt, trans_b ? memory::dims{1, k} : memory::dims{n, 1});
    if (bias.defined()) impl->bias_md = memory::desc({1, n}, impl->dt, memory::format_tag::ab);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  if (packed && impl->UsesPackedGemm() && packed->k == k && packed->n == n && packed->trans_b == trans_b &&
      packed->target == ActiveCpuTarget()) {
    impl->gemm_b = std::move(packed);
    impl->gemm_ready = true;
  }
  if (impl->UsesPackedGemm()) impl->PackForGemm();
  return std::unique_ptr<PackedMatMul>(new PackedMatMul(std::move(impl)));
}

int64_t PackedMatMul::k() const { return impl_->k; }
int64_t PackedMatMul::n() const { return impl_->n; }
bool PackedMatMul::has_bias() const { return impl_->bias.defined(); }
bool PackedMatMul::packs(const Tensor& b) const {
  return b.raw() == impl_->b.raw() && b.dtype() == impl_->b.dtype() && b.shape() == impl_->b.shape();
}

bool PackedMatMul::ReleaseB() {
  Impl& im = *impl_;
  if (!im.UsesPackedGemm() || !im.gemm_ready.load(std::memory_order_acquire)) return false;
  im.b = Tensor();
  return true;
}

bool PackedMatMul::Run(const void* a, void* c, int64_t m, int threads) const {
  using dnnl::memory;
  const Impl& im = *impl_;
  if (m <= 0) return false;
  const bool f32 = im.dt == dnnl::memory::data_type::f32;
  if (im.UsesPackedGemm() && im.PackForGemm() && im.gemm_b->target == ActiveCpuTarget()) {
    GemmPackedF32(static_cast<const float*>(a), im.gemm_b->panels.data(),
                  im.bias.defined() ? im.bias.data<float>() : nullptr, static_cast<float*>(c), m, im.k, im.n, threads);
    return true;
  }
  // Not packed: few rows run the GEMV on B as stored; more rows go to
  // oneDNN below, or, when packing found no memory, to the caller's plain
  // path rather than another copy of B.
  if (!im.b.defined()) return false;  // released: packed on another target
  if (f32 && m <= kGemvMaxRows) {
    GemvF32(static_cast<const float*>(a), im.b.data<float>(), im.bias.defined() ? im.bias.data<float>() : nullptr,
            static_cast<float*>(c), m, im.k, im.n, im.trans_b, threads);
    return true;
  }
  if (im.UsesPackedGemm()) return false;
  if (threads != im.threads) return false;
  try {
    const OmpThreadsScope scope(threads);
    Impl::Entry e;
    memory w;
    {
      std::lock_guard<std::mutex> lock(im.mu);
      auto it = im.entries.find(m);
      if (it != im.entries.end()) {
        e = it->second;
      } else {
        e = im.Make(m);
        if (im.entries.size() < kMaxPackedShapes) im.entries.emplace(m, e);
      }
      w = im.layouts[e.layout].mem;
    }
    MemoryReservation scratchpad(im.budget);
    if (!scratchpad.Grow(int64_t(e.scratchpad_md.get_size()), 1, "oneDNN's scratchpad").ok()) return false;
    dnnl::stream stream(OneDnnEngine());
    memory a_mem(e.a_md, OneDnnEngine(), const_cast<void*>(a));
    memory c_mem(e.c_md, OneDnnEngine(), c);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, c_mem},
                                              {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad_md, OneDnnEngine())}};
    if (im.bias.defined()) args[DNNL_ARG_BIAS] = memory(im.bias_md, OneDnnEngine(), const_cast<void*>(im.bias.raw()));
    e.primitive.execute(stream, args);
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  } catch (const std::bad_alloc&) {  // a layout the budget refused
    return false;
  }
}

}  // namespace onnx_mini
