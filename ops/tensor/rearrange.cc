// Ops that rearrange, repeat or frame elements by a rule of their shapes:
// Tile, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence, CenterCropPad,
// Col2Im.
#include <algorithm>
#include <type_traits>

#include "ops/common.h"
#include "kernels/copy/copy.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {


// A 1-D int64 input whose values the output shape needs (nullopt: not known yet).
absl::StatusOr<std::optional<std::vector<int64_t>>> ShapeValues(const InferContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.value(i);
  if (t == nullptr) return std::optional<std::vector<int64_t>>();
  if (t->rank() != 1) return ctx.Error(absl::StrCat(what, " must be 1-D, got shape ", ShapeToString(t->shape())));
  if (t->size() > kMaxRank)
    return ctx.Error(absl::StrCat(what, " has ", t->size(), " entries; the most is ", kMaxRank));
  return std::optional<std::vector<int64_t>>(IndexValues(*t));
}

// ---- Tile ----

class TileOp : public Op {
 public:
  explicit TileOp(const Node&) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType out;
    out.dtype = in.dtype;
    ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> repeats, ShapeValues(ctx, 1, "repeats"));
    if (in.dims) {
      out.dims = std::vector<Dim>(in.dims->size());
      if (repeats) {
        if (int64_t(repeats->size()) != in.rank())
          return ctx.Error(absl::StrCat("repeats has ", repeats->size(), " entries; the input ", in.ToString(),
                                        " has rank ", in.rank()));
        for (size_t d = 0; d < repeats->size(); ++d) {
          const int64_t r = (*repeats)[d];
          if (r < 0) return ctx.Error(absl::StrCat("repeats must be >= 0, got ", r, " for dim ", d));
          const Dim& n = (*in.dims)[d];
          if (!n.known()) continue;
          const std::optional<int64_t> m = CheckedMul(n.value, r);
          if (!m) return ctx.Error(absl::StrCat("dim ", d, " of ", n.value, " repeated ", r, " times overflows"));
          (*out.dims)[d] = Dim::Known(*m);
        }
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  // The output [r0 * n0, r1 * n1, ...] is, row-major, [r0, n0, r1, n1, ...]:
  // the input broadcast along the repeat dims.
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const std::vector<int64_t> strides = RowMajorStrides(in.shape());
    Shape shape;
    std::vector<int64_t> src_strides;
    for (int64_t d = 0; d < in.rank(); ++d) {
      shape.insert(shape.end(), {out.dim(d) / in.dim(d), in.dim(d)});
      src_strides.insert(src_strides.end(), {0, strides[size_t(d)]});
    }
    return CopyStrided(in.dtype(), shape, in.raw(), src_strides, out.raw(), {}, ctx.threads());
  }
};

// ---- EyeLike ----

using EyeTypes = Join<NumericTypes, TypeList<bool>>;

class EyeLikeOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    DType dtype = DType::kUndefined;
    if (node.attr("dtype")) {
      const int64_t code = node.attr_int("dtype", 0);
      if (code < 1 || code > kMaxDTypeCode || !EyeTypes::set().contains(DType(code)))
        return AttributeError(node, absl::StrCat("dtype ", code, " is not a numeric or bool element type"));
      dtype = DType(code);
    }
    return std::unique_ptr<Op>(new EyeLikeOp(dtype, node.attr_int("k", 0)));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    if (in.dims && in.rank() != 2) return ctx.Error(absl::StrCat("the input must be 2-D, got ", in.ToString()));
    ValueType out = in;
    if (dtype_ != DType::kUndefined) out.dtype = dtype_;
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const int64_t rows = out.dim(0), cols = out.dim(1);
    return Dispatch<EyeTypes>(ctx, out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T one;
      if constexpr (std::is_same_v<T, bool>) one = true;
      else one = Narrow<T>(typename Arith<T>::type(1));
      T* dst = out.data<T>();
      std::fill(dst, dst + out.size(), T{});
      // Row r holds its one at column r + k, when that is inside the matrix.
      const int64_t first = k_ >= 0 ? 0 : k_ <= -rows ? rows : -k_;  // no -k_ for a k below -rows
      for (int64_t r = first; r < rows && k_ < cols - r; ++r) dst[r * cols + r + k_] = one;
    });
  }

 private:
  EyeLikeOp(DType dtype, int64_t k) : dtype_(dtype), k_(k) {}
  DType dtype_;
  int64_t k_;
};

// ---- DepthToSpace, SpaceToDepth ----

