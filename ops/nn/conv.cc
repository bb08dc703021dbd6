// Conv (1, 11, 22), ConvTranspose (1, 11, 22), ConvInteger (10) and
// QLinearConv (10; ConvInteger's path, then requantized): 1-D to
// 3-D, groups, dilations, strides, pads and auto_pad. float and bfloat16 Conv
// and ConvTranspose run on oneDNN in the layouts it prefers (the primitive is kept
// in the plan, made on the first run for the session's thread count); every
// type also has the plain reference kernel, which accumulates 16-bit floats
// in float and ConvInteger in int32. onnx_mini::FusedConv (the rewrites of
// runtime/rewrite/conv.cc) is Conv with post-ops (activations, a residual
// Z) and channels-last X or Y; a float ConvTranspose whose windows do not
// overlap runs as one product (kernels/conv/conv_transpose.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "kernels/conv/conv_transpose.h"
#include "kernels/conv/depthwise.h"
#include "kernels/conv/direct.h"
#include "kernels/copy/copy.h"
#include "kernels/vec/elementwise.h"
#include "ops/ops.h"
#include "ops/nn/spatial.h"

namespace onnx_mini {
namespace {

// ConvInteger's input types.
using QuantTypes = TypeList<int8_t, uint8_t>;

// A convolution on fewer threads than oneDNN's team takes (ThreadsForWork
// with kMinOneDnnThreadWork) runs in parts of at least kConvPartWork
// multiply-adds (~8 us on one core), one per thread, on the pool
// (OneDnnConvSplit, or the direct kernel's tiles): when a worker is awake to
// take one, or when the conv is worth a wake (kConvWakeWork; the caller
// starts on the parts meanwhile) and the pool is not keeping its loops on the
// caller (PoolWillTake: a split no worker helps costs the parts' calls and
// channels-last copies for nothing). Smaller convs with no worker awake run
// whole: silero v4's and ocr_cls's convs of 1.2-1.6 M multiply-adds, split
// with a wake, ran 3-9% slower at 2 threads than at 1 (once a second thread
// exists glibc's malloc locks its arena and shared_ptr counts atomically).
// Waking a worker at a big conv for the convs after it instead came too late
// (it spins 100 us; oww_embedding's 24-channel convs take 120): 1.0 ms at 2
// threads against 0.85 splitting them.
constexpr double kConvPartWork = 512 * 1024;
constexpr double kConvWakeWork = 2 * 1024 * 1024;

// How many parts for the pool, by the rule above: 1 runs whole.
int ConvParts(KernelContext& ctx, double macs) {
  const double parts = std::min(double(ctx.threads()), std::floor(macs / kConvPartWork));
  if (parts < 2) return 1;
  const bool split = macs >= kConvWakeWork ? PoolWillTake(ctx.threads()) : PoolWillHelp(ctx.threads());
  return split ? int(parts) : 1;
}

// Depthwise convolutions below this many multiply-adds run our loop
// (kernels/conv/depthwise.h) whatever oneDNN picks: its call and reorders cost more.
constexpr double kOwnDepthwiseWork = 64 * 1024;

// A plan's splits, made on first use for each count of parts (nullptr: none).
class ConvSplits {
 public:
  template <class Make>
  std::shared_ptr<const OneDnnConvSplit> Get(int64_t parts, const Make& make) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [count, split] : made_)
      if (count == parts) return split;
    made_.emplace_back(parts, make());
    return made_.back().second;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<int64_t, std::shared_ptr<const OneDnnConvSplit>>> made_;
};

struct ConvPlan : OpPlan {
  Window w;
  int64_t n = 0, c = 0, m = 0, group = 1;  // batch, input and output channels, groups
  std::shared_ptr<const OneDnnForward> dnn;
  std::shared_ptr<ConvSplits> splits;  // the same conv in parts, for the pool's threads
  bool pixel = false;  // ConvTranspose without overlapping windows: kernels/conv/conv_transpose.h
  bool depthwise = false;  // float, group == C == M, 1-D or 2-D: kernels/conv/depthwise.h
  bool direct = false;     // float, group 1, 1-D or 2-D, channels last: kernels/conv/direct.h
  DirectConvProblem dp;
};

// Y[n, oc] = B[oc] + sum over the group's input channels and the kernel of X * W,
// accumulated in A.
template <class T, class A = typename Arith<T>::type>
void ConvReference(const ConvPlan& p, const T* x, const T* wt, const T* b, T* y, int threads) {
  const Window& w = p.w;
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  const int64_t in_sz = w.in_size(), out_sz = w.out_size(), k_sz = w.k_size();
  ParallelFor(threads, p.n * p.m, WorkPerIndex{double(out_sz * cg * k_sz)},
              [&](int64_t nm_begin, int64_t nm_end) { for (int64_t nm = nm_begin; nm < nm_end; ++nm) {
    const int64_t n = nm / p.m, oc = nm % p.m, g = oc / mg;
    const T* xg = x + (n * p.c + g * cg) * in_sz;
    const T* wo = wt + oc * cg * k_sz;
    T* yo = y + nm * out_sz;
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          A acc = b ? A(Widen(b[oc])) : A(0);
          for (int64_t c = 0; c < cg; ++c) {
            const T* xc = xg + c * in_sz;
            const T* wc = wo + c * k_sz;
            for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
              const int64_t i0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0];
              if (i0 < 0 || i0 >= w.in[0]) continue;
              for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
                const int64_t i1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
                if (i1 < 0 || i1 >= w.in[1]) continue;
                const T* xrow = xc + (i0 * w.in[1] + i1) * w.in[2];
                const T* wrow = wc + (k0 * w.k[1] + k1) * w.k[2];
                for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                  const int64_t i2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
                  if (i2 < 0 || i2 >= w.in[2]) continue;
                  acc += A(Widen(xrow[i2])) * A(Widen(wrow[k2]));
                }
              }
            }
          }
          yo[(o0 * w.out[1] + o1) * w.out[2] + o2] = Narrow<T>(typename Arith<T>::type(acc));
        }
  }});
}

