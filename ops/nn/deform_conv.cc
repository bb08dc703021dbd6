// DeformConv (19, 22): a convolution whose every kernel tap reads the input at
// its own learned position, the regular tap position plus an offset given per
// (offset group, tap, spatial dim, output position), sampled by multilinear
// interpolation (zero outside the input) and scaled by an optional mask. 1-D
// to 3-D. Every float type has the plain reference kernel (16-bit floats
// accumulate in float); float also has the fast path: the sampled taps of
// one (batch, group) go into a column buffer (im2col) that one oneDNN matrix
// product multiplies by the group's weights.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/gemm/onednn.h"
#include "ops/ops.h"
#include "ops/nn/spatial.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

// The largest column buffer (elements) the fast path allocates; larger
// cases run the reference kernel, which needs no buffer.
constexpr int64_t kMaxColumnElements = int64_t(1) << 25;

struct DeformPlan : OpPlan {
  Window w;
  int64_t n = 0, c = 0, m = 0, group = 1, offset_group = 1;  // batch, channels in and out, groups
  int64_t columns = 0;  // column buffer elements per (batch, group); 0: no fast path
};

// The input plane `xc` (w.in) sampled at `pos` (one coordinate per window
// dim): the multilinear blend of the up to 8 neighbouring elements, those
// outside the input counting as zero. A position wholly outside (or NaN)
// gives 0. The leading dims of a 1-D or 2-D window sit at integer 0.
template <class T, class A>
A Sample(const T* xc, const Window& w, const A* pos) {
  int64_t lo[kMaxSpatial];
  A frac[kMaxSpatial];
  for (int j = 0; j < kMaxSpatial; ++j) {
    const A fl = std::floor(pos[j]);
    if (!(fl > A(-2) && fl < A(w.in[j]))) return A(0);  // both neighbours outside; also bounds the cast
    lo[j] = int64_t(fl);
    frac[j] = pos[j] - fl;
  }
  A sum = A(0);
  for (int c0 = 0; c0 < (frac[0] != A(0) ? 2 : 1); ++c0) {
    const int64_t i0 = lo[0] + c0;
    if (i0 < 0 || i0 >= w.in[0]) continue;
    const A w0 = c0 ? frac[0] : A(1) - frac[0];
    for (int c1 = 0; c1 < (frac[1] != A(0) ? 2 : 1); ++c1) {
      const int64_t i1 = lo[1] + c1;
      if (i1 < 0 || i1 >= w.in[1]) continue;
      const A w1 = w0 * (c1 ? frac[1] : A(1) - frac[1]);
      const T* row = xc + (i0 * w.in[1] + i1) * w.in[2];
      for (int c2 = 0; c2 < (frac[2] != A(0) ? 2 : 1); ++c2) {
        const int64_t i2 = lo[2] + c2;
        if (i2 < 0 || i2 >= w.in[2]) continue;
        sum += w1 * (c2 ? frac[2] : A(1) - frac[2]) * A(Widen(row[i2]));
      }
    }
  }
  return sum;
}

// The tap `kk` (flat over the kernel) of input channel `ic` of batch `n` at
// output position `o` (flat over the output): the input sampled at the tap's
// deformed position, times its mask. offset is (N, og * K * rank, out...)
// with each tap's `rank` coordinates together; mask is (N, og * K, out...).
template <class T, class A>
A Tap(const DeformPlan& p, const T* x, const T* offset, const T* mask, int64_t n, int64_t ic, int64_t kk, int64_t o) {
  const Window& w = p.w;
  const int64_t k_sz = w.k_size(), out_sz = w.out_size(), rank = w.rank;
  const int64_t og = ic / (p.c / p.offset_group);
  const int64_t tap = (n * p.offset_group + og) * k_sz + kk;  // the mask's channel, counting from batch 0
  const int64_t ko[kMaxSpatial] = {kk / (w.k[1] * w.k[2]), kk / w.k[2] % w.k[1], kk % w.k[2]};
  const int64_t oo[kMaxSpatial] = {o / (w.out[1] * w.out[2]), o / w.out[2] % w.out[1], o % w.out[2]};
  A pos[kMaxSpatial];
  for (int j = 0; j < kMaxSpatial; ++j) {
    pos[j] = A(oo[j] * w.s[j] - w.pb[j] + ko[j] * w.d[j]);
    const int64_t d = j - (kMaxSpatial - rank);  // the node's spatial dim, negative for a leading one
    if (d >= 0) pos[j] += A(Widen(offset[(tap * rank + d) * out_sz + o]));
  }
  A v = Sample<T, A>(x + (n * p.c + ic) * w.in_size(), w, pos);
  if (mask) v *= A(Widen(mask[tap * out_sz + o]));
  return v;
}