// Both move a blocksize x blocksize square of pixels between the channels and
// the spatial dims of an NCHW tensor. DepthToSpace's DCR mode (and
// SpaceToDepth) takes the channel as (i * b + j) * C' + c, CRD as c * b * b + i * b + j,
// for output channel c and pixel (i, j) of the block.
class BlockMoveOp : public Op {
 public:
  template <bool ToSpace>
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t b = node.attr_int("blocksize", 0);
    if (node.attr("blocksize") == nullptr) return AttributeError(node, "attribute 'blocksize' is required");
    if (b < 1) return AttributeError(node, absl::StrCat("blocksize must be >= 1, got ", b));
    const std::string mode = ToSpace && node.opset >= 11 ? node.attr_string("mode", "DCR") : "DCR";
    if (mode != "DCR" && mode != "CRD") return AttributeError(node, absl::StrCat("mode '", mode, "' is not DCR or CRD"));
    return std::unique_ptr<Op>(new BlockMoveOp(ToSpace, b, mode == "CRD"));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType out;
    out.dtype = in.dtype;
    if (in.dims) {
      if (in.rank() != 4) return ctx.Error(absl::StrCat("the input must be 4-D (NCHW), got ", in.ToString()));
      const std::vector<Dim>& d = *in.dims;
      out.dims = std::vector<Dim>{d[0], Dim{}, Dim{}, Dim{}};
      const std::optional<int64_t> square = CheckedMul(b_, b_);
      if (!square) return ctx.Error(absl::StrCat("blocksize ", b_, " is too large"));
      const int64_t bb = *square;
      if (to_space_) {
        if (d[1].known()) {
          if (d[1].value % bb != 0)
            return ctx.Error(absl::StrCat("channels ", d[1].value, " are not a multiple of blocksize^2 = ", bb));
          (*out.dims)[1] = Dim::Known(d[1].value / bb);
        }
        for (int k = 2; k < 4; ++k) {
          if (!d[size_t(k)].known()) continue;
          const std::optional<int64_t> m = CheckedMul(d[size_t(k)].value, b_);
          if (!m) return ctx.Error(absl::StrCat("dim ", k, " times blocksize ", b_, " overflows"));
          (*out.dims)[size_t(k)] = Dim::Known(*m);
        }
      } else {
        if (d[1].known()) {
          const std::optional<int64_t> m = CheckedMul(d[1].value, bb);
          if (!m) return ctx.Error(absl::StrCat("channels ", d[1].value, " times blocksize^2 overflow"));
          (*out.dims)[1] = Dim::Known(*m);
        }
        for (int k = 2; k < 4; ++k) {
          if (!d[size_t(k)].known()) continue;
          if (d[size_t(k)].value % b_ != 0)
            return ctx.Error(absl::StrCat("dim ", k, " of ", in.ToString(), " is not a multiple of blocksize ", b_));
          (*out.dims)[size_t(k)] = Dim::Known(d[size_t(k)].value / b_);
        }
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    // The space side: [N, C, H, W] with H, W the larger; the depth side has
    // C * b * b channels of h x w. A strided copy over the space's pixels
    // split as [N, C, h, i, w, j] (y = Y * b + i, x = X * b + j), which is the
    // space tensor's own layout; the depth tensor's strides for those dims
    // follow the mode.
    const Tensor& space = to_space_ ? out : in;
    const int64_t N = space.dim(0), C = space.dim(1), H = space.dim(2), W = space.dim(3), b = b_;
    const int64_t h = H / b, w = W / b, plane = h * w;
    const Shape shape = {N, C, h, b, w, b};
    const std::vector<int64_t> space_strides = {C * H * W, H * W, b * W, W, b, 1};
    const std::vector<int64_t> depth_strides =
        crd_ ? std::vector<int64_t>{C * b * b * plane, b * b * plane, w, b * plane, 1, plane}
             : std::vector<int64_t>{C * b * b * plane, plane, w, b * C * plane, 1, C * plane};
    if (to_space_) return CopyStrided(in.dtype(), shape, in.raw(), depth_strides, out.raw(), {}, ctx.threads());
    return CopyStrided(in.dtype(), shape, in.raw(), space_strides, out.raw(), depth_strides, ctx.threads());
  }

 private:
  BlockMoveOp(bool to_space, int64_t b, bool crd) : to_space_(to_space), b_(b), crd_(crd) {}
  bool to_space_;  // DepthToSpace
  int64_t b_;
  bool crd_;
};

// ---- ReverseSequence ----

class ReverseSequenceOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t batch = node.attr_int("batch_axis", 1), time = node.attr_int("time_axis", 0);
    if ((batch != 0 && batch != 1) || (time != 0 && time != 1) || batch == time)
      return AttributeError(node, absl::StrCat("batch_axis ", batch, " and time_axis ", time,
                                               " must be 0 and 1 in either order"));
    return std::unique_ptr<Op>(new ReverseSequenceOp(batch, time));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    const ValueType& lens = ctx.input(1);
    if (in.dims && in.rank() < 2) return ctx.Error(absl::StrCat("the input must have rank >= 2, got ", in.ToString()));
    if (lens.dims) {
      if (lens.rank() != 1) return ctx.Error(absl::StrCat("sequence_lens must be 1-D, got ", lens.ToString()));
      const Dim& n = (*lens.dims)[0];
      if (in.dims && n.known() && (*in.dims)[size_t(batch_)].known() && n.value != (*in.dims)[size_t(batch_)].value)
        return ctx.Error(absl::StrCat("sequence_lens ", lens.ToString(), " must have one entry per batch entry of ",
                                      in.ToString(), " (batch_axis ", batch_, ")"));
    }
    ctx.set_output(0, in);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    const Tensor& lens_t = *ctx.input(1);
    Tensor& out = ctx.output(0);
    const int64_t B = in.dim(batch_), T_len = in.dim(time_);
    const int64_t* lens = lens_t.data<int64_t>();
    for (int64_t b = 0; b < B; ++b)
      if (lens[b] < 0 || lens[b] > T_len)
        return ctx.Error(absl::StrCat("sequence_lens[", b, "] = ", lens[b], " is outside [0, ", T_len,
                                      "] (the time axis ", time_, ")"));
    if (out.size() == 0) return absl::OkStatus();
    const int64_t inner = ShapeProduct(in.shape(), 2, in.shape().size());
    // Strides of the batch and time axes in [d0, d1, inner].
    const int64_t s1 = inner, s0 = in.dim(1) * inner;
    const int64_t sb = batch_ == 0 ? s0 : s1, st = time_ == 0 ? s0 : s1;
    return Dispatch<AnyTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T_len; ++t) {
          const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
          for (int64_t e = 0; e < inner; ++e) dst[b * sb + t * st + e] = src[b * sb + from * st + e];
        }
    });
  }

 private:
  ReverseSequenceOp(int64_t batch, int64_t time) : batch_(batch), time_(time) {}
  int64_t batch_, time_;
};