// The transposed convolution scatters each input element through the kernel:
// Y[n, oc, i * s - pb + k * d] += X[n, ic, i] * W[ic, oc % (M/g), k]. Each
// output plane is owned by one thread.
template <class T>
void ConvTransposeReference(const ConvPlan& p, const T* x, const T* wt, const T* b, T* y, int threads) {
  using A = typename Arith<T>::type;
  const Window& w = p.w;
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  const int64_t in_sz = w.in_size(), out_sz = w.out_size(), k_sz = w.k_size();
  ParallelFor(threads, p.n * p.m, WorkPerIndex{double(in_sz * cg * k_sz)},
              [&](int64_t nm_begin, int64_t nm_end) { for (int64_t nm = nm_begin; nm < nm_end; ++nm) {
    const int64_t n = nm / p.m, oc = nm % p.m, g = oc / mg;
    std::vector<A> acc(size_t(out_sz), b ? A(Widen(b[oc])) : A(0));
    for (int64_t c = 0; c < cg; ++c) {
      const int64_t ic = g * cg + c;
      const T* xc = x + (n * p.c + ic) * in_sz;
      const T* wc = wt + (ic * mg + oc % mg) * k_sz;
      for (int64_t i0 = 0; i0 < w.in[0]; ++i0)
        for (int64_t i1 = 0; i1 < w.in[1]; ++i1)
          for (int64_t i2 = 0; i2 < w.in[2]; ++i2) {
            const A v = A(Widen(xc[(i0 * w.in[1] + i1) * w.in[2] + i2]));
            for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
              const int64_t o0 = i0 * w.s[0] - w.pb[0] + k0 * w.d[0];
              if (o0 < 0 || o0 >= w.out[0]) continue;
              for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
                const int64_t o1 = i1 * w.s[1] - w.pb[1] + k1 * w.d[1];
                if (o1 < 0 || o1 >= w.out[1]) continue;
                A* arow = acc.data() + (o0 * w.out[1] + o1) * w.out[2];
                const T* wrow = wc + (k0 * w.k[1] + k1) * w.k[2];
                for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                  const int64_t o2 = i2 * w.s[2] - w.pb[2] + k2 * w.d[2];
                  if (o2 < 0 || o2 >= w.out[2]) continue;
                  arow[o2] += v * A(Widen(wrow[k2]));
                }
              }
            }
          }
    }
    T* yo = y + nm * out_sz;
    for (int64_t e = 0; e < out_sz; ++e) yo[e] = Narrow<T>(acc[size_t(e)]);
  }});
}

enum class ConvKind { kConv, kTransposed, kInteger, kQLinear };

