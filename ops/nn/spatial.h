// What Conv, ConvTranspose and the pools share: their sliding-window
// attributes (parsed once), the window geometry Infer derives from them, and
// the oneDNN forward primitives of one geometry.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ops/common.h"

namespace onnx_mini {

// At most this many spatial dims (1-D, 2-D, 3-D windows).
inline constexpr int kMaxSpatial = 3;

// The window attributes as the node gives them (empty lists: absent).
struct WindowAttrs {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  // Reads kernel_shape, strides, dilations, pads, auto_pad and ceil_mode and
  // checks each on its own (positive sizes, non-negative pads, a known auto_pad).
  static absl::StatusOr<WindowAttrs> Parse(const Node& node);
};

// One window geometry with every spatial dim known, normalized to three dims:
// a 1-D or 2-D window has leading dims of size 1 (kernel 1, stride 1, no pads).
// For ConvTranspose, `in` and `out` are the transposed convolution's own input
// and output; pads may then be negative (output_shape asks for more).
struct Window {
  int rank = 0;  // spatial dims of the node
  std::array<int64_t, kMaxSpatial> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1};
  std::array<int64_t, kMaxSpatial> pb{0, 0, 0}, pe{0, 0, 0};  // pads at the beginning and the end
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  // The node's spatial dims of `v` (the last `rank` of three).
  Shape Spatial(const std::array<int64_t, kMaxSpatial>& v) const {
    return Shape(v.begin() + (kMaxSpatial - rank), v.end());
  }
};

// Checks the attribute lists against `rank` spatial dims and the kernel
// (from kernel_shape, or `kernel` when the op takes it from its weights).
absl::Status CheckWindowAttrs(const InferContext& ctx, const WindowAttrs& a, int64_t rank, const Shape& kernel);

// The window of a convolution or pool over `in` (the spatial dims of X) with
// kernel `kernel`: pads from auto_pad or the attribute, output sizes by
// floor (or ceil for ceil_mode pools), each at least 1. `pool` selects the
// pools' SAME rule (out = ceil(in / stride)); Conv's is the same.
absl::StatusOr<Window> ForwardWindow(const InferContext& ctx, const WindowAttrs& a, const Shape& in,
                                     const Shape& kernel);

// A oneDNN forward primitive of one geometry and element type, made on first use
// for each thread count (oneDNN divides its work among the threads it is made
// for, and runs badly under fewer) and kept for later runs; Run may be called
// from several threads at once. Run returns false when oneDNN cannot do the
// case: the caller then runs its reference kernel, which writes every output.
class OneDnnForward {
 public:
  class Primitive {
   public:
    virtual ~Primitive() = default;
    // weights and bias only for convolutions (bias may be null). With
    // `constant_weights` (the same values at every run, e.g. an initializer)
    // the weights reordered into the primitive's layout are kept and reused.
    // What oneDNN allocates (scratchpad, reordered inputs and output, the
    // kept weights) is charged to `budget` (if any): false when it refuses.
    // `residual` (if any): a tensor of dst's shape the post-ops add ("Add").
    virtual bool Run(const void* src, const void* weights, const void* bias, void* dst, bool constant_weights,
                     const std::shared_ptr<MemoryBudget>& budget, const void* residual) const = 0;
    // oneDNN's name of the implementation it chose ("jit:avx512_core", "gemm:jit", "ref:any").
    virtual std::string Impl() const = 0;
  };
  // `make` returns nullptr when oneDNN has no primitive for the case.
  explicit OneDnnForward(std::function<std::shared_ptr<const Primitive>()> make) : make_(std::move(make)) {}
  bool Run(const void* src, const void* weights, const void* bias, void* dst, int threads,
           bool constant_weights = false, const std::shared_ptr<MemoryBudget>& budget = nullptr,
           const void* residual = nullptr) const;
  // The implementation of the primitive for `threads` (made if not yet): ""
  // when oneDNN has none.
  std::string Impl(int threads) const;

 private:
  std::shared_ptr<const Primitive> Get(int threads) const;
  std::function<std::shared_ptr<const Primitive>()> make_;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<int, std::shared_ptr<const Primitive>>> made_;  // by thread count
};