// ---- CenterCropPad ----

struct ShiftPlan : OpPlan {
  std::vector<int64_t> shift;  // per dim: input coordinate = output coordinate + shift
};

class CenterCropPadOp : public Op {
 public:
  explicit CenterCropPadOp(const Node& node) : axes_(node.attr_ints("axes")), has_axes_(node.attr("axes") != nullptr) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType out;
    out.dtype = in.dtype;
    if (!in.dims) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    const int64_t rank = in.rank();
    std::vector<int64_t> axes = axes_;
    if (!has_axes_)
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t& a : axes) {
      ASSIGN_OR_RETURN(a, NormalizeAxis(ctx, a, rank, "axis"));
      if (seen[size_t(a)]) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
      seen[size_t(a)] = true;
    }
    out.dims = *in.dims;
    ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> shape, ShapeValues(ctx, 1, "shape"));
    if (!shape) {
      for (int64_t a : axes) (*out.dims)[size_t(a)] = Dim{};
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    if (shape->size() != axes.size())
      return ctx.Error(absl::StrCat("shape has ", shape->size(), " entries for ", axes.size(), " axes"));
    auto plan = std::make_shared<ShiftPlan>();
    plan->shift.assign(size_t(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t a = axes[i], target = (*shape)[i];
      if (target < 0) return ctx.Error(absl::StrCat("shape entries must be >= 0, got ", target, " for axis ", a));
      const Dim& n = (*in.dims)[size_t(a)];
      (*out.dims)[size_t(a)] = Dim::Known(target);
      // Crop: start at floor((n - target) / 2); pad: the extra pixel goes at the end.
      if (n.known()) plan->shift[size_t(a)] = n.value >= target ? (n.value - target) / 2 : -((target - n.value) / 2);
    }
    if (in.concrete_shape()) ctx.set_plan(std::move(plan));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const std::vector<int64_t>& shift = ctx.plan<ShiftPlan>().shift;
    const size_t rank = size_t(in.rank());
    const std::vector<int64_t> strides = RowMajorStrides(in.shape());
    return Dispatch<AnyTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      for (int64_t o = 0; o < out.size(); ++o) {
        int64_t rem = o, from = 0;
        bool inside = true;
        for (size_t d = rank; d-- > 0;) {
          const int64_t c = rem % out.dim(int64_t(d)) + shift[d];
          rem /= out.dim(int64_t(d));
          inside = inside && c >= 0 && c < in.dim(int64_t(d));
          from += c * strides[d];
        }
        dst[o] = inside ? src[from] : T{};
      }
    });
  }

 private:
  std::vector<int64_t> axes_;
  bool has_axes_;
};