template <ConvKind kKind>
class ConvOp : public Op {
  static constexpr bool kTransposed = kKind == ConvKind::kTransposed;
  static constexpr bool kQLinear = kKind == ConvKind::kQLinear;
  static constexpr bool kInteger = kKind == ConvKind::kInteger || kQLinear;
  // QLinearConv's inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
  static constexpr size_t kW = kQLinear ? 3 : 1;

 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::make_unique<ConvOp>();
    ASSIGN_OR_RETURN(op->a_, WindowAttrs::Parse(node));
    op->group_ = node.attr_int("group", 1);
    if (op->group_ < 1 || op->group_ >= (int64_t(1) << 31))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": group ", op->group_, " must be positive"));
    op->output_padding_ = node.attr_ints("output_padding");
    op->output_shape_ = node.attr_ints("output_shape");
    if (node.domain == kInternalDomain) RETURN_IF_ERROR(op->ParsePostOps(node));
    for (const auto* v : {&op->output_padding_, &op->output_shape_})
      for (int64_t x : *v)
        if (x < 0 || x >= (int64_t(1) << 31))
          return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ",
                                                         v == &op->output_shape_ ? "output_shape" : "output_padding",
                                                         " value ", x, " must be in [0, 2^31)"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& wt = ctx.input(kW);
    ValueType out;
    out.dtype = kQLinear ? ctx.input(7).dtype : kInteger ? DType::kInt32 : x.dtype;
    const std::optional<Shape> xs = x.concrete_shape(), ws = wt.concrete_shape();
    if (x.dims && wt.dims) {
      if (x.rank() < 3 || wt.rank() != x.rank())
        return ctx.Error(absl::StrCat("X ", x.ToString(), " and W ", wt.ToString(),
                                      " must have one rank of at least 3 (N, C, spatial...)"));
      out.dims = std::vector<Dim>(size_t(x.rank()));
      (*out.dims)[0] = (*x.dims)[0];
      const Dim& wm = (*wt.dims)[kTransposed ? 1 : 0];
      if (wm.known()) (*out.dims)[1] = Dim::Known(kTransposed ? wm.value * group_ : wm.value);
    } else if (wt.dims && wt.rank() >= 3) {
      // X of unknown rank (an exporter's If(Squeeze | Identity) loses it): Y
      // has W's, so the layout rules (runtime/rewrite/conv.cc) still see a conv chain.
      out.dims = std::vector<Dim>(size_t(wt.rank()));
      const Dim& wm = (*wt.dims)[kTransposed ? 1 : 0];
      if (wm.known()) (*out.dims)[1] = Dim::Known(kTransposed ? wm.value * group_ : wm.value);
    }
    // FusedConv's channel means (output 1): (N, M, 1...).
    if (kKind == ConvKind::kConv && ctx.output_requested(1)) {
      ValueType means;
      means.dtype = out.dtype;
      if (out.dims) {
        means.dims = *out.dims;
        for (size_t i = 2; i < means.dims->size(); ++i) (*means.dims)[i] = Dim::Known(1);
      }
      ctx.set_output(1, means);
    }
    if (!xs || !ws) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    const int64_t rank = int64_t(xs->size()) - 2;
    const Shape kernel(ws->begin() + 2, ws->end());
    RETURN_IF_ERROR(CheckWindowAttrs(ctx, a_, rank, kernel));
    auto p = std::make_shared<ConvPlan>();
    p->n = (*xs)[0];
    p->c = (*xs)[1];
    p->group = group_;
    const std::string shapes = absl::StrCat("X ", ShapeToString(*xs), ", W ", ShapeToString(*ws), ", group ", group_);
    if (kTransposed) {
      // W is (C, M / group, k...).
      if ((*ws)[0] != p->c || p->c % group_ != 0)
        return ctx.Error(absl::StrCat("W's first dim must be X's channels, a multiple of group: ", shapes));
      if ((*ws)[1] > (int64_t(1) << 40) / group_) return ctx.Error(absl::StrCat("too many output channels: ", shapes));
      p->m = (*ws)[1] * group_;
      ASSIGN_OR_RETURN(p->w, TransposedWindow(ctx, *xs, kernel));
    } else {
      // W is (M, C / group, k...).
      p->m = (*ws)[0];
      if (p->c % group_ != 0 || (*ws)[1] != p->c / group_ || p->m % group_ != 0)
        return ctx.Error(
            absl::StrCat("X's channels must be W's second dim times group, and W's first a multiple of group: ", shapes));
      ASSIGN_OR_RETURN(p->w, ForwardWindow(ctx, a_, Shape(xs->begin() + 2, xs->end()), kernel));
    }
    if (kInteger) {
      // ConvInteger's zero points: one for X; one for W or one per output channel.
      // QLinearConv's scales too (and its y_scale and y_zero_point: one element).
      static constexpr const char* kInputNames[] = {"x", kQLinear ? "x_scale" : "w", "x_zero_point",
                                                    kQLinear ? "w" : "w_zero_point", "w_scale", "w_zero_point",
                                                    "y_scale", "y_zero_point"};
      const std::vector<size_t> per_tensor = kQLinear ? std::vector<size_t>{1, 2, 6, 7} : std::vector<size_t>{2};
      const std::vector<size_t> per_channel = kQLinear ? std::vector<size_t>{4, 5} : std::vector<size_t>{3};
      for (size_t i : {1, 2, 3, 4, 5, 6, 7}) {
        const bool channel = std::count(per_channel.begin(), per_channel.end(), i) > 0;
        if (!channel && !std::count(per_tensor.begin(), per_tensor.end(), i)) continue;
        const std::optional<Shape> zs = ctx.has_input(i) ? ctx.input(i).concrete_shape() : std::nullopt;
        const int64_t count = zs ? ElementCount(*zs) : 1;
        if (zs && zs->size() > 1) return ctx.Error("a zero point or scale must be a scalar or 1-D");
        if (count != 1 && !(channel && count == p->m))
          return ctx.Error(absl::StrCat(kInputNames[i], " ", ShapeToString(*zs),
                                        channel ? " must have one element or one per output channel" : " must have one element"));
      }
      if (kQLinear && ctx.has_input(8)) {
        const std::optional<Shape> bs = ctx.input(8).concrete_shape();
        if (bs && (bs->size() != 1 || (*bs)[0] != p->m))
          return ctx.Error(absl::StrCat("B ", ShapeToString(*bs), " must be (", p->m, ")"));
      }
    } else if (ctx.has_input(2)) {
      const std::optional<Shape> bs = ctx.input(2).concrete_shape();
      if (bs && (bs->size() != 1 || (*bs)[0] != p->m))
        return ctx.Error(absl::StrCat("B ", ShapeToString(*bs), " must be (", p->m, ")"));
    }
    Shape ys = {p->n, p->m};
    for (int64_t v : p->w.Spatial(p->w.out)) ys.push_back(v);
    if (ElementCount(ys) < 0) return ctx.Error(absl::StrCat("the output ", ShapeToString(ys), " is too large"));
    // FusedConv's residual: Y's shape exactly (the rewrite fuses no broadcast).
    if (kKind == ConvKind::kConv && ctx.num_inputs() > 3 && ctx.has_input(3)) {
      const std::optional<Shape> zs = ctx.input(3).concrete_shape();
      if (!zs || *zs != ys)
        return ctx.Error(
            absl::StrCat("the residual ", ctx.input(3).ToString(), " must have Y's shape ", ShapeToString(ys)));
    }
    if (kTransposed && x.dtype == DType::kFloat && group_ == 1) {
      p->pixel = true;
      for (int i = 0; i < kMaxSpatial; ++i)
        p->pixel = p->pixel && p->w.s[size_t(i)] == p->w.k[size_t(i)] && p->w.d[size_t(i)] == 1 &&
                   p->w.pb[size_t(i)] == 0 && p->w.pe[size_t(i)] == 0 &&
                   p->w.out[size_t(i)] == p->w.in[size_t(i)] * p->w.k[size_t(i)];
    }
    // FusedConv's channel scale S (input 4: X's channels scaled first, a
    // squeeze-excite's Mul): (N or 1, C, 1...).
    if (kKind == ConvKind::kConv && ctx.num_inputs() > 4 && ctx.has_input(4)) {
      const std::optional<Shape> ss = ctx.input(4).concrete_shape();
      bool ok = ss && ss->size() == xs->size() && ((*ss)[0] == 1 || (*ss)[0] == p->n) && (*ss)[1] == p->c;
      for (size_t i = 2; ok && i < ss->size(); ++i) ok = (*ss)[i] == 1;
      if (!ok)
        return ctx.Error(absl::StrCat("the channel scale ", ctx.input(4).ToString(), " must be (N or 1, ", p->c,
                                      ", 1...) for X ", ShapeToString(*xs)));
    }
    if (kKind == ConvKind::kConv && ctx.output_requested(1)) {
      Shape ms = {p->n, p->m};
      ms.resize(xs->size(), 1);
      ctx.set_output(1, ValueType::Of(out.dtype, ms));  // known now
    }
    if (kKind == ConvKind::kConv && x.dtype == DType::kFloat && group_ == p->c && p->m == p->c && rank <= 2 &&
        p->w.in_size() > 0 && p->w.out_size() > 0) {
      // A residual in NCHW under a channels-last Y is left to oneDNN (the
      // post-ops below run in Y's layout).
      const bool add = std::any_of(fusion_.post.begin(), fusion_.post.end(),
                                   [](const ConvPostOp& op) { return op.kind == ConvPostOp::kAdd; });
      p->depthwise = !(add && fusion_.dst_channels_last && !fusion_.residual_as_dst);
    }
    // (Infer runs before Prepare at creation: Compute checks for the packed weights.)
    if (kKind == ConvKind::kConv && x.dtype == DType::kFloat && group_ == 1 && rank <= 2 && DirectConvAvailable() &&
        p->w.in_size() > 0 && p->w.out_size() > 0) {
      DirectConvProblem& d = p->dp;
      d.n = p->n, d.c = p->c, d.m = p->m;
      for (size_t i = 0; i < 2; ++i) {
        const size_t j = size_t(kMaxSpatial) - 2 + i;
        d.in[i] = p->w.in[j], d.out[i] = p->w.out[j], d.k[i] = p->w.k[j];
        d.s[i] = p->w.s[j], d.d[i] = p->w.d[j], d.pb[i] = p->w.pb[j];
      }
      p->direct = true;
    }
    if (!kInteger)
      p->dnn = MakeOneDnnConv(x.dtype, p->w, p->n, p->c, p->m, group_, ctx.has_input(2), kTransposed, fusion_);
    if (!kInteger && !kTransposed && p->dnn) p->splits = std::make_shared<ConvSplits>();
    ctx.set_output(0, ValueType::Of(out.dtype, ys));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  // Constant weights: oneDNN keeps them reordered into its layout after the first run.
  absl::Status Prepare(PrepareContext& ctx) override {
    constant_weights_ = ctx.num_inputs() > 1 && ctx.constant(1) != nullptr;
    if (kKind == ConvKind::kConv && constant_weights_ && group_ == 1 && DirectConvAvailable()) PackDirect(ctx);
    // Constant W and B: their non-finite check (Compute's, for Clip and
    // HardSigmoid post-ops) made once here.
    for (size_t i = 1; i < 3 && i < ctx.num_inputs(); ++i) {
      const Tensor* t = ctx.constant(i);
      if (!t || (t->dtype() != DType::kFloat && t->dtype() != DType::kBFloat16)) continue;
      known_finite_[i] = t->dtype() == DType::kFloat ? !AnyNonFinite(t->data<float>(), t->size())
                                                      : !AnyNonFinite(t->data<BFloat16>(), t->size());
    }
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor* s = kKind == ConvKind::kConv && ctx.num_inputs() > 4 ? ctx.input(4) : nullptr;
    const bool means = kKind == ConvKind::kConv && ctx.num_outputs() > 1 && ctx.output_requested(1);
    if (!s && !means) return ComputeConv(ctx, *ctx.input(0));
    const ConvPlan& p = ctx.plan<ConvPlan>();
    const Tensor& x = *ctx.input(0);
    MemoryReservation reserved;
    std::vector<char> scaled;
    Tensor xs;
    if (s) {  // X * S, in X's layout, rounded to T as the Mul rounds it
      ASSIGN_OR_RETURN(reserved, ctx.Reserve(x.size(), StorageBytes(x.dtype(), 1), "the channel-scaled X"));
      scaled.resize(size_t(x.size()) * StorageBytes(x.dtype(), 1));
      xs = Tensor::Borrow(x.dtype(), x.shape(), scaled.data());
      RETURN_IF_ERROR(Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t plane = x.size() / std::max<int64_t>(1, p.n * p.c);
        const T* px = x.data<T>();
        const T* ps = s->data<T>();
        T* py = xs.data<T>();
        const bool last = fusion_.src_channels_last;
        using A = typename Arith<T>::type;
        for (int64_t n = 0; n < p.n; ++n) {
          const T* sn = ps + (s->size() == p.c ? 0 : n * p.c);
          const T* xn = px + n * p.c * plane;
          T* yn = py + n * p.c * plane;
          if (last)
            for (int64_t e = 0; e < plane; ++e)
              for (int64_t c = 0; c < p.c; ++c) yn[e * p.c + c] = Narrow<T>(A(Widen(xn[e * p.c + c]) * Widen(sn[c])));
          else
            for (int64_t c = 0; c < p.c; ++c)
              for (int64_t e = 0; e < plane; ++e) yn[c * plane + e] = Narrow<T>(A(Widen(xn[c * plane + e]) * Widen(sn[c])));
        }
      }));
    }
    RETURN_IF_ERROR(ComputeConv(ctx, s ? xs : x));
    if (!means) return absl::OkStatus();
    // Y's channel means, summed in double from Y's layout (GlobalAveragePool
    // sums in float lanes, then double: within the rounding of either).
    const Tensor& y = ctx.output(0);
    Tensor& g = ctx.output(1);
    return Dispatch<FloatTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t plane = y.size() / std::max<int64_t>(1, p.n * p.m);
      const T* py = y.data<T>();
      T* pg = g.data<T>();
      const bool last = fusion_.dst_channels_last;
      std::vector<double> sum(size_t(p.m));
      for (int64_t n = 0; n < p.n; ++n) {
        std::fill(sum.begin(), sum.end(), 0.0);
        const T* yn = py + n * p.m * plane;
        if (last)
          for (int64_t e = 0; e < plane; ++e)
            for (int64_t c = 0; c < p.m; ++c) sum[size_t(c)] += double(Widen(yn[e * p.m + c]));
        else
          for (int64_t c = 0; c < p.m; ++c)
            for (int64_t e = 0; e < plane; ++e) sum[size_t(c)] += double(Widen(yn[c * plane + e]));
        for (int64_t c = 0; c < p.m; ++c) pg[n * p.m + c] = Narrow<T>(typename Arith<T>::type(sum[size_t(c)] / double(plane)));
      }
    });
  }

  absl::Status ComputeConv(KernelContext& ctx, const Tensor& x) const {
    const Tensor& wt = *ctx.input(kW);
    const Tensor* b = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    const Tensor* z = kKind == ConvKind::kConv && ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
    Tensor& y = ctx.output(0);
    const ConvPlan& p = ctx.plan<ConvPlan>();
    if (y.size() == 0) return absl::OkStatus();
    if (kQLinear) return ComputeQLinear(ctx, p);
    if (kInteger) return ComputeInteger(ctx, p, ctx.output(0).data<int32_t>());
    const double macs = double(p.n) * double(p.m) * double(p.c / p.group) * double(p.w.k_size()) *
                        double(kTransposed ? p.w.in_size() : p.w.out_size());
    const int dnn_threads = ThreadsForWork(ctx.threads(), macs, kMinOneDnnThreadWork);
    if (kTransposed && p.pixel) {
      PixelDeconvProblem pp;
      pp.n = p.n;
      pp.c = p.c;
      pp.m = p.m;
      pp.in = p.w.in;
      pp.k = p.w.k;
      const int64_t scratch = p.m * p.w.k_size() * p.w.in_size();  // one image's output: fits
      ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(scratch, sizeof(float), "the transposed product"));
      std::vector<float> buffer(static_cast<size_t>(scratch));
      if (PixelDeconv(pp, x.data<float>(), wt.data<float>(), b ? b->data<float>() : nullptr, y.data<float>(),
                      buffer.data(), ctx.threads()))
        return absl::OkStatus();
    }
    const DirectWeights* direct = direct_weights_.get();
    if (p.direct && direct && direct->c == p.c && direct->m == p.m && direct->k == p.dp.k &&
        direct->adds == (z != nullptr))
      return ComputeDirect(ctx, p, *direct, x, b, z, y, ConvParts(ctx, macs) >= 2 ? ctx.threads() : 1);
    // oneDNN's clip takes a NaN to its lower bound; Clip, Max and Min as
    // written keep it (HardSigmoid gives 1): a NaN or infinity among the
    // inputs runs the reference.
    bool non_finite = false;
    if (p.dnn && std::any_of(fusion_.post.begin(), fusion_.post.end(), [](const ConvPostOp& op) {
          return op.kind == ConvPostOp::kClip || op.kind == ConvPostOp::kHardSigmoid;
        }))
      RETURN_IF_ERROR(Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const Tensor* inputs[4] = {&x, &wt, b, z};
        for (size_t i = 0; i < 4; ++i)
          if (inputs[i] && !known_finite_[i] && !non_finite)
            non_finite = AnyNonFinite(inputs[i]->data<T>(), inputs[i]->size());
      }));
    // Depthwise: our loop when small (oneDNN's jit took 13-30 us for silero's
    // 31k multiply-adds at 258 channels channels last, our loop ~1) or when
    // oneDNN has no jit for it (its gemm and ref are 50-400x slower here).
    if (p.depthwise && (macs < kOwnDepthwiseWork || !p.dnn || SlowImpl(p.dnn->Impl(dnn_threads))))
      return ComputeDepthwise(ctx, p, x, wt, b, z, y);
    // One part per thread, each costing a primitive's call (some us).
    const int parts = dnn_threads == 1 && p.splits && !non_finite ? ConvParts(ctx, macs) : 1;
    if (parts >= 2) {
      const std::shared_ptr<const OneDnnConvSplit> split = p.splits->Get(parts, [&] {
        return MakeOneDnnConvSplit(x.dtype(), p.w, p.n, p.c, p.m, p.group, b != nullptr, fusion_, parts,
                                   p.dnn->Impl(1));
      });
      if (split && split->Run(x.raw(), wt.raw(), b ? b->raw() : nullptr, y.raw(), ctx.threads(), constant_weights_,
                              ctx.budget(), z ? z->raw() : nullptr))
        return absl::OkStatus();
    }
    if (p.dnn && !non_finite &&
        p.dnn->Run(x.raw(), wt.raw(), b ? b->raw() : nullptr, y.raw(), dnn_threads, constant_weights_, ctx.budget(),
                   z ? z->raw() : nullptr))
      return absl::OkStatus();
    // Channels-last X or Y (a FusedConv between convolutions): the reference
    // runs on NCHW copies.
    const bool src_cl = fusion_.src_channels_last, dst_cl = fusion_.dst_channels_last;
    const bool z_cl = fusion_.residual_as_dst && z;
    ASSIGN_OR_RETURN(MemoryReservation reserved,
                     ctx.Reserve((src_cl ? x.size() : 0) + (dst_cl ? y.size() : 0) + (z_cl ? y.size() : 0),
                                 StorageBytes(x.dtype(), 1), "NCHW copies of channels-last values"));
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pb = b ? b->data<T>() : nullptr;
      std::vector<T> x_nchw(src_cl ? size_t(x.size()) : 0), y_nchw(dst_cl ? size_t(y.size()) : 0);
      if (src_cl) ChannelsLast(x.data<T>(), x_nchw.data(), p.n, p.c, x.size() / std::max<int64_t>(1, p.n * p.c), false);
      const T* px = src_cl ? x_nchw.data() : x.data<T>();
      T* py = dst_cl ? y_nchw.data() : y.data<T>();
      if (kTransposed) ConvTransposeReference(p, px, wt.data<T>(), pb, py, ctx.threads());
      else ConvReference(p, px, wt.data<T>(), pb, py, ctx.threads());
      const std::vector<ConvPostOp>& post_ = fusion_.post;
      // The post-ops one by one, each result rounded to T as the unfused ops round it.
      if (!post_.empty()) {
        std::vector<T> z_nchw(z_cl ? size_t(z->size()) : 0);
        if (z_cl) ChannelsLast(z->data<T>(), z_nchw.data(), p.n, p.m, z->size() / std::max<int64_t>(1, p.n * p.m), false);
        const T* pz = z_cl ? z_nchw.data() : z ? z->data<T>() : nullptr;
        ParallelFor(ctx.threads(), y.size(), WorkPerIndex{double(4 * post_.size())}, [&](int64_t begin, int64_t end) {
          for (int64_t e = begin; e < end; ++e) {
            T v = py[e];
            for (const ConvPostOp& op : post_) {
              const double w = double(Widen(v));
              v = Narrow<T>(typename Arith<T>::type(op.kind == ConvPostOp::kAdd ? w + double(Widen(pz[e])) : op.Apply(w)));
            }
            py[e] = v;
          }
        });
      }
      if (dst_cl) ChannelsLast(py, y.data<T>(), p.n, p.m, y.size() / std::max<int64_t>(1, p.n * p.m), true);
    });
  }

 private:
  // The weights packed for kernels/conv/direct.h, with the post-ops in its
  // terms: made by Prepare (AVX2 hosts) for a constant float W whose shape
  // the kernel suits and post-ops it has; Compute then runs the kernel where
  // Infer planned it (any layouts: NCHW sides through copies).
  struct DirectWeights {
    int64_t c = 0, m = 0;
    std::array<int64_t, 2> k{1, 1};
    std::vector<float> packed;
    std::vector<DirectConvOp> ops;
    bool adds = false;  // one of the ops adds Z
    MemoryReservation charge;
  };

  void PackDirect(PrepareContext& ctx) {
    const Tensor& w = *ctx.constant(1);
    const size_t rank = w.shape().size();
    if (w.dtype() != DType::kFloat || (rank != 3 && rank != 4)) return;
    auto d = std::make_shared<DirectWeights>();
    for (const ConvPostOp& op : fusion_.post) {
      DirectConvOp o;
      o.alpha = op.alpha, o.beta = op.beta;
      switch (op.kind) {
        case ConvPostOp::kRelu: o.kind = DirectConvOp::kRelu; break;
        case ConvPostOp::kLeakyRelu: o.kind = DirectConvOp::kLeakyRelu; break;
        case ConvPostOp::kClip: o.kind = DirectConvOp::kClip; break;
        case ConvPostOp::kLinear: o.kind = DirectConvOp::kLinear; break;
        case ConvPostOp::kAdd: o.kind = DirectConvOp::kAdd, d->adds = true; break;
        default: return;  // an activation the kernel does not have: oneDNN
      }
      d->ops.push_back(o);
    }
    DirectConvProblem shape;
    shape.m = d->m = w.shape()[0];
    shape.c = d->c = w.shape()[1];
    shape.k = d->k = {rank == 4 ? w.shape()[2] : 1, w.shape()[rank - 1]};
    const int64_t size = DirectConvPackedSize(shape);
    if (!DirectConvSuits(shape) || size < 0) return;
    d->charge = MemoryReservation(ctx.budget());
    if (!d->charge.Grow(size, sizeof(float), "the convolution's packed weights").ok()) return;
    d->packed.resize(size_t(size));
    DirectConvPack(shape, w.data<float>(), d->packed.data());
    direct_weights_ = std::move(d);
  }

  // Which of X, Y and Z the direct kernel reads or writes through a
  // channels-last copy: those in NCHW, unless NCHW's bytes are the same (one
  // channel, or one pixel). Z is in Y's layout, or NCHW.
  struct DirectCopies {
    bool x = false, y = false, z = false;
  };
  DirectCopies DirectCopiesFor(const ConvPlan& p, bool has_z) const {
    DirectCopies copies;
    const bool y_same = p.m == 1 || p.w.out_size() == 1;
    copies.x = !fusion_.src_channels_last && p.c > 1 && p.w.in_size() > 1;
    copies.y = !fusion_.dst_channels_last && !y_same;
    copies.z = has_z && !fusion_.residual_as_dst && !y_same;
    return copies;
  }

  // The direct kernel over channels-last X, Y and Z, through copies for
  // those in NCHW, on `threads` threads.
  absl::Status ComputeDirect(KernelContext& ctx, const ConvPlan& p, const DirectWeights& direct, const Tensor& x,
                             const Tensor* b, const Tensor* z, Tensor& y, int threads) const {
    const DirectCopies copies = DirectCopiesFor(p, z != nullptr);
    const int64_t in_plane = p.w.in_size(), out_plane = p.w.out_size();
    ASSIGN_OR_RETURN(MemoryReservation reserved,
                     ctx.Reserve((copies.x ? x.size() : 0) + (copies.y ? y.size() : 0) + (copies.z ? y.size() : 0),
                                 sizeof(float), "channels-last copies for the convolution"));
    std::vector<float> x_last(copies.x ? size_t(x.size()) : 0), y_last(copies.y ? size_t(y.size()) : 0),
        z_last(copies.z ? size_t(y.size()) : 0);
    // (n, C, plane) <-> (n, plane, C): a transposed copy per image.
    auto to_last = [&](const float* from, float* to, int64_t c, int64_t plane) {
      return CopyStrided(DType::kFloat, {p.n, plane, c}, from, {c * plane, 1, plane}, to, {plane * c, c, 1},
                         ctx.threads());
    };
    if (copies.x) RETURN_IF_ERROR(to_last(x.data<float>(), x_last.data(), p.c, in_plane));
    if (copies.z) RETURN_IF_ERROR(to_last(z->data<float>(), z_last.data(), p.m, out_plane));
    float* py = copies.y ? y_last.data() : y.data<float>();
    DirectConv(p.dp, copies.x ? x_last.data() : x.data<float>(), direct.packed.data(),
               b ? b->data<float>() : nullptr, !z ? nullptr : copies.z ? z_last.data() : z->data<float>(), direct.ops,
               py, threads);
    if (copies.y)
      RETURN_IF_ERROR(CopyStrided(DType::kFloat, {p.n, p.m, out_plane}, py, {out_plane * p.m, 1, p.m},
                                  y.data<float>(), {p.m * out_plane, out_plane, 1}, ctx.threads()));
    return absl::OkStatus();
  }

  static bool SlowImpl(const std::string& impl) {
    return impl.empty() || impl.rfind("ref", 0) == 0 || impl.rfind("gemm", 0) == 0;
  }

  // Depthwise float conv in the fusion's layouts, then the post-ops one by
  // one in Y's layout (the residual is then in Y's layout too: Infer checks).
  absl::Status ComputeDepthwise(KernelContext& ctx, const ConvPlan& p, const Tensor& x, const Tensor& wt,
                                const Tensor* b, const Tensor* z, Tensor& y) const {
    DepthwiseProblem dp;
    dp.n = p.n;
    dp.c = p.c;
    for (size_t i = 0; i < 2; ++i) {
      const size_t j = size_t(kMaxSpatial) - 2 + i;
      dp.in[i] = p.w.in[j];
      dp.out[i] = p.w.out[j];
      dp.k[i] = p.w.k[j];
      dp.s[i] = p.w.s[j];
      dp.d[i] = p.w.d[j];
      dp.pb[i] = p.w.pb[j];
    }
    dp.src_channels_last = fusion_.src_channels_last;
    dp.dst_channels_last = fusion_.dst_channels_last;
    float* py = y.data<float>();
    const int64_t scratch = DepthwiseScratch(dp);
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(scratch, sizeof(float), "the depthwise conv's channels-last copy"));
    std::vector<float> buffer(static_cast<size_t>(scratch));
    DepthwiseConv(dp, x.data<float>(), wt.data<float>(), b ? b->data<float>() : nullptr, py, buffer.data(),
                  ctx.threads());
    const std::vector<ConvPostOp>& post = fusion_.post;
    if (post.empty()) return absl::OkStatus();
    const float* pz = z ? z->data<float>() : nullptr;
    // One op at a time over the range: Relu and Add as float loops (a float
    // sum rounds as the double one narrowed; Relu keeps NaN as Relu does).
    ParallelFor(ctx.threads(), y.size(), WorkPerIndex{double(4 * post.size())}, [&](int64_t begin, int64_t end) {
      for (const ConvPostOp& op : post) {
        if (op.kind == ConvPostOp::kRelu)
          for (int64_t e = begin; e < end; ++e) py[e] = py[e] < 0.f ? 0.f : py[e];
        else if (op.kind == ConvPostOp::kAdd)
          for (int64_t e = begin; e < end; ++e) py[e] += pz[e];
        else
          for (int64_t e = begin; e < end; ++e) py[e] = float(op.Apply(double(py[e])));
      }
    });
    return absl::OkStatus();
  }

  // ConvInteger: X and W less their zero points, widened to int32, through
  // the reference convolution (int32 accumulation).
  absl::Status ComputeInteger(KernelContext& ctx, const ConvPlan& p, int32_t* y) const {
    const Tensor& x = *ctx.input(0);
    const Tensor& wt = *ctx.input(kW);
    const Tensor* xz = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    const Tensor* wz = ctx.num_inputs() > kW + 2 ? ctx.input(kW + 2) : nullptr;
    ASSIGN_OR_RETURN(MemoryReservation reserved,
                     ctx.Reserve(x.size() + wt.size(), sizeof(int32_t), "X and W less their zero points"));
    std::vector<int32_t> xq(size_t(x.size())), wq(size_t(wt.size()));
    RETURN_IF_ERROR(Dispatch<QuantTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int32_t zero = xz ? int32_t(xz->data<T>()[0]) : 0;
      for (int64_t i = 0; i < x.size(); ++i) xq[size_t(i)] = int32_t(x.data<T>()[i]) - zero;
    }));
    RETURN_IF_ERROR(Dispatch<QuantTypes>(ctx, wt.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t per_channel = wt.size() / std::max<int64_t>(1, p.m);
      for (int64_t i = 0; i < wt.size(); ++i) {
        const int32_t zero = !wz ? 0 : wz->size() == 1 ? int32_t(wz->data<T>()[0]) : int32_t(wz->data<T>()[i / per_channel]);
        wq[size_t(i)] = int32_t(wt.data<T>()[i]) - zero;
      }
    }));
    // Summed in int64 (no overflow to trap on), kept modulo 2^32 as int32.
    const Tensor* bias = kQLinear && ctx.num_inputs() > 8 ? ctx.input(8) : nullptr;
    ConvReference<int32_t, int64_t>(p, xq.data(), wq.data(), bias ? bias->data<int32_t>() : nullptr, y, ctx.threads());
    return absl::OkStatus();
  }

  // QLinearConv: the int32 convolution (with B), then y = saturate(round(acc *
  // x_scale * w_scale / y_scale) + y_zero_point), the multiplier in float and
  // the product in double, as ONNX's reference does.
  absl::Status ComputeQLinear(KernelContext& ctx, const ConvPlan& p) const {
    Tensor& y = ctx.output(0);
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(y.size(), sizeof(int32_t), "the int32 accumulators"));
    std::vector<int32_t> acc(size_t(y.size()));
    RETURN_IF_ERROR(ComputeInteger(ctx, p, acc.data()));
    const Tensor& ws = *ctx.input(4);
    const float xs = ctx.input(1)->data<float>()[0], ys = ctx.input(6)->data<float>()[0];
    return Dispatch<QuantTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const double zero = double(ctx.input(7)->data<T>()[0]);
      const double lo = double(std::numeric_limits<T>::min()), hi = double(std::numeric_limits<T>::max());
      const int64_t plane = y.size() / std::max<int64_t>(1, p.n * p.m);
      T* py = y.data<T>();
      for (int64_t e = 0; e < y.size(); ++e) {
        const int64_t oc = (e / plane) % p.m;
        const double mult = double(xs * ws.data<float>()[ws.size() == 1 ? 0 : oc] / ys);
        const double v = std::nearbyint(double(acc[size_t(e)]) * mult + zero);
        py[e] = T(std::isnan(v) ? zero : std::min(hi, std::max(lo, v)));
      }
    });
  }

  // ConvTranspose's output: s * (in - 1) + output_padding + (k - 1) * d + 1
  // less the pads, or output_shape (or in * s for SAME) with the pads it
  // implies. The window keeps output_padding in its end pad, which may go
  // negative: the positions past the last tap hold the bias alone.
  absl::StatusOr<Window> TransposedWindow(const InferContext& ctx, const Shape& xs, const Shape& kernel) const {
    Window w;
    w.rank = int(xs.size()) - 2;
    const size_t rank = size_t(w.rank);
    if (!output_padding_.empty() && output_padding_.size() != rank)
      return ctx.Error(absl::StrCat("output_padding has ", output_padding_.size(), " values for ", rank, " spatial dims"));
    if (!output_shape_.empty() && output_shape_.size() != rank && output_shape_.size() != rank + 2)
      return ctx.Error(absl::StrCat("output_shape has ", output_shape_.size(), " values for ", rank, " spatial dims"));
    const bool same = a_.auto_pad == "SAME_UPPER" || a_.auto_pad == "SAME_LOWER";
    for (size_t i = 0; i < rank; ++i) {
      const size_t j = size_t(kMaxSpatial) - rank + i;
      const int64_t in = xs[2 + i];
      w.in[j] = in;
      w.k[j] = kernel[i];
      w.s[j] = a_.strides.empty() ? 1 : a_.strides[i];
      w.d[j] = a_.dilations.empty() ? 1 : a_.dilations[i];
      const int64_t op = output_padding_.empty() ? 0 : output_padding_[i];
      if (op >= std::max(w.s[j], w.d[j]))
        return ctx.Error(absl::StrCat("output_padding ", op, " must be less than the stride ", w.s[j],
                                      " or the dilation ", w.d[j], " in spatial dim ", i));
      if (in > (int64_t(1) << 40) / w.s[j]) return ctx.Error(absl::StrCat("the output is too large in spatial dim ", i));
      const int64_t full = w.s[j] * (in - 1) + op + (w.k[j] - 1) * w.d[j] + 1;
      int64_t pb = 0, pe = 0;
      if (!output_shape_.empty() || same) {
        const int64_t out = !output_shape_.empty() ? output_shape_[output_shape_.size() - rank + i] : in * w.s[j];
        const int64_t total = full - out;
        // ONNX halves the total with floor division: SAME_UPPER puts the odd
        // pad at the end, otherwise at the beginning; a negative total (an
        // output_shape beyond the full output) leaves its extra at the end.
        const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
        pb = a_.auto_pad == "SAME_UPPER" ? half : total - half;
        pe = total - pb;
      } else if (a_.auto_pad == "NOTSET" && !a_.pads.empty()) {
        pb = a_.pads[i];
        pe = a_.pads[i + rank];
      }
      w.out[j] = full - pb - pe;
      if (w.out[j] < 0)
        return ctx.Error(absl::StrCat("the pads ", pb, " + ", pe, " exceed the full output ", full, " in spatial dim ", i));
      w.pb[j] = pb;
      w.pe[j] = pe - op;
    }
    return w;
  }

  // Whether any of the n values is NaN or infinite. float: kernels/vec
  // (integer compares on the exponent, a build per target); the others: v * 0
  // is then NaN, else 0 (summed in 8 lanes).
  static bool AnyNonFinite(const float* v, int64_t n) { return VecAnyNonFinite(v, n); }
  template <class T>
  static bool AnyNonFinite(const T* v, int64_t n) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) lane[l] += float(Widen(v[i + l])) * 0.f;
    for (; i < n; ++i) lane[0] += float(Widen(v[i])) * 0.f;
    float sum = 0;
    for (float s : lane) sum += s;
    return sum != 0 || std::isnan(sum);
  }

  // Copies n images of c channels of `plane` elements from NCHW to channels
  // last (N, plane, C), or back when !to_last.
  template <class T>
  static void ChannelsLast(const T* from, T* to, int64_t n, int64_t c, int64_t plane, bool to_last) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t e = 0; e < plane; ++e) {
          const int64_t nchw = (i * c + ch) * plane + e, last = (i * plane + e) * c + ch;
          if (to_last) to[last] = from[nchw];
          else to[nchw] = from[last];
        }
  }

  // FusedConv's post-ops: `activations` (names), `alphas` and `betas`, one
  // per entry; `channels_last`: X's, Y's and (optional) Z's layouts (0 NCHW,
  // 1 channels last).
  absl::Status ParsePostOps(const Node& node) {
    const std::vector<int64_t> layout = node.attr_ints("channels_last");
    if (!layout.empty()) {
      // Z channels last only with Y so: the sum post-op adds it in Y's layout.
      if ((layout.size() != 2 && layout.size() != 3) ||
          std::any_of(layout.begin(), layout.end(), [](int64_t f) { return f != 0 && f != 1; }) ||
          (layout.size() == 3 && layout[2] == 1 && layout[1] != 1))
        return absl::InvalidArgumentError(absl::StrCat(
            node.Describe(), ": channels_last must be two or three flags (X, Y, Z), Z's only with Y's"));
      fusion_.src_channels_last = layout[0] == 1;
      fusion_.dst_channels_last = layout[1] == 1;
      fusion_.residual_as_dst = layout.size() == 3 && layout[2] == 1;
    }
    std::vector<ConvPostOp>& post_ = fusion_.post;
    const Attribute* names = node.attr("activations");
    const Attribute* alphas = node.attr("alphas");
    const Attribute* betas = node.attr("betas");
    const size_t count = names ? names->strings.size() : 0;
    if ((alphas ? alphas->floats.size() : 0) != count || (betas ? betas->floats.size() : 0) != count)
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": activations, alphas and betas must have one entry each"));
    int adds = 0;
    for (size_t i = 0; i < count; ++i) {
      ConvPostOp op;
      if (!ConvPostOp::Parse(names->strings[i], op.kind))
        return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": unknown activation '", names->strings[i], "'"));
      op.alpha = alphas->floats[i];
      op.beta = betas->floats[i];
      adds += op.kind == ConvPostOp::kAdd;
      post_.push_back(op);
    }
    if (adds != (node.has_input(3) ? 1 : 0))
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": the residual input Z needs exactly one 'Add' in activations (", adds, ")"));
    return absl::OkStatus();
  }

  WindowAttrs a_;
  int64_t group_ = 1;
  ConvFusion fusion_;
  std::vector<int64_t> output_padding_, output_shape_;
  bool constant_weights_ = false;  // set by Prepare
  std::shared_ptr<const DirectWeights> direct_weights_;  // set by Prepare
  bool known_finite_[4] = {false, false, false, false};  // constant inputs found finite by Prepare
};

}  // namespace