// What a fused convolution (onnx_mini::FusedConv, made by the rewrites in
// runtime/rewrite/conv.cc) applies to its output, in order: an activation
// (alpha and beta as the ONNX op's attributes; Clip's bounds as alpha and
// beta) or kAdd, the residual input added.
struct ConvPostOp {
  // kLinear: alpha * x + beta (a Mul and an Add by one-element constants).
  enum Kind { kRelu, kLeakyRelu, kClip, kHardSigmoid, kHardSwish, kSigmoid, kSwish, kTanh, kLinear, kAdd } kind = kRelu;
  float alpha = 0, beta = 0;
  // The kind named as the ONNX op ("Add" for kAdd); false if none.
  static bool Parse(const std::string& name, Kind& kind);
  // The activation of one value (not kAdd), computed as the ONNX op does.
  double Apply(double x) const;
};

// What a FusedConv adds to its convolution: the post-ops, and which of its
// input X and output Y hold their values channels last (N, spatial..., C)
// instead of NCHW: a value that only convolutions read (runtime/rewrite/conv.cc).
struct ConvFusion {
  std::vector<ConvPostOp> post;
  bool src_channels_last = false, dst_channels_last = false;
  // The residual is laid out as Y (else NCHW): OneDnnConvSplit's parts.
  bool residual_as_dst = false;
};

// Conv (transposed: ConvTranspose) of N x C images into N x M, in groups,
// then the post-ops, in the layouts `fusion` gives. Both for float and
// bfloat16 (nullptr for other types).
std::shared_ptr<const OneDnnForward> MakeOneDnnConv(DType dtype, const Window& w, int64_t n, int64_t c, int64_t m,
                                                    int64_t group, bool has_bias, bool transposed,
                                                    const ConvFusion& fusion = {});

// A float or bfloat16 convolution (not transposed) computed as independent
// parts, each output rows of one image (the first spatial dim) by a
// single-threaded oneDNN primitive over channels-last views, on the kernels'
// pool: the caller and the workers claim parts as they go, so a descheduled
// worker delays one part, where oneDNN's OpenMP team waits for its slowest
// member (a small conv ran 4x slower on 2 threads than on 1 on a busy
// machine). NCHW X or Y are reordered once, whole, around the parts.
class OneDnnConvSplit {
 public:
  // As OneDnnForward::Run; false when oneDNN cannot do it (nothing is then
  // known about dst: the caller's reference writes it all).
  bool Run(const void* src, const void* weights, const void* bias, void* dst, int threads, bool constant_weights,
           const std::shared_ptr<MemoryBudget>& budget, const void* residual) const;

  // Made by MakeOneDnnConvSplit.
  struct Part {
    int64_t image, in_row, out_row;  // the part's image, first input and output row
    std::shared_ptr<const OneDnnForward> conv;
  };
  std::vector<Part> parts;
  int64_t in_image = 0, out_image = 0, in_row = 0, out_row = 0;  // bytes, channels last
  // Reorder NCHW X into channels last, and the NCHW residual Z into the
  // channels-last destination before the parts; the channels-last output to
  // NCHW Y after (empty when that side is channels last already).
  std::function<bool(const void* from, void* to)> src_in, residual_in, dst_out;
};

// The split of a convolution into about `parts` parts (at most one per
// output row), nullptr when it has fewer than two or oneDNN cannot take it,
// or when it would not give the whole conv's bytes: every part must run
// `whole_impl` (the whole's implementation on one thread), and not a GEMM
// (whose sums run in another order channels last than NCHW).
std::shared_ptr<const OneDnnConvSplit> MakeOneDnnConvSplit(DType dtype, const Window& w, int64_t n, int64_t c,
                                                           int64_t m, int64_t group, bool has_bias,
                                                           const ConvFusion& fusion, int64_t parts,
                                                           const std::string& whole_impl);

enum class PoolKind { kMax, kAverageIncludePad, kAverageExcludePad };
std::shared_ptr<const OneDnnForward> MakeOneDnnPool(DType dtype, const Window& w, int64_t n, int64_t c, PoolKind kind);

}  // namespace onnx_mini