// ---- Col2Im ----

// Col2Im sums overlapping patches: numbers, bool (or) and complex; there is
// no sum of strings.
using SummableTypes = Join<NumericTypes, TypeList<bool, Complex64, Complex128>>;

struct Col2ImPlan : OpPlan {
  Shape image, block, blocks;           // per spatial dim: the image, the kernel, the sliding positions
  std::vector<int64_t> strides, dilations, pad_begin;
  int64_t channels = 0;                 // C
};

class Col2ImOp : public Op {
 public:
  explicit Col2ImOp(const Node& node)
      : dilations_(node.attr_ints("dilations")), pads_(node.attr_ints("pads")), strides_(node.attr_ints("strides")) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& in = ctx.input(0);
    ValueType out;
    out.dtype = in.dtype;
    if (in.dims && in.rank() != 3)
      return ctx.Error(absl::StrCat("the input must be 3-D [N, C * prod(block_shape), L], got ", in.ToString()));
    ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> image, ShapeValues(ctx, 1, "image_shape"));
    ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> block, ShapeValues(ctx, 2, "block_shape"));
    const std::optional<Shape> shape = in.concrete_shape();
    if (!image || !block || !shape) {
      if (in.dims && image) {
        out.dims = std::vector<Dim>{(*in.dims)[0], Dim{}};
        for (int64_t v : *image) out.dims->push_back(v >= 0 ? Dim::Known(v) : Dim{});
      }
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    const size_t n = image->size();
    if (n < 1 || block->size() != n)
      return ctx.Error(absl::StrCat("image_shape and block_shape must have the same length >= 1, got ", n, " and ",
                                    block->size()));
    auto plan = std::make_shared<Col2ImPlan>();
    plan->image = *image;
    plan->block = *block;
    plan->strides = strides_.empty() ? std::vector<int64_t>(n, 1) : strides_;
    plan->dilations = dilations_.empty() ? std::vector<int64_t>(n, 1) : dilations_;
    std::vector<int64_t> pads = pads_.empty() ? std::vector<int64_t>(2 * n, 0) : pads_;
    if (plan->strides.size() != n || plan->dilations.size() != n || pads.size() != 2 * n)
      return ctx.Error(absl::StrCat("strides and dilations need ", n, " entries and pads ", 2 * n, ", got ",
                                    plan->strides.size(), ", ", plan->dilations.size(), " and ", pads.size()));
    int64_t kernel = 1, positions = 1;
    for (size_t d = 0; d < n; ++d) {
      const int64_t img = (*image)[d], k = (*block)[d], s = plan->strides[d], dil = plan->dilations[d];
      const int64_t pb = pads[d], pe = pads[d + n];
      if (img < 0 || k < 1 || s < 1 || dil < 1 || pb < 0 || pe < 0)
        return ctx.Error(absl::StrCat("dim ", d, ": image ", img, ", block ", k, ", stride ", s, ", dilation ", dil,
                                      ", pads ", pb, " and ", pe, " must be >= 0, >= 1, >= 1, >= 1 and >= 0"));
      // Sliding positions: (img + pads - dilation * (k - 1) - 1) / stride + 1. With
      // these sums in range, every coordinate the kernel forms is in range too.
      std::optional<int64_t> padded = CheckedAdd(img, pb), reach = CheckedMul(dil, k - 1);
      if (padded) padded = CheckedAdd(*padded, pe);
      if (!padded || !reach)
        return ctx.Error(absl::StrCat("dim ", d, ": the padded image or the dilated block overflows"));
      const int64_t span = *padded - *reach - 1;
      if (span < 0)
        return ctx.Error(absl::StrCat("dim ", d, ": the block of ", k, " (dilation ", dil,
                                      ") does not fit the padded image of ", img, " + ", pb, " + ", pe));
      const int64_t count = span / s + 1;
      std::optional<int64_t> kk = CheckedMul(kernel, k);
      std::optional<int64_t> pp = CheckedMul(positions, count);
      if (!kk || !pp) return ctx.Error("the block or position count overflows");
      kernel = *kk;
      positions = *pp;
      plan->blocks.push_back(count);
      plan->pad_begin.push_back(pb);
    }
    if ((*shape)[1] % kernel != 0)
      return ctx.Error(absl::StrCat("input dim 1 (", (*shape)[1], ") is not a multiple of prod(block_shape) = ", kernel));
    if ((*shape)[2] != positions)
      return ctx.Error(absl::StrCat("input dim 2 (", (*shape)[2], ") must be the number of sliding blocks, ", positions));
    plan->channels = (*shape)[1] / kernel;
    Shape dims = {(*shape)[0], plan->channels};
    dims.insert(dims.end(), image->begin(), image->end());
    out = ValueType::Of(in.dtype, dims);
    ctx.set_plan(std::move(plan));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const Col2ImPlan& p = ctx.plan<Col2ImPlan>();
    const size_t n = p.image.size();
    const int64_t kernel = ElementCount(p.block), positions = ElementCount(p.blocks), pixels = ElementCount(p.image);
    const int64_t planes = in.dim(0) * p.channels;
    return Dispatch<SummableTypes>(ctx, in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      std::fill(dst, dst + out.size(), T{});
      const std::vector<int64_t> image_strides = RowMajorStrides(p.image);
      std::vector<int64_t> kc(n);
      for (int64_t plane = 0; plane < planes; ++plane)
        for (int64_t k = 0; k < kernel; ++k) {
          // The kernel offset k and the sliding position pos as coordinates (last dim fastest).
          for (int64_t rem = k, d = int64_t(n); d-- > 0; rem /= p.block[size_t(d)]) kc[size_t(d)] = rem % p.block[size_t(d)];
          for (int64_t pos = 0; pos < positions; ++pos) {
            int64_t flat = 0;
            bool inside = true;
            for (int64_t rem = pos, d = int64_t(n); d-- > 0; rem /= p.blocks[size_t(d)]) {
              const size_t u = size_t(d);
              const int64_t x = (rem % p.blocks[u]) * p.strides[u] - p.pad_begin[u] + kc[u] * p.dilations[u];
              inside = inside && x >= 0 && x < p.image[u];
              flat += x * image_strides[u];
            }
            if (!inside) continue;
            T& o = dst[plane * pixels + flat];
            const T v = src[(plane * kernel + k) * positions + pos];
            if constexpr (std::is_same_v<T, bool>) o = o || v;
            else if constexpr (kIsArithmetic<T>) o = Narrow<T>(Sum(Widen(o), Widen(v)));
            else o = o + v;
          }
        }
    });
  }

 private:
  // Integer sums wrap modulo 2^bits (computed unsigned).
  template <class A>
  static A Sum(A x, A y) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
      return A(U(x) + U(y));
    } else {
      return x + y;
    }
  }

  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