std::vector<OpDef> ConvOps() {
  const std::vector<TypeConstraint> t = {{"T", kFloatTypes}};
  return {
      {kOnnxDomain, "Conv", Versions{1}, "T T T?", "T", t, ConvOp<ConvKind::kConv>::Create},
      {kOnnxDomain, "ConvTranspose", Versions{1}, "T T T?", "T", t, ConvOp<ConvKind::kTransposed>::Create},
      // Conv with post-ops (runtime/rewrite/conv.cc): X, W, B, the residual Z, a channel scale S of X;
      // Y and its channel means.
      {kInternalDomain, "FusedConv", Versions{1}, "T T T? T? T?", "T T?", t, ConvOp<ConvKind::kConv>::Create},
      {kOnnxDomain, "ConvInteger", Versions{10}, "T1 T2 T1? T2?", "T3",
       {{"T1", QuantTypes::set()}, {"T2", QuantTypes::set()}, {"T3", {DType::kInt32}}},
       ConvOp<ConvKind::kInteger>::Create},
      {kOnnxDomain, "QLinearConv", Versions{10}, "T1 S T1 T2 S T2 S T3 T4?", "T3",
       {{"T1", QuantTypes::set()}, {"T2", QuantTypes::set()}, {"T3", QuantTypes::set()}, {"S", {DType::kFloat}},
        {"T4", {DType::kInt32}}},
       ConvOp<ConvKind::kQLinear>::Create},
  };
}

}  // namespace onnx_mini
