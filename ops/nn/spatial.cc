#include "ops/nn/spatial.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <optional>
#include <unordered_map>

#include "oneapi/dnnl/dnnl.hpp"
#include "kernels/copy/copy.h"
#include "kernels/gemm/onednn.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {

namespace {

// Attribute values are bounded so that window arithmetic cannot overflow.
constexpr int64_t kMaxWindowValue = int64_t(1) << 31;

absl::Status CheckRange(const Node& node, const char* name, const std::vector<int64_t>& v, int64_t lo) {
  for (int64_t x : v)
    if (x < lo || x >= kMaxWindowValue)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", name, " value ", x, " must be in [", lo,
                                                     ", 2^31)"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WindowAttrs> WindowAttrs::Parse(const Node& node) {
  WindowAttrs a;
  a.kernel = node.attr_ints("kernel_shape");
  a.strides = node.attr_ints("strides");
  a.dilations = node.attr_ints("dilations");
  a.pads = node.attr_ints("pads");
  a.auto_pad = node.attr_string("auto_pad", "NOTSET");
  a.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  RETURN_IF_ERROR(CheckRange(node, "kernel_shape", a.kernel, 1));
  RETURN_IF_ERROR(CheckRange(node, "strides", a.strides, 1));
  RETURN_IF_ERROR(CheckRange(node, "dilations", a.dilations, 1));
  RETURN_IF_ERROR(CheckRange(node, "pads", a.pads, 0));
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" && a.auto_pad != "VALID")
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": auto_pad '", a.auto_pad,
                                                   "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"));
  return a;
}

absl::Status CheckWindowAttrs(const InferContext& ctx, const WindowAttrs& a, int64_t rank, const Shape& kernel) {
  if (rank < 1) return ctx.Error("the input needs at least one spatial dim (rank >= 3)");
  if (rank > kMaxSpatial)
    return NotImplemented(ctx.node(), absl::StrCat(rank, " spatial dims (at most ", kMaxSpatial, ")"));
  auto check = [&](const char* name, const std::vector<int64_t>& v, size_t want) -> absl::Status {
    if (!v.empty() && v.size() != want)
      return ctx.Error(absl::StrCat(name, " has ", v.size(), " values; ", rank, " spatial dims need ", want));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check("kernel_shape", a.kernel, size_t(rank)));
  RETURN_IF_ERROR(check("strides", a.strides, size_t(rank)));
  RETURN_IF_ERROR(check("dilations", a.dilations, size_t(rank)));
  RETURN_IF_ERROR(check("pads", a.pads, size_t(2 * rank)));
  if (!a.kernel.empty() && !kernel.empty() && a.kernel != kernel)
    return ctx.Error(absl::StrCat("kernel_shape ", ShapeToString(a.kernel), " differs from the weights' ",
                                  ShapeToString(kernel)));
  if (a.kernel.empty() && kernel.empty()) return ctx.Error("kernel_shape is required");
  for (int64_t k : kernel)
    if (k < 1) return ctx.Error(absl::StrCat("the kernel ", ShapeToString(kernel), " has an empty dim"));
  return absl::OkStatus();
}

absl::StatusOr<Window> ForwardWindow(const InferContext& ctx, const WindowAttrs& a, const Shape& in,
                                     const Shape& kernel) {
  Window w;
  w.rank = int(in.size());
  const int off = kMaxSpatial - w.rank;
  for (int i = 0; i < w.rank; ++i) {
    const int j = off + i;
    if (in[size_t(i)] > (int64_t(1) << 62))
      return ctx.Error(absl::StrCat("spatial dim ", i, " of size ", in[size_t(i)], " is too large"));
    w.in[j] = in[size_t(i)];
    w.k[j] = kernel[size_t(i)];
    w.s[j] = a.strides.empty() ? 1 : a.strides[size_t(i)];
    w.d[j] = a.dilations.empty() ? 1 : a.dilations[size_t(i)];
    const int64_t extent = (w.k[j] - 1) * w.d[j] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      w.out[j] = (w.in[j] + w.s[j] - 1) / w.s[j];
      const int64_t total = std::max<int64_t>(0, (w.out[j] - 1) * w.s[j] + extent - w.in[j]);
      w.pb[j] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[j] = total - w.pb[j];
      continue;
    }
    if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      w.pb[j] = a.pads[size_t(i)];
      w.pe[j] = a.pads[size_t(i + w.rank)];
    }
    const int64_t span = w.in[j] + w.pb[j] + w.pe[j] - extent;
    if (span < 0)
      return ctx.Error(absl::StrCat("the window (kernel ", kernel[size_t(i)], ", dilation ", w.d[j],
                                    ") is larger than the padded input (", w.in[j], " + ", w.pb[j], " + ", w.pe[j],
                                    ") in spatial dim ", i));
    w.out[j] = span / w.s[j] + 1;
    if (a.ceil_mode && span % w.s[j] != 0) {
      ++w.out[j];
      // The last window must start inside the input or its leading pad.
      if ((w.out[j] - 1) * w.s[j] >= w.in[j] + w.pb[j]) --w.out[j];
    }
  }
  return w;
}