std::vector<OpDef> RearrangeOps() {
  const TypeConstraint any = {"T", kAnyTypes};
  const TypeConstraint int64 = {"I", kInt64};
  return {
      {kOnnxDomain, "Tile", Versions{6}, "T I", "T", {any, int64}, MakeOp<TileOp>},
      {kOnnxDomain, "EyeLike", Versions{9}, "T1", "T2", {{"T1", EyeTypes::set()}, {"T2", EyeTypes::set()}},
       EyeLikeOp::Create},
      {kOnnxDomain, "DepthToSpace", Versions{1}, "T", "T", {any}, BlockMoveOp::Create<true>},
      {kOnnxDomain, "SpaceToDepth", Versions{1}, "T", "T", {any}, BlockMoveOp::Create<false>},
      {kOnnxDomain, "ReverseSequence", Versions{10}, "T I", "T", {any, int64}, ReverseSequenceOp::Create},
      {kOnnxDomain, "CenterCropPad", Versions{18}, "T Tind", "T", {any, {"Tind", kIndexTypes}},
       MakeOp<CenterCropPadOp>},
      {kOnnxDomain, "Col2Im", Versions{18}, "T I I", "T", {{"T", SummableTypes::set()}, int64}, MakeOp<Col2ImOp>},
  };
}

}  // namespace onnx_mini