// Y[n, oc, o] = B[oc] + sum over the group's channels c and the taps kk of
// W[oc, c, kk] * Tap(n, c, kk, o), by its definition.
template <class T>
void DeformConvReference(const DeformPlan& p, const T* x, const T* wt, const T* offset, const T* b, const T* mask,
                         T* y, int threads) {
  using A = typename Arith<T>::type;
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  const int64_t out_sz = p.w.out_size(), k_sz = p.w.k_size();
  ParallelFor(threads, p.n * p.m, WorkPerIndex{4.0 * double(out_sz * cg * k_sz)},
              [&](int64_t nm_begin, int64_t nm_end) { for (int64_t nm = nm_begin; nm < nm_end; ++nm) {
    const int64_t n = nm / p.m, oc = nm % p.m, g = oc / mg;
    for (int64_t o = 0; o < out_sz; ++o) {
      A acc = b ? A(Widen(b[oc])) : A(0);
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t kk = 0; kk < k_sz; ++kk)
          acc += A(Widen(wt[(oc * cg + c) * k_sz + kk])) * Tap<T, A>(p, x, offset, mask, n, g * cg + c, kk, o);
      y[nm * out_sz + o] = Narrow<T>(acc);
    }
  }});
}

// The float fast path: per (batch, group), the column buffer holds every
// tap, (cg * K) rows of out_sz, and Y's group block (mg x out_sz) is the
// group's weights (mg x cg * K) times it, then the bias. False (Y then
// incomplete) when oneDNN declines.
bool DeformConvColumns(const DeformPlan& p, const float* x, const float* wt, const float* offset, const float* b,
                       const float* mask, float* y, int threads) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  const int64_t out_sz = p.w.out_size(), k_sz = p.w.k_size(), rows = cg * k_sz;
  std::vector<float> col(size_t(p.columns));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t g = 0; g < p.group; ++g) {
      ParallelFor(threads, rows, WorkPerIndex{4.0 * double(out_sz)},
                  [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
        float* out = col.data() + r * out_sz;
        for (int64_t o = 0; o < out_sz; ++o)
          out[o] = Tap<float, float>(p, x, offset, mask, n, g * cg + r / k_sz, r % k_sz, o);
      }});
      float* yg = y + (n * p.m + g * mg) * out_sz;
      if (!OneDnnMatMul(DType::kFloat, wt + g * mg * rows, col.data(), yg, 1, 1, 1, mg, rows, out_sz, false, false,
                        threads))
        return false;
      if (b)
        for (int64_t oc = 0; oc < mg; ++oc)
          for (int64_t o = 0; o < out_sz; ++o) yg[oc * out_sz + o] += b[g * mg + oc];
    }
  return true;
}

class DeformConvOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::make_unique<DeformConvOp>();
    ASSIGN_OR_RETURN(op->a_, WindowAttrs::Parse(node));
    op->a_.auto_pad = "NOTSET";  // not attributes of DeformConv
    op->a_.ceil_mode = false;
    op->group_ = node.attr_int("group", 1);
    op->offset_group_ = node.attr_int("offset_group", 1);
    for (auto [name, v] : {std::pair{"group", op->group_}, std::pair{"offset_group", op->offset_group_}})
      if (v < 1 || v >= (int64_t(1) << 31))
        return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", name, " ", v, " must be positive"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& wt = ctx.input(1);
    ValueType out;
    out.dtype = x.dtype;
    if (x.dims && wt.dims) {
      if (x.rank() < 3 || wt.rank() != x.rank())
        return ctx.Error(absl::StrCat("X ", x.ToString(), " and W ", wt.ToString(),
                                      " must have one rank of at least 3 (N, C, spatial...)"));
      out.dims = std::vector<Dim>(size_t(x.rank()));
      (*out.dims)[0] = (*x.dims)[0];
      (*out.dims)[1] = (*wt.dims)[0];
    }
    // The plan needs every shape; until then (dynamic shapes) it waits for the run.
    std::vector<std::optional<Shape>> shapes;
    for (size_t i = 0; i < 5; ++i) {
      shapes.push_back(ctx.has_input(i) ? ctx.input(i).concrete_shape() : std::nullopt);
      if (ctx.has_input(i) && !shapes.back()) {
        ctx.set_output(0, out);
        return absl::OkStatus();
      }
    }
    const Shape &xs = *shapes[0], &ws = *shapes[1];
    const int64_t rank = int64_t(xs.size()) - 2;
    const Shape kernel(ws.begin() + 2, ws.end());
    RETURN_IF_ERROR(CheckWindowAttrs(ctx, a_, rank, kernel));
    auto p = std::make_shared<DeformPlan>();
    p->n = xs[0];
    p->c = xs[1];
    p->m = ws[0];
    p->group = group_;
    p->offset_group = offset_group_;
    const std::string geometry = absl::StrCat("X ", ShapeToString(xs), ", W ", ShapeToString(ws), ", group ", group_,
                                              ", offset_group ", offset_group_);
    if (p->c % group_ != 0 || ws[1] != p->c / group_ || p->m % group_ != 0)
      return ctx.Error(absl::StrCat(
          "X's channels must be W's second dim times group, and W's first a multiple of group: ", geometry));
    if (p->c % offset_group_ != 0)
      return ctx.Error(absl::StrCat("X's channels must be a multiple of offset_group: ", geometry));
    ASSIGN_OR_RETURN(p->w, ForwardWindow(ctx, a_, Shape(xs.begin() + 2, xs.end()), kernel));
    const Shape spatial = p->w.Spatial(p->w.out);
    // offset is (N, offset_group * K * rank, out...), mask (N, offset_group * K, out...);
    // W's dims may be huge when it is empty (C = 0): K is checked too.
    const std::optional<int64_t> k_size = CheckedProduct(kernel);
    const std::optional<int64_t> taps = k_size ? CheckedMul(offset_group_, *k_size) : std::nullopt;
    const std::optional<int64_t> coords = taps ? CheckedMul(*taps, rank) : std::nullopt;
    if (!coords) return ctx.Error(absl::StrCat("offset_group times the kernel's size is too large: ", geometry));
    for (auto [i, name, channels] : {std::tuple{size_t(2), "offset", *coords}, std::tuple{size_t(4), "mask", *taps}}) {
      if (!shapes[i]) continue;
      Shape want = {p->n, channels};
      want.insert(want.end(), spatial.begin(), spatial.end());
      if (*shapes[i] != want)
        return ctx.Error(absl::StrCat(name, " ", ShapeToString(*shapes[i]), " must be ", ShapeToString(want),
                                      " (N, offset_group * kernel size", i == 2 ? " * spatial dims" : "",
                                      ", output dims...) for ", geometry, ", kernel ", ShapeToString(kernel)));
    }
    if (shapes[3] && (shapes[3]->size() != 1 || (*shapes[3])[0] != p->m))
      return ctx.Error(absl::StrCat("B ", ShapeToString(*shapes[3]), " must be (", p->m, ")"));
    Shape ys = {p->n, p->m};
    ys.insert(ys.end(), spatial.begin(), spatial.end());
    if (!CheckedProduct(ys)) return ctx.Error(absl::StrCat("the output ", ShapeToString(ys), " is too large"));
    if (x.dtype == DType::kFloat) {
      // (C / group) * K rows of out_sz: checked before it is ever allocated.
      const std::optional<int64_t> rows = CheckedMul(p->c / group_, p->w.k_size());
      const std::optional<int64_t> cols = rows ? CheckedMul(*rows, p->w.out_size()) : std::nullopt;
      if (cols && *cols > 0 && *cols <= kMaxColumnElements) p->columns = *cols;
    }
    ctx.set_output(0, ValueType::Of(out.dtype, ys));
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& wt = *ctx.input(1);
    const Tensor& offset = *ctx.input(2);
    const Tensor* b = ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
    const Tensor* mask = ctx.num_inputs() > 4 ? ctx.input(4) : nullptr;
    Tensor& y = ctx.output(0);
    const DeformPlan& p = ctx.plan<DeformPlan>();
    if (y.size() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(p.columns, sizeof(float), "the column buffer"));
    if (p.columns > 0 &&
        DeformConvColumns(p, x.data<float>(), wt.data<float>(), offset.data<float>(), b ? b->data<float>() : nullptr,
                          mask ? mask->data<float>() : nullptr, y.data<float>(), ctx.threads()))
      return absl::OkStatus();
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      DeformConvReference(p, x.data<T>(), wt.data<T>(), offset.data<T>(), b ? b->data<T>() : nullptr,
                          mask ? mask->data<T>() : nullptr, y.data<T>(), ctx.threads());
    });
  }

 private:
  WindowAttrs a_;
  int64_t group_ = 1, offset_group_ = 1;
};

}  // namespace

std::vector<OpDef> DeformConvOps() {
  // 22 only adds bfloat16, which every row admits.
  return {{"", "DeformConv", 19, 0, "T T T T? T?", "T", {{"T", kFloatTypes}}, DeformConvOp::Create}};
}

}  // namespace onnx_mini