// ---- oneDNN ----

namespace {

using dnnl::memory;


// Row-major strides of `dims` laid out in the order `order` (outermost first).
memory::dims StridesInOrder(const memory::dims& dims, const std::vector<int>& order) {
  memory::dims strides(dims.size());
  int64_t s = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[size_t(order[k])] = s;
    s *= dims[size_t(order[k])];
  }
  return strides;
}

memory::desc Plain(const memory::dims& dims, memory::data_type dt) {
  std::vector<int> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  return memory::desc(dims, dt, StridesInOrder(dims, order));
}

// (N, C, spatial...) laid out as (N, spatial..., C).
memory::desc ChannelsLastDesc(const memory::dims& dims, memory::data_type dt) {
  std::vector<int> o = {0};
  for (size_t i = 2; i < dims.size(); ++i) o.push_back(int(i));
  o.push_back(1);
  return memory::desc(dims, dt, StridesInOrder(dims, o));
}

memory::dims Dims(const Window& w, const std::array<int64_t, kMaxSpatial>& v, int64_t sub = 0) {
  memory::dims d;
  for (int64_t x : w.Spatial(v)) d.push_back(x - sub);
  return d;
}

// The user-mode scratchpad makes concurrent runs of one primitive safe: each
// run brings its own.
dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The post-ops as oneDNN's: each activation one or two eltwise steps (HardSigmoid
// is linear then clip to [0, 1]), kAdd a sum with the destination, which
// Forward fills with the residual before the primitive runs.
dnnl::post_ops OneDnnPostOps(const std::vector<ConvPostOp>& post) {
  dnnl::post_ops ops;
  using A = dnnl::algorithm;
  for (const ConvPostOp& p : post) switch (p.kind) {
      case ConvPostOp::kRelu: ops.append_eltwise(1.f, A::eltwise_relu, 0.f, 0.f); break;
      case ConvPostOp::kLeakyRelu: ops.append_eltwise(1.f, A::eltwise_relu, p.alpha, 0.f); break;
      case ConvPostOp::kClip: ops.append_eltwise(1.f, A::eltwise_clip, p.alpha, p.beta); break;
      case ConvPostOp::kHardSigmoid:
        ops.append_eltwise(1.f, A::eltwise_linear, p.alpha, p.beta);
        ops.append_eltwise(1.f, A::eltwise_clip, 0.f, 1.f);
        break;
      case ConvPostOp::kHardSwish: ops.append_eltwise(1.f, A::eltwise_hardswish, 0.f, 0.f); break;
      case ConvPostOp::kSigmoid: ops.append_eltwise(1.f, A::eltwise_logistic, 0.f, 0.f); break;
      case ConvPostOp::kSwish: ops.append_eltwise(1.f, A::eltwise_swish, p.alpha, 0.f); break;
      case ConvPostOp::kTanh: ops.append_eltwise(1.f, A::eltwise_tanh, 0.f, 0.f); break;
      case ConvPostOp::kLinear: ops.append_eltwise(1.f, A::eltwise_linear, p.alpha, p.beta); break;
      case ConvPostOp::kAdd: ops.append_sum(1.f); break;
    }
  return ops;
}

// A reorder between two layouts of one tensor. Between NCHW and channels
// last (the activations around a conv) CopyStrided transposes instead:
// oneDNN's reorder call costs a few us, more than the copy of these nets'
// small tensors, and its large transposes ran at ~5 GB/s.
struct Reorder {
  dnnl::reorder::primitive_desc pd;
  dnnl::reorder primitive;
  struct Transpose {
    DType dtype;
    bool to_last;
    int64_t n, c, plane;
  };
  std::optional<Transpose> transpose;
  void Run(dnnl::stream& stream, const memory& from, const memory& to) const {
    if (transpose) {
      const Transpose& t = *transpose;
      // (N, plane, C) in the destination's order or the source's.
      const Shape shape = t.to_last ? Shape{t.n, t.plane, t.c} : Shape{t.n, t.c, t.plane};
      const std::vector<int64_t> strides = {t.c * t.plane, 1, t.to_last ? t.plane : t.c};
      if (CopyStrided(t.dtype, shape, from.get_data_handle(), strides, to.get_data_handle(), {},
                      omp_get_max_threads())
              .ok())
        return;
    }
    if (pd.scratchpad_desc().get_size() == 0) {  // the usual case: no buffer to make
      primitive.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
      return;
    }
    primitive.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to},
                               {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), OneDnnEngine())}});
  }
};

// One buffer per calling thread for a run's temporaries (the scratchpad and
// the reordered copies), kept from run to run: allocating them at each run
// cost a small conv more than its arithmetic (malloc, and the heap growing
// and trimmed back, page faults each time). Larger needs than kMaxKept are
// allocated for the run alone. Each kSlot is a buffer of its own (a split
// conv's staging copies are in use while the caller runs a part).
template <int kSlot>
class RunBufferOf {
 public:
  static constexpr size_t kAlign = 64, kMaxKept = size_t(64) << 20;
  // A buffer of `bytes` for this run (released by the destructor), or nullptr.
  explicit RunBufferOf(size_t bytes) {
    Kept& k = kept();
    if (bytes <= kMaxKept && !k.in_use) {
      if (k.size < bytes) {
        k.data.reset(static_cast<char*>(std::aligned_alloc(kAlign, RoundUp(bytes))));
        k.size = k.data ? RoundUp(bytes) : 0;
      }
      if (k.data) {
        k.in_use = true;
        data_ = k.data.get();
        borrowed_ = true;
        return;
      }
    }
    own_.reset(static_cast<char*>(std::aligned_alloc(kAlign, RoundUp(bytes))));
    data_ = own_.get();
  }
  ~RunBufferOf() {
    if (borrowed_) kept().in_use = false;
  }
  RunBufferOf(const RunBufferOf&) = delete;
  RunBufferOf& operator=(const RunBufferOf&) = delete;
  char* data() const { return data_; }
  static size_t RoundUp(size_t n) { return (std::max<size_t>(n, 1) + kAlign - 1) / kAlign * kAlign; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  struct Kept {
    std::unique_ptr<char, Free> data;
    size_t size = 0;
    bool in_use = false;
  };
  static Kept& kept() {
    thread_local Kept k;
    return k;
  }
  std::unique_ptr<char, Free> own_;
  char* data_ = nullptr;
  bool borrowed_ = false;
};
using RunBuffer = RunBufferOf<0>;

// None when the layouts are the same.
std::optional<Reorder> MakeReorder(const memory::desc& from, const memory::desc& to) {
  if (from == to) return std::nullopt;
  dnnl::reorder::primitive_desc pd(OneDnnEngine(), from, OneDnnEngine(), to, UserScratchpad());
  Reorder r{pd, dnnl::reorder(pd), std::nullopt};
  const memory::dims dims = from.dims();
  const memory::data_type dt = from.data_type();
  if (dims == to.dims() && dims.size() >= 3 && dt == to.data_type() &&
      (dt == memory::data_type::f32 || dt == memory::data_type::bf16)) {
    int64_t plane = 1;
    for (size_t i = 2; i < dims.size(); ++i) plane *= dims[i];
    const DType dtype = dt == memory::data_type::f32 ? DType::kFloat : DType::kBFloat16;
    const memory::desc plain = Plain(dims, dt), last = ChannelsLastDesc(dims, dt);
    if (from == plain && to == last) r.transpose = Reorder::Transpose{dtype, true, dims[0], dims[1], plane};
    if (from == last && to == plain) r.transpose = Reorder::Transpose{dtype, false, dims[0], dims[1], plane};
  }
  return r;
}

// Runs a primitive P on the callers' plain tensors. The primitive may prefer
// other layouts (convolutions pick blocked ones, much faster than plain
// NCHW): the inputs are then reordered into temporary buffers before, and the
// output out of one after, each run.
template <class P>
class Forward : public OneDnnForward::Primitive {
 public:
  // `weights` and `bias` are zero descriptors for primitives without them.
  // `residual` (not zero): the post-ops sum the destination, filled first
  // with the residual, whose layout this is.
  Forward(const typename P::primitive_desc& pd, memory::desc src, memory::desc weights, memory::desc bias,
          memory::desc dst, memory::desc residual = memory::desc())
      : pd_(pd), impl_(pd.impl_info_str()), primitive_(pd), src_(src), weights_(weights), bias_(bias), dst_(dst),
        src_in_(MakeReorder(src, pd.src_desc())), dst_out_(MakeReorder(pd.dst_desc(), dst)),
        src_md_(pd.src_desc()), dst_md_(pd.dst_desc()), scratch_md_(pd.scratchpad_desc()) {
    if (!weights.is_zero()) {
      weights_in_ = MakeReorder(weights, pd.weights_desc());
      weights_md_ = pd.weights_desc();
    }
    if (!residual.is_zero()) {
      residual_ = true;
      residual_md_ = residual;
      dst_in_ = MakeReorder(residual, pd.dst_desc());
    }
  }

  bool Run(const void* src, const void* weights, const void* bias, void* dst, bool constant_weights,
           const std::shared_ptr<MemoryBudget>& budget, const void* residual) const override {
    if (residual_ != (residual != nullptr)) return false;
    try {
      // One stream per thread, made once (the engine is one for the process).
      thread_local dnnl::stream stream(OneDnnEngine());
      // Constant weights: reordered once, on the first run, and kept.
      std::optional<memory> kept;
      if (weights && weights_in_ && constant_weights) {
        std::lock_guard<std::mutex> lock(kept_mu_);
        if (kept_from_ == nullptr) {
          kept_charge_ = MemoryReservation(budget);
          if (!kept_charge_.Grow(int64_t(pd_.weights_desc().get_size()), 1, "the reordered weights").ok()) return false;
          memory user(weights_, OneDnnEngine(), const_cast<void*>(weights));
          memory mine(pd_.weights_desc(), OneDnnEngine());
          weights_in_->Run(stream, user, mine);
          stream.wait();
          kept_weights_ = mine;
          kept_from_ = weights;
        }
        if (kept_from_ == weights) kept = kept_weights_;
      }
      // This run's buffers: the scratchpad and the reordered copies, carved
      // from one per-thread buffer.
      const bool weights_copy = weights && weights_in_ && !kept;
      const size_t sizes[4] = {scratch_md_.get_size(), src_in_ ? src_md_.get_size() : 0,
                               dst_out_ ? dst_md_.get_size() : 0, weights_copy ? weights_md_.get_size() : 0};
      size_t bytes = 0;
      for (size_t n : sizes) bytes += RunBuffer::RoundUp(n);
      MemoryReservation charge(budget);
      if (!charge.Grow(int64_t(bytes), 1, "oneDNN's buffers").ok()) return false;
      RunBuffer buffer(bytes);
      if (!buffer.data()) return false;
      char* next = buffer.data();
      auto carve = [&](size_t i) {
        char* p = next;
        next += RunBuffer::RoundUp(sizes[i]);
        return p;
      };
      char* scratch = carve(0);
      char* src_copy = carve(1);
      char* dst_copy = carve(2);
      char* weights_buf = carve(3);
      // Reorders into the primitive's layout, where it differs from the caller's.
      auto in = [&](const memory::desc& plain, const void* data, const std::optional<Reorder>& reorder,
                    const memory::desc& wanted, char* copy) {
        memory user(plain, OneDnnEngine(), const_cast<void*>(data));
        if (!reorder) return user;
        memory mine(wanted, OneDnnEngine(), copy);
        reorder->Run(stream, user, mine);
        return mine;
      };
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, in(src_, src, src_in_, src_md_, src_copy)},
          {DNNL_ARG_SCRATCHPAD, memory(scratch_md_, OneDnnEngine(), scratch)},
      };
      if (weights)
        args[DNNL_ARG_WEIGHTS] = kept ? *kept : in(weights_, weights, weights_in_, weights_md_, weights_buf);
      if (bias) args[DNNL_ARG_BIAS] = memory(bias_, OneDnnEngine(), const_cast<void*>(bias));
      memory user_dst(dst_, OneDnnEngine(), dst);
      args[DNNL_ARG_DST] = dst_out_ ? memory(dst_md_, OneDnnEngine(), dst_copy) : user_dst;
      if (residual) {
        // The sum post-op adds what the destination holds.
        memory z(residual_md_, OneDnnEngine(), const_cast<void*>(residual));
        if (dst_in_) dst_in_->Run(stream, z, args[DNNL_ARG_DST]);
        else if (residual != dst) std::memcpy(dst, residual, dst_.get_size());
      }
      primitive_.execute(stream, args);
      if (dst_out_) dst_out_->Run(stream, args[DNNL_ARG_DST], user_dst);
      stream.wait();
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }

  std::string Impl() const override { return impl_; }

 private:
  typename P::primitive_desc pd_;
  std::string impl_;
  P primitive_;
  memory::desc src_, weights_, bias_, dst_;
  std::optional<Reorder> src_in_, weights_in_, dst_out_, dst_in_;
  memory::desc src_md_, dst_md_, scratch_md_, weights_md_;  // the primitive's (queried once)
  memory::desc residual_md_;
  bool residual_ = false;
  mutable std::mutex kept_mu_;
  mutable const void* kept_from_ = nullptr;  // the constant weights kept_weights_ holds, reordered
  mutable memory kept_weights_;
  mutable MemoryReservation kept_charge_;  // kept_weights_'s bytes
};

}  // namespace

std::shared_ptr<const OneDnnForward::Primitive> OneDnnForward::Get(int threads) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(made_.begin(), made_.end(), [&](const auto& p) { return p.first == threads; });
  if (it != made_.end()) return it->second;
  const OmpThreadsScope scope(threads);
  made_.emplace_back(threads, make_());
  return made_.back().second;
}

std::string OneDnnForward::Impl(int threads) const {
  const std::shared_ptr<const Primitive> primitive = Get(threads);
  return primitive ? primitive->Impl() : std::string();
}

bool OneDnnForward::Run(const void* src, const void* weights, const void* bias, void* dst, int threads,
                        bool constant_weights, const std::shared_ptr<MemoryBudget>& budget,
                        const void* residual) const {
  const std::shared_ptr<const Primitive> primitive = Get(threads);
  if (!primitive) return false;
  const OmpThreadsScope scope(threads);
  return primitive->Run(src, weights, bias, dst, constant_weights, budget, residual);
}

namespace {

bool IsRefImpl(const std::string& impl) { return impl.rfind("ref", 0) == 0; }

std::shared_ptr<const OneDnnForward::Primitive> ConvPrimitive(memory::data_type dt, const Window& w, int64_t n,
                                                              int64_t c, int64_t m, int64_t group, bool has_bias,
                                                              bool transposed, const ConvFusion& fusion) {
  const std::vector<ConvPostOp>& post = fusion.post;
  try {
    memory::dims src_dims = {n, c}, dst_dims = {n, m};
    const memory::dims in = Dims(w, w.in), out = Dims(w, w.out), k = Dims(w, w.k);
    src_dims.insert(src_dims.end(), in.begin(), in.end());
    dst_dims.insert(dst_dims.end(), out.begin(), out.end());
    // oneDNN's weights are (g, out/g, in/g, k...); ONNX stores Conv's as
    // (out, in/g, k...) and ConvTranspose's as (in, out/g, k...), i.e. (g, in/g, out/g, k...).
    memory::dims wdims = {group, m / group, c / group};
    wdims.insert(wdims.end(), k.begin(), k.end());
    std::vector<int> order(wdims.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
    if (transposed) std::swap(order[1], order[2]);
    memory::desc weights(wdims, dt, StridesInOrder(wdims, order));
    if (group == 1) {  // the ungrouped form
      memory::dims plain(wdims.begin() + 1, wdims.end());
      std::vector<int> o(plain.size());
      for (size_t i = 0; i < o.size(); ++i) o[i] = int(i);
      if (transposed) std::swap(o[0], o[1]);
      weights = memory::desc(plain, dt, StridesInOrder(plain, o));
    }
    // The caller's layouts: plain, or channels last where the fusion says
    // (a value only convolutions read, kept so from one to the next).
    auto layout = [&](const memory::dims& dims, bool channels_last) {
      return channels_last ? ChannelsLastDesc(dims, dt) : Plain(dims, dt);
    };
    const memory::desc src = layout(src_dims, fusion.src_channels_last);
    const memory::desc dst = layout(dst_dims, fusion.dst_channels_last);
    const memory::desc bias = has_bias ? Plain({m}, dt) : memory::desc();
    const memory::dims strides = Dims(w, w.s), dilates = Dims(w, w.d, 1), pl = Dims(w, w.pb), pr = Dims(w, w.pe);
    // The primitive picks its own layouts (format any) but for a channels-last
    // side, which it takes as it is; Forward reorders the others.
    const memory::desc src_any = fusion.src_channels_last ? src : memory::desc(src_dims, dt, memory::format_tag::any);
    const memory::desc dst_any = fusion.dst_channels_last ? dst : memory::desc(dst_dims, dt, memory::format_tag::any);
    const memory::desc weights_any(weights.dims(), dt, memory::format_tag::any);
    // oneDNN 2.6 computes a conv whose post-ops hold two eltwise_linear
    // steps wrong (Linear, HardSigmoid): the reference runs those.
    if (std::count_if(post.begin(), post.end(), [](const ConvPostOp& p) {
          return p.kind == ConvPostOp::kLinear || p.kind == ConvPostOp::kHardSigmoid;
        }) > 1)
      return nullptr;
    dnnl::primitive_attr attr = UserScratchpad();
    if (!post.empty()) attr.set_post_ops(OneDnnPostOps(post));
    const bool residual =
        std::any_of(post.begin(), post.end(), [](const ConvPostOp& p) { return p.kind == ConvPostOp::kAdd; });
    if (transposed) {
      const dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                                dnnl::algorithm::deconvolution_direct, src_any, weights_any, bias,
                                                dst_any, strides, dilates, pl, pr);
      const dnnl::deconvolution_forward::primitive_desc pd(d, attr, OneDnnEngine());
      return std::make_shared<Forward<dnnl::deconvolution_forward>>(pd, src, weights, bias, dst,
                                                                    residual ? Plain(dst_dims, dt) : memory::desc());
    }
    auto conv_pd = [&](const memory::desc& s, const memory::desc& dd) {
      const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                              dnnl::algorithm::convolution_direct, s, weights_any, bias, dd, strides,
                                              dilates, pl, pr);
      return dnnl::convolution_forward::primitive_desc(d, attr, OneDnnEngine());
    };
    dnnl::convolution_forward::primitive_desc pd = conv_pd(src_any, dst_any);
    // oneDNN's ref implementation is tens of times slower than its jit (a
    // 258-channel depthwise 1-D conv in NCW: 0.36 ms against ~1 us channels
    // last): the free sides are offered channels last (reordered around it).
    if (IsRefImpl(pd.impl_info_str()) && !(fusion.src_channels_last && fusion.dst_channels_last)) {
      try {
        const dnnl::convolution_forward::primitive_desc last =
            conv_pd(ChannelsLastDesc(src_dims, dt), ChannelsLastDesc(dst_dims, dt));
        if (!IsRefImpl(last.impl_info_str())) pd = last;
      } catch (const dnnl::error&) {
      }
    }
    const memory::desc z = !residual ? memory::desc() : fusion.residual_as_dst ? dst : Plain(dst_dims, dt);
    return std::make_shared<Forward<dnnl::convolution_forward>>(pd, src, weights, bias, dst, z);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::shared_ptr<const OneDnnForward::Primitive> PoolPrimitive(memory::data_type dt, const Window& w, int64_t n,
                                                              int64_t c, PoolKind kind) {
  try {
    memory::dims src_dims = {n, c}, dst_dims = {n, c};
    const memory::dims in = Dims(w, w.in), out = Dims(w, w.out);
    src_dims.insert(src_dims.end(), in.begin(), in.end());
    dst_dims.insert(dst_dims.end(), out.begin(), out.end());
    // oneDNN wants the end pads that make the output size exact; ceil_mode
    // may need more than the attribute's, which only an average that counts
    // the pads would see.
    std::array<int64_t, kMaxSpatial> pr = w.pe;
    for (int i = 0; i < kMaxSpatial; ++i) {
      const int64_t need = (w.out[size_t(i)] - 1) * w.s[size_t(i)] + (w.k[size_t(i)] - 1) * w.d[size_t(i)] + 1 -
                           w.in[size_t(i)] - w.pb[size_t(i)];
      if (need > pr[size_t(i)]) {
        if (kind == PoolKind::kAverageIncludePad) return nullptr;
        pr[size_t(i)] = need;
      }
    }
    const memory::desc src = Plain(src_dims, dt), dst = Plain(dst_dims, dt);
    const dnnl::algorithm algo = kind == PoolKind::kMax                 ? dnnl::algorithm::pooling_max
                                 : kind == PoolKind::kAverageIncludePad ? dnnl::algorithm::pooling_avg_include_padding
                                                                        : dnnl::algorithm::pooling_avg_exclude_padding;
    const dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, algo, src, dst, Dims(w, w.s),
                                           Dims(w, w.k), Dims(w, w.d, 1), Dims(w, w.pb), Dims(w, pr));
    const dnnl::pooling_v2_forward::primitive_desc pd(d, UserScratchpad(), OneDnnEngine());
    return std::make_shared<Forward<dnnl::pooling_v2_forward>>(pd, src, memory::desc(), memory::desc(), dst);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// The element types oneDNN runs here.
bool OneDnnType(DType dtype, memory::data_type& dt) {
  if (dtype == DType::kFloat) dt = memory::data_type::f32;
  else if (dtype == DType::kBFloat16) dt = memory::data_type::bf16;
  else return false;
  return true;
}

}  // namespace

std::shared_ptr<const OneDnnForward> MakeOneDnnConv(DType dtype, const Window& w, int64_t n, int64_t c, int64_t m,
                                                    int64_t group, bool has_bias, bool transposed,
                                                    const ConvFusion& fusion) {
  memory::data_type dt;
  if (!OneDnnType(dtype, dt)) return nullptr;
  if (n <= 0 || c <= 0 || m <= 0 || group <= 0 || w.in_size() <= 0 || w.out_size() <= 0) return nullptr;
  for (int i = 0; i < kMaxSpatial; ++i)
    if (w.pb[size_t(i)] < 0 || w.pe[size_t(i)] < 0) return nullptr;
  return std::make_shared<OneDnnForward>(
      [=] { return ConvPrimitive(dt, w, n, c, m, group, has_bias, transposed, fusion); });
}

bool OneDnnConvSplit::Run(const void* src, const void* weights, const void* bias, void* dst, int threads,
                          bool constant_weights, const std::shared_ptr<MemoryBudget>& budget,
                          const void* residual) const {
  if (bool(residual_in) != (residual != nullptr)) return false;
  // No OpenMP team anywhere below: the staging reorders run on the caller,
  // each part on one thread.
  const OmpThreadsScope scope(1);
  const size_t src_bytes = src_in ? size_t(in_image) * size_t(parts.back().image + 1) : 0;
  const size_t dst_bytes = dst_out ? size_t(out_image) * size_t(parts.back().image + 1) : 0;
  MemoryReservation charge(budget);
  if (!charge.Grow(int64_t(RunBufferOf<1>::RoundUp(src_bytes) + RunBufferOf<1>::RoundUp(dst_bytes)), 1,
                   "the split convolution's channels-last copies")
           .ok())
    return false;
  RunBufferOf<1> buffer(RunBufferOf<1>::RoundUp(src_bytes) + RunBufferOf<1>::RoundUp(dst_bytes));
  if (!buffer.data()) return false;
  const char* x = static_cast<const char*>(src);
  char* y = static_cast<char*>(dst);
  if (src_in) {
    if (!src_in(src, buffer.data())) return false;
    x = buffer.data();
  }
  if (dst_out) y = buffer.data() + RunBufferOf<1>::RoundUp(src_bytes);
  if (residual && !residual_in(residual, y)) return false;
  std::atomic<bool> ok{true};
  ParallelFor(threads, int64_t(parts.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && ok.load(std::memory_order_relaxed); ++i) {
      const Part& p = parts[size_t(i)];
      const char* xp = x + p.image * in_image + p.in_row * in_row;
      char* yp = y + p.image * out_image + p.out_row * out_row;
      if (!p.conv->Run(xp, weights, bias, yp, 1, constant_weights, budget, residual ? yp : nullptr))
        ok.store(false, std::memory_order_relaxed);
    }
  });
  if (!ok.load()) return false;
  return !dst_out || dst_out(y, dst);
}

std::shared_ptr<const OneDnnConvSplit> MakeOneDnnConvSplit(DType dtype, const Window& w, int64_t n, int64_t c,
                                                           int64_t m, int64_t group, bool has_bias,
                                                           const ConvFusion& fusion, int64_t parts,
                                                           const std::string& whole_impl) {
  if (whole_impl.empty() || whole_impl.find("gemm") != std::string::npos) return nullptr;
  memory::data_type dt;
  if (!OneDnnType(dtype, dt) || w.rank < 1 || n <= 0 || c <= 0 || m <= 0) return nullptr;
  for (int i = 0; i < kMaxSpatial; ++i)
    if (w.pb[size_t(i)] < 0 || w.pe[size_t(i)] < 0) return nullptr;
  // Rows: the first spatial dim; an image's rows split into `per` parts.
  const size_t j = size_t(kMaxSpatial - w.rank);
  const int64_t rows = w.out[j];
  const int64_t per = std::min(rows, (parts + n - 1) / n);
  if (per * n < 2) return nullptr;
  const size_t element = dtype == DType::kFloat ? 4 : 2;
  auto split = std::make_shared<OneDnnConvSplit>();
  split->in_image = int64_t(element) * c * w.in_size();
  split->out_image = int64_t(element) * m * w.out_size();
  split->in_row = split->in_image / w.in[j];
  split->out_row = split->out_image / w.out[j];
  ConvFusion part_fusion = fusion;
  part_fusion.src_channels_last = part_fusion.dst_channels_last = part_fusion.residual_as_dst = true;
  // Parts of one geometry (the middle ones, mostly) share a primitive.
  std::vector<std::pair<std::array<int64_t, 4>, std::shared_ptr<const OneDnnForward>>> made;
  for (int64_t r = 0; r < per; ++r) {
    const int64_t o0 = rows * r / per, o1 = rows * (r + 1) / per;
    const int64_t begin = o0 * w.s[j] - w.pb[j], end = (o1 - 1) * w.s[j] - w.pb[j] + (w.k[j] - 1) * w.d[j] + 1;
    const int64_t i0 = std::max<int64_t>(0, begin), i1 = std::min(w.in[j], end);
    if (i1 <= i0) return nullptr;  // a part inside the pads alone
    Window pw = w;
    pw.in[j] = i1 - i0;
    pw.out[j] = o1 - o0;
    pw.pb[j] = i0 - begin;
    pw.pe[j] = end - i1;
    const std::array<int64_t, 4> key = {pw.in[j], pw.out[j], pw.pb[j], pw.pe[j]};
    auto it = std::find_if(made.begin(), made.end(), [&](const auto& e) { return e.first == key; });
    if (it == made.end()) {
      made.emplace_back(key, MakeOneDnnConv(dtype, pw, 1, c, m, group, has_bias, false, part_fusion));
      it = made.end() - 1;
      if (!it->second || it->second->Impl(1) != whole_impl) return nullptr;
    }
    for (int64_t image = 0; image < n; ++image)
      split->parts.push_back({image, i0, o0, it->second});
  }
  // Sorted by image, then row: neighbouring parts share input rows.
  std::stable_sort(split->parts.begin(), split->parts.end(),
                   [](const auto& a, const auto& b) { return a.image < b.image; });
  // The NCHW sides' reorders (one channel: the layouts are the same bytes).
  memory::dims src_dims = {n, c}, dst_dims = {n, m};
  for (int64_t v : w.Spatial(w.in)) src_dims.push_back(v);
  for (int64_t v : w.Spatial(w.out)) dst_dims.push_back(v);
  auto reorder = [](const memory::desc& from, const memory::desc& to) -> std::function<bool(const void*, void*)> {
    std::shared_ptr<const Reorder> r;
    try {
      const OmpThreadsScope one(1);  // a primitive keeps the thread count it is made for
      auto made = MakeReorder(from, to);
      if (!made) return nullptr;
      r = std::make_shared<const Reorder>(*made);
    } catch (const dnnl::error&) {
      return [](const void*, void*) { return false; };
    }
    return [r, from, to](const void* a, void* b) {
      try {
        thread_local dnnl::stream stream(OneDnnEngine());
        r->Run(stream, memory(from, OneDnnEngine(), const_cast<void*>(a)), memory(to, OneDnnEngine(), b));
        stream.wait();
        return true;
      } catch (const dnnl::error&) {
        return false;
      }
    };
  };
  if (!fusion.src_channels_last && c > 1) split->src_in = reorder(Plain(src_dims, dt), ChannelsLastDesc(src_dims, dt));
  if (!fusion.dst_channels_last && m > 1) split->dst_out = reorder(ChannelsLastDesc(dst_dims, dt), Plain(dst_dims, dt));
  if (std::any_of(fusion.post.begin(), fusion.post.end(), [](const ConvPostOp& p) { return p.kind == ConvPostOp::kAdd; })) {
    if (!fusion.residual_as_dst) split->residual_in = reorder(Plain(dst_dims, dt), ChannelsLastDesc(dst_dims, dt));
    if (!split->residual_in) {  // the same layout: copied
      const size_t bytes = size_t(split->out_image) * size_t(n);
      split->residual_in = [bytes](const void* a, void* b) {
        if (a != b) std::memcpy(b, a, bytes);
        return true;
      };
    }
  }
  return split;
}

std::shared_ptr<const OneDnnForward> MakeOneDnnPool(DType dtype, const Window& w, int64_t n, int64_t c, PoolKind kind) {
  memory::data_type dt;
  if (!OneDnnType(dtype, dt)) return nullptr;
  if (n <= 0 || c <= 0 || w.in_size() <= 0 || w.out_size() <= 0) return nullptr;
  // oneDNN walks every tap of a window, the reference only those inside the
  // input: windows much larger than the input (huge pads) go to the reference.
  for (int i = 0; i < kMaxSpatial; ++i)
    if (w.k[size_t(i)] > 2 * w.in[size_t(i)] + 1) return nullptr;
  // An average that counts the pads cannot take the extra end pads ceil_mode may need.
  for (int i = 0; i < kMaxSpatial; ++i)
    if (kind == PoolKind::kAverageIncludePad &&
        (w.out[size_t(i)] - 1) * w.s[size_t(i)] + (w.k[size_t(i)] - 1) * w.d[size_t(i)] + 1 - w.in[size_t(i)] -
                w.pb[size_t(i)] > w.pe[size_t(i)])
      return nullptr;
  return std::make_shared<OneDnnForward>([=] { return PoolPrimitive(dt, w, n, c, kind); });
}

}  // namespace onnx_mini

namespace onnx_mini {

bool ConvPostOp::Parse(const std::string& name, Kind& kind) {
  static const std::pair<const char*, Kind> kNames[] = {
      {"Relu", kRelu},           {"LeakyRelu", kLeakyRelu}, {"Clip", kClip}, {"HardSigmoid", kHardSigmoid},
      {"HardSwish", kHardSwish}, {"Sigmoid", kSigmoid},     {"Swish", kSwish}, {"Tanh", kTanh}, {"Linear", kLinear},
      {"Add", kAdd}};
  for (const auto& [n, k] : kNames)
    if (name == n) {
      kind = k;
      return true;
    }
  return false;
}

double ConvPostOp::Apply(double x) const {
  switch (kind) {
    case kRelu: return x > 0 ? x : 0;
    case kLeakyRelu: return x < 0 ? double(alpha) * x : x;
    case kClip: return std::isnan(x) ? x : std::min(double(beta), std::max(double(alpha), x));  // NaN stays, as in Clip
    case kHardSigmoid: return std::max(0.0, std::min(1.0, double(alpha) * x + double(beta)));
    case kHardSwish: return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case kSigmoid: return 1 / (1 + std::exp(-x));
    case kSwish: return x / (1 + std::exp(-double(alpha) * x));
    case kTanh: return std::tanh(x);
    case kLinear: return double(alpha) * x + double(beta);
    case kAdd: break;
  }
  return x;
}

}  // namespace onnx_mini
