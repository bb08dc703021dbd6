// Ops that sample or place image data at computed positions: GridSample,
// AffineGrid, RoiAlign, MaxUnpool, NonMaxSuppression. Coordinates are
// computed in double; positions that come from data (grids, boxes, batch
// indices, unpooling indices) are checked or clamped before any read.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

// An element as double (complex: see SampleAs) and back, for the float and
// integer types; integers truncate toward zero, as the reference's cast does.
template <class T>
double ToDouble(const T& v) {
  return double(Widen(v));
}
template <class T>
T FromDouble(double v) {
  if constexpr (std::is_integral_v<T>) return T(FloatToInt64(v));  // wraps to the width, never UB
  else return Narrow<T>(typename Arith<T>::type(v));
}

// ---- GridSample ----

enum class SampleMode { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// `x` reflected by the borders lo and hi until inside them (lo == hi: lo).
double Reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double flips = std::floor(dx / range);
  const double r = std::fmod(dx, range);
  const bool even = std::fmod(flips, 2.0) == 0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

// Keys' cubic convolution weights (alpha = -0.75) for the taps at -1, 0, 1, 2
// around a point t in [0, 1) past tap 0.
void CubicWeights(double t, double w[4]) {
  constexpr double a = -0.75;
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };      // |x| <= 1
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

struct GridSamplePlan : OpPlan {
  int64_t N = 0, C = 0, points = 0;  // output positions per (n, c)
  Shape spatial;                      // the input's spatial dims D1..Dr
};

class GridSampleOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    // GridSample-16 names the modes bilinear and bicubic; 20 renames them and goes N-D.
    const bool v16 = node.opset < 20;
    const std::string mode = node.attr_string("mode", v16 ? "bilinear" : "linear");
    SampleMode m;
    if (mode == "nearest") m = SampleMode::kNearest;
    else if (mode == (v16 ? "bilinear" : "linear")) m = SampleMode::kLinear;
    else if (mode == (v16 ? "bicubic" : "cubic")) m = SampleMode::kCubic;
    else
      return AttributeError(node, absl::StrCat("mode '", mode, "' is not ",
                                               v16 ? "bilinear, nearest or bicubic" : "linear, nearest or cubic",
                                               " (opset ", node.opset, ")"));
    const std::string pad = node.attr_string("padding_mode", "zeros");
    Padding p;
    if (pad == "zeros") p = Padding::kZeros;
    else if (pad == "border") p = Padding::kBorder;
    else if (pad == "reflection") p = Padding::kReflection;
    else return AttributeError(node, absl::StrCat("padding_mode '", pad, "' is not zeros, border or reflection"));
    return std::unique_ptr<Op>(new GridSampleOp(m, p, node.attr_int("align_corners", 0) != 0, v16));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& grid = ctx.input(1);
    ValueType out;
    out.dtype = x.dtype;
    if (mode_ != SampleMode::kNearest && (x.dtype == DType::kBool || x.dtype == DType::kString))
      return ctx.Error(absl::StrCat("mode ", mode_ == SampleMode::kLinear ? "linear" : "cubic",
                                    " interpolates numbers; X is ", LowerName(x.dtype), " (only nearest applies)"));
    if (x.dims) {
      if (v16_ ? x.rank() != 4 : x.rank() < 3)
        return ctx.Error(absl::StrCat("X must be ", v16_ ? "4-D (N, C, H, W)" : "(N, C, D1, ..., Dr) with r >= 1",
                                      ", got ", x.ToString()));
      // Each output sample reads 2^r (linear) or 4^r (cubic) pixels: keep that bounded.
      const int64_t r = x.rank() - 2;
      if ((mode_ == SampleMode::kCubic && r > 6) || (mode_ == SampleMode::kLinear && r > 12))
        return NotImplemented(ctx.node(), absl::StrCat(r, " spatial dims with this mode (4096 taps per sample at most)"));
    }
    if (x.dims && grid.dims) {
      const int64_t r = x.rank() - 2;
      if (grid.rank() != x.rank())
        return ctx.Error(absl::StrCat("grid ", grid.ToString(), " must have the rank of X ", x.ToString()));
      const Dim& last = grid.dims->back();
      if (last.known() && last.value != r)
        return ctx.Error(absl::StrCat("grid's last dim must be the ", r, " spatial dims of X, got ", grid.ToString()));
      const Dim& n1 = (*x.dims)[0];
      const Dim& n2 = (*grid.dims)[0];
      if (n1.known() && n2.known() && n1.value != n2.value)
        return ctx.Error(absl::StrCat("grid ", grid.ToString(), " and X ", x.ToString(), " differ in batch size"));
      out.dims = std::vector<Dim>{n1.known() ? n1 : n2, (*x.dims)[1]};
      out.dims->insert(out.dims->end(), grid.dims->begin() + 1, grid.dims->end() - 1);
      const std::optional<Shape> xs = x.concrete_shape(), gs = grid.concrete_shape();
      if (xs && gs) {
        auto plan = std::make_shared<GridSamplePlan>();
        plan->N = (*xs)[0];
        plan->C = (*xs)[1];
        plan->points = ShapeProduct(*gs, 1, gs->size() - 1);
        plan->spatial.assign(xs->begin() + 2, xs->end());
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& grid = *ctx.input(1);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const GridSamplePlan& p = ctx.plan<GridSamplePlan>();
    const size_t r = p.spatial.size();
    // Every spatial dim of a non-empty output's input may still be 0: then every tap is outside.
    const int64_t plane = ShapeProduct(p.spatial, 0, r);
    const std::vector<int64_t> strides = RowMajorStrides(p.spatial);
    // The grid as double, (n, point, r) with the coordinates reversed to dim order.
    ASSIGN_OR_RETURN(MemoryReservation reserved,
                     ctx.Reserve(p.N * p.points, r * sizeof(double), "the grid's coordinates"));
    std::vector<double> coords(size_t(p.N * p.points) * r);
    RETURN_IF_ERROR(Dispatch<FloatTypes>(ctx, grid.dtype(), [&](auto tag) {
      using G = typename decltype(tag)::type;
      const G* g = grid.data<G>();
      for (int64_t i = 0; i < p.N * p.points; ++i)
        for (size_t d = 0; d < r; ++d) coords[size_t(i) * r + d] = double(Widen(g[size_t(i) * r + (r - 1 - d)]));
    }));
    return Dispatch<AnyTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      std::vector<int64_t> taps, index;  // taps: offsets into the plane, -1 for a zero pixel
      std::vector<double> weights, weight;
      for (int64_t n = 0; n < p.N; ++n)
        for (int64_t q = 0; q < p.points; ++q) {
          Taps(&coords[size_t(n * p.points + q) * r], p.spatial, strides, taps, weights, index, weight);
          for (int64_t c = 0; c < p.C; ++c) {
            const T* base = src + (n * p.C + c) * plane;
            T& y = dst[(n * p.C + c) * p.points + q];
            if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
              y = taps[0] >= 0 ? base[taps[0]] : T{};  // nearest only (Infer)
            } else if constexpr (std::is_same_v<T, Complex64> || std::is_same_v<T, Complex128>) {
              std::complex<double> sum = 0;
              for (size_t t = 0; t < taps.size(); ++t)
                if (taps[t] >= 0) sum += weights[t] * std::complex<double>(base[taps[t]]);
              y = T(sum);
            } else {
              double sum = 0;
              for (size_t t = 0; t < taps.size(); ++t)
                if (taps[t] >= 0) sum += weights[t] * ToDouble(base[taps[t]]);
              y = FromDouble<T>(sum);
            }
          }
        }
    });
  }

 private:
  GridSampleOp(SampleMode mode, Padding padding, bool align, bool v16)
      : mode_(mode), padding_(padding), align_(align), v16_(v16) {}

  // The pixel index along a dim of size `size` for an integer position i
  // under the padding mode, or -1 for a zero.
  int64_t PixelIndex(double i, int64_t size, double lo, double hi) const {
    if (padding_ == Padding::kBorder) i = std::min(std::max(i, 0.0), double(size - 1));
    else if (padding_ == Padding::kReflection) i = std::trunc(Reflect(i, lo, hi));
    return i >= 0 && i < double(size) ? int64_t(i) : -1;
  }

  // The pixels a sample at normalized coordinates `g` (dim order) reads and
  // their weights: one for nearest, 2^r for linear, 4^r for cubic.
  // `index` and `weight` are scratch, per dim: the pixel of each tap (-1: zero) and its weight.
  void Taps(const double* g, const Shape& spatial, const std::vector<int64_t>& strides, std::vector<int64_t>& taps,
            std::vector<double>& weights, std::vector<int64_t>& index, std::vector<double>& weight) const {
    const size_t r = spatial.size();
    const int width = mode_ == SampleMode::kNearest ? 1 : mode_ == SampleMode::kLinear ? 2 : 4;
    index.resize(r * size_t(width));
    weight.resize(r * size_t(width));
    bool zero = false;  // a NaN coordinate samples zero
    for (size_t d = 0; d < r; ++d) {
      const int64_t size = spatial[d];
      const double lo = align_ ? 0.0 : -0.5, hi = align_ ? double(size) - 1 : double(size) - 0.5;
      double x = align_ ? (g[d] + 1) / 2 * double(size - 1) : ((g[d] + 1) * double(size) - 1) / 2;
      if (std::isnan(x) || (std::isinf(x) && padding_ == Padding::kReflection)) {
        zero = true;
        break;
      }
      if (mode_ == SampleMode::kNearest) x = std::nearbyint(x);  // halves to even
      if (x < lo || x > hi) {
        if (padding_ == Padding::kBorder) x = std::min(std::max(x, 0.0), double(size - 1));
        else if (padding_ == Padding::kReflection) x = Reflect(x, lo, hi);
      }
      // Far outside (zeros padding) every tap is outside: keep x where floor fits int64.
      x = std::min(std::max(x, -double(size) - 8), double(size) + 8);
      if (mode_ == SampleMode::kNearest) {
        index[d] = PixelIndex(std::trunc(x), size, lo, hi);
        weight[d] = 1;
        continue;
      }
      const double x0 = std::floor(x), t = x - x0;
      if (mode_ == SampleMode::kLinear) {
        const double w[2] = {1 - t, t};
        for (int k = 0; k < 2; ++k) {
          index[d * 2 + size_t(k)] = PixelIndex(x0 + k, size, lo, hi);
          weight[d * 2 + size_t(k)] = w[k];
        }
      } else {
        double w[4];
        CubicWeights(t, w);
        for (int k = 0; k < 4; ++k) {
          index[d * 4 + size_t(k)] = PixelIndex(x0 + k - 1, size, lo, hi);
          weight[d * 4 + size_t(k)] = w[k];
        }
      }
    }
    taps.clear();
    weights.clear();
    if (zero) {
      taps.push_back(-1);
      weights.push_back(0);
      return;
    }
    // The tensor product of the per-dim taps.
    int64_t count = 1;
    for (size_t d = 0; d < r; ++d) count *= width;
    for (int64_t k = 0; k < count; ++k) {
      int64_t offset = 0, rem = k;
      double w = 1;
      for (size_t d = r; d-- > 0;) {
        const size_t j = d * size_t(width) + size_t(rem % width);
        rem /= width;
        if (index[j] < 0) offset = -1;
        if (offset >= 0) offset += index[j] * strides[d];
        w *= weight[j];
      }
      taps.push_back(offset);
      weights.push_back(w);
    }
  }

  SampleMode mode_;
  Padding padding_;
  bool align_;
  bool v16_;
};

// ---- AffineGrid ----

using GridTypes = FloatTypes;

class AffineGridOp : public Op {
 public:
  explicit AffineGridOp(const Node& node) : align_(node.attr_int("align_corners", 0) != 0) {}

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& theta = ctx.input(0);
    ValueType out;
    out.dtype = theta.dtype;
    if (theta.dims && theta.rank() != 3)
      return ctx.Error(absl::StrCat("theta must be (N, 2, 3) or (N, 3, 4), got ", theta.ToString()));
    const Tensor* size = ctx.value(1);
    if (size == nullptr) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    if (size->rank() != 1 || (size->size() != 4 && size->size() != 5))
      return ctx.Error(absl::StrCat("size must be (N, C, H, W) or (N, C, D, H, W), got shape ",
                                    ShapeToString(size->shape())));
    const std::vector<int64_t> s = IndexValues(*size);
    const int64_t r = int64_t(s.size()) - 2;
    for (int64_t v : s)
      if (v < 0) return ctx.Error(absl::StrCat("size entries must be >= 0, got ", ShapeToString(s)));
    if (theta.dims) {
      const std::vector<Dim>& t = *theta.dims;
      if ((t[1].known() && t[1].value != r) || (t[2].known() && t[2].value != r + 1) ||
          (t[0].known() && t[0].value != s[0]))
        return ctx.Error(absl::StrCat("theta ", theta.ToString(), " does not match size ", ShapeToString(s),
                                      ": it must be (N, ", r, ", ", r + 1, ")"));
    }
    Shape dims = {s[0]};
    dims.insert(dims.end(), s.begin() + 2, s.end());
    dims.push_back(r);
    out = ValueType::Of(theta.dtype, dims);
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& theta = *ctx.input(0);
    Tensor& out = ctx.output(0);
    if (out.size() == 0) return absl::OkStatus();
    const Shape& o = out.shape();
    const int64_t r = o.back(), N = o[0];
    const Shape spatial(o.begin() + 1, o.end() - 1);  // D, H, W or H, W
    const int64_t points = ShapeProduct(spatial, 0, spatial.size());
    // The base coordinate of pixel i along a dim of n pixels, in [-1, 1].
    auto base = [&](int64_t i, int64_t n) {
      if (align_) return n > 1 ? -1.0 + 2.0 * double(i) / double(n - 1) : -1.0;
      return -1.0 + (2.0 * double(i) + 1.0) / double(n);
    };
    return Dispatch<GridTypes>(ctx, theta.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* th = theta.data<T>();
      T* dst = out.data<T>();
      std::vector<double> h(size_t(r + 1));  // the homogeneous point (x, y[, z], 1): innermost dim first
      for (int64_t n = 0; n < N; ++n)
        for (int64_t q = 0; q < points; ++q) {
          int64_t rem = q;
          for (int64_t d = r - 1; d >= 0; --d) {  // spatial dim d is coordinate r - 1 - d
            const int64_t size = spatial[size_t(d)];
            h[size_t(r - 1 - d)] = base(rem % size, size);
            rem /= size;
          }
          h[size_t(r)] = 1;
          for (int64_t i = 0; i < r; ++i) {
            double v = 0;
            for (int64_t j = 0; j <= r; ++j) v += double(Widen(th[(n * r + i) * (r + 1) + j])) * h[size_t(j)];
            dst[(n * points + q) * r + i] = Narrow<T>(typename Arith<T>::type(v));
          }
        }
    });
  }

 private:
  bool align_;
};

// ---- RoiAlign ----

class RoiAlignOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string mode = node.attr_string("mode", "avg");
    if (mode != "avg" && mode != "max") return AttributeError(node, absl::StrCat("mode '", mode, "' is not avg or max"));
    // RoiAlign-10 has no half-pixel shift; 16 adds the attribute, half_pixel by default.
    const std::string ctm = node.opset >= 16 ? node.attr_string("coordinate_transformation_mode", "half_pixel")
                                             : "output_half_pixel";
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      return AttributeError(node, absl::StrCat("coordinate_transformation_mode '", ctm,
                                               "' is not half_pixel or output_half_pixel"));
    const int64_t h = node.attr_int("output_height", 1), w = node.attr_int("output_width", 1);
    const int64_t ratio = node.attr_int("sampling_ratio", 0);
    if (h < 1 || w < 1 || ratio < 0)
      return AttributeError(node, absl::StrCat("output_height ", h, " and output_width ", w,
                                               " must be >= 1 and sampling_ratio ", ratio, " >= 0"));
    auto op = std::unique_ptr<RoiAlignOp>(new RoiAlignOp());
    op->max_ = mode == "max";
    op->half_pixel_ = ctm == "half_pixel";
    op->out_h_ = h;
    op->out_w_ = w;
    op->ratio_ = ratio;
    op->scale_ = node.attr_float("spatial_scale", 1.0f);
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& rois = ctx.input(1);
    const ValueType& idx = ctx.input(2);
    ValueType out;
    out.dtype = x.dtype;
    if (x.dims && x.rank() != 4) return ctx.Error(absl::StrCat("X must be 4-D (N, C, H, W), got ", x.ToString()));
    if (rois.dims && (rois.rank() != 2 || ((*rois.dims)[1].known() && (*rois.dims)[1].value != 4)))
      return ctx.Error(absl::StrCat("rois must be (num_rois, 4), got ", rois.ToString()));
    if (idx.dims && idx.rank() != 1)
      return ctx.Error(absl::StrCat("batch_indices must be 1-D, got ", idx.ToString()));
    if (rois.dims && idx.dims) {
      const Dim& a = (*rois.dims)[0];
      const Dim& b = (*idx.dims)[0];
      if (a.known() && b.known() && a.value != b.value)
        return ctx.Error(absl::StrCat("rois ", rois.ToString(), " and batch_indices ", idx.ToString(),
                                      " differ in the number of rois"));
    }
    Dim count = rois.dims ? (*rois.dims)[0] : Dim{};
    if (!count.known() && idx.dims) count = (*idx.dims)[0];
    out.dims = std::vector<Dim>{count, x.dims ? (*x.dims)[1] : Dim{}, Dim::Known(out_h_), Dim::Known(out_w_)};
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& rois = *ctx.input(1);
    const int64_t* batch = ctx.input(2)->data<int64_t>();
    Tensor& out = ctx.output(0);
    const int64_t R = out.dim(0), N = x.dim(0);
    for (int64_t r = 0; r < R; ++r)
      if (batch[r] < 0 || batch[r] >= N)
        return ctx.Error(absl::StrCat("batch_indices[", r, "] = ", batch[r], " is out of range for ", N,
                                      " images"));
    if (out.size() == 0) return absl::OkStatus();
    absl::Status status;
    RETURN_IF_ERROR(Dispatch<FloatTypes>(
        ctx, x.dtype(), [&](auto tag) { status = Pool<typename decltype(tag)::type>(ctx, x, rois, batch, out); }));
    return status;
  }

 private:
  // At most this many bilinear samples per roi (all its bins together).
  static constexpr int64_t kMaxSamples = int64_t(1) << 24;

  template <class T>
  absl::Status Pool(const KernelContext& ctx, const Tensor& x, const Tensor& rois, const int64_t* batch,
                    Tensor& out) const {
    const int64_t R = out.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    {
      const T* src = x.data<T>();
      const T* box = rois.data<T>();
      T* dst = out.data<T>();
      struct Sample {
        int64_t pos[4];
        double w[4];
        bool outside;  // contributes 0 and reads nothing (the map may be empty)
      };
      std::vector<Sample> samples;
      for (int64_t r = 0; r < R; ++r) {
        const double shift = half_pixel_ ? 0.5 : 0.0;
        const double x1 = double(Widen(box[r * 4 + 0])) * scale_ - shift, y1 = double(Widen(box[r * 4 + 1])) * scale_ - shift;
        const double x2 = double(Widen(box[r * 4 + 2])) * scale_ - shift, y2 = double(Widen(box[r * 4 + 3])) * scale_ - shift;
        double roi_w = x2 - x1, roi_h = y2 - y1;
        if (!half_pixel_) {  // malformed rois become 1x1
          roi_w = std::max(roi_w, 1.0);
          roi_h = std::max(roi_h, 1.0);
        }
        const double bin_h = roi_h / double(out_h_), bin_w = roi_w / double(out_w_);
        // Samples per bin: sampling_ratio, or ceil(bin size); bounded, and none for NaN.
        auto grid = [&](double bin) -> int64_t {
          if (ratio_ > 0) return ratio_;
          const double g = std::ceil(bin);
          return g >= 1 ? int64_t(std::min(g, double(kMaxSamples) + 1)) : 0;
        };
        const int64_t gh = grid(bin_h), gw = grid(bin_w);
        std::optional<int64_t> total = CheckedMul(gh, gw);
        if (total) total = CheckedMul(*total, out_h_ * out_w_);
        if (!total || *total > kMaxSamples)
          return ctx.Error(absl::StrCat("roi ", r, " needs ", gh, " x ", gw, " samples in each of ", out_h_ * out_w_,
                                        " bins; the most is ", kMaxSamples, " in all"));
        const double count = double(std::max<int64_t>(gh * gw, 1));
        samples.clear();
        for (int64_t ph = 0; ph < out_h_; ++ph)
          for (int64_t pw = 0; pw < out_w_; ++pw)
            for (int64_t iy = 0; iy < gh; ++iy)
              for (int64_t ix = 0; ix < gw; ++ix) {
                double yy = y1 + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(gh);
                double xx = x1 + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(gw);
                Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}, true};
                // Outside the map by more than a pixel (or NaN): the sample is 0.
                if (!(yy >= -1.0 && yy <= double(H) && xx >= -1.0 && xx <= double(W)) || H == 0 || W == 0) {
                  samples.push_back(s);
                  continue;
                }
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t y_lo = int64_t(yy), x_lo = int64_t(xx), y_hi, x_hi;
                if (y_lo >= H - 1) {
                  y_hi = y_lo = H - 1;
                  yy = double(y_lo);
                } else {
                  y_hi = y_lo + 1;
                }
                if (x_lo >= W - 1) {
                  x_hi = x_lo = W - 1;
                  xx = double(x_lo);
                } else {
                  x_hi = x_lo + 1;
                }
                const double ly = yy - double(y_lo), lx = xx - double(x_lo), hy = 1 - ly, hx = 1 - lx;
                s = {{y_lo * W + x_lo, y_lo * W + x_hi, y_hi * W + x_lo, y_hi * W + x_hi},
                     {hy * hx, hy * lx, ly * hx, ly * lx},
                     false};
                samples.push_back(s);
              }
        const int64_t per_bin = gh * gw;
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = src + (batch[r] * C + c) * H * W;
          for (int64_t b = 0; b < out_h_ * out_w_; ++b) {
            double v = 0;
            for (int64_t k = 0; k < per_bin; ++k) {
              const Sample& s = samples[size_t(b * per_bin + k)];
              if (s.outside) {
                if (max_) v = k == 0 ? 0.0 : std::max(v, 0.0);
                continue;
              }
              if (max_) {
                // The reference's max: of the four weighted corners, then over the samples.
                double m = s.w[0] * ToDouble(plane[s.pos[0]]);
                for (int j = 1; j < 4; ++j) m = std::max(m, s.w[j] * ToDouble(plane[s.pos[j]]));
                v = k == 0 ? m : std::max(v, m);
              } else {
                for (int j = 0; j < 4; ++j) v += s.w[j] * ToDouble(plane[s.pos[j]]);
              }
            }
            if (!max_) v /= count;
            dst[(r * C + c) * out_h_ * out_w_ + b] = FromDouble<T>(v);
          }
        }
      }
    }
    return absl::OkStatus();
  }

  RoiAlignOp() = default;
  bool max_ = false, half_pixel_ = true;
  int64_t out_h_ = 1, out_w_ = 1, ratio_ = 0;
  float scale_ = 1;
};

// ---- MaxUnpool ----

struct UnpoolPlan : OpPlan {
  Shape inferred;  // the unpooled shape the indices address
};

class MaxUnpoolOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::vector<int64_t> k = node.attr_ints("kernel_shape");
    if (k.empty()) return AttributeError(node, "attribute 'kernel_shape' is required");
    std::vector<int64_t> s = node.attr_ints("strides"), p = node.attr_ints("pads");
    if (s.empty()) s.assign(k.size(), 1);
    if (p.empty()) p.assign(2 * k.size(), 0);
    if (s.size() != k.size() || p.size() != 2 * k.size())
      return AttributeError(node, absl::StrCat("kernel_shape has ", k.size(), " entries; strides need as many and pads twice, got ",
                                               s.size(), " and ", p.size()));
    for (size_t i = 0; i < k.size(); ++i)
      if (k[i] < 1 || s[i] < 1 || p[i] < 0 || p[i + k.size()] < 0)
        return AttributeError(node, "kernel_shape and strides must be >= 1 and pads >= 0");
    return std::unique_ptr<Op>(new MaxUnpoolOp(k, s, p));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& idx = ctx.input(1);
    ValueType out;
    out.dtype = x.dtype;
    const int64_t r = int64_t(kernel_.size());
    if (x.dims && x.rank() != r + 2)
      return ctx.Error(absl::StrCat("X must have ", r + 2, " dims for a kernel of ", r, ", got ", x.ToString()));
    if (x.dims && idx.dims) {
      bool same = x.rank() == idx.rank();
      for (int64_t d = 0; same && d < x.rank(); ++d) {
        const Dim& a = (*x.dims)[size_t(d)];
        const Dim& b = (*idx.dims)[size_t(d)];
        same = !a.known() || !b.known() || a.value == b.value;
      }
      if (!same) return ctx.Error(absl::StrCat("I ", idx.ToString(), " must have the shape of X ", x.ToString()));
    }
    const std::optional<Shape> xs = x.concrete_shape();
    if (!xs) {
      if (x.dims) out.dims = std::vector<Dim>(x.dims->size());
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    auto plan = std::make_shared<UnpoolPlan>();
    plan->inferred = {(*xs)[0], (*xs)[1]};
    for (int64_t d = 0; d < r; ++d) {
      // (in - 1) * stride - pads + kernel
      const __int128 v = (__int128((*xs)[size_t(d + 2)]) - 1) * strides_[size_t(d)] - pads_[size_t(d)] -
                         pads_[size_t(d + r)] + kernel_[size_t(d)];
      if (v < 0 || v > (__int128(1) << 62))
        return ctx.Error(absl::StrCat("the unpooled size of dim ", d + 2, " is ", v < 0 ? "negative" : "too large"));
      plan->inferred.push_back(int64_t(v));
    }
    Shape shape = plan->inferred;
    if (ctx.has_input(2)) {
      const Tensor* os = ctx.value(2);
      if (os == nullptr) {
        out.dims = std::vector<Dim>(size_t(r + 2));
        ctx.set_output(0, out);
        return absl::OkStatus();
      }
      shape = IndexValues(*os);
      // The unpooled values sit at the start of each dim of output_shape (the reference's rule).
      bool fits = shape.size() == plan->inferred.size() && os->rank() == 1;
      for (size_t d = 0; fits && d < shape.size(); ++d)
        fits = d < 2 ? shape[d] == plan->inferred[d] : shape[d] >= plan->inferred[d];
      if (!fits)
        return ctx.Error(absl::StrCat("output_shape ", ShapeToString(shape), " must hold the unpooled shape ",
                                      ShapeToString(plan->inferred), " (same N and C, no dim smaller)"));
    }
    out = ValueType::Of(x.dtype, shape);
    ctx.set_plan(std::move(plan));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const int64_t* idx = ctx.input(1)->data<int64_t>();
    Tensor& out = ctx.output(0);
    const Shape& inferred = ctx.plan<UnpoolPlan>().inferred;
    const int64_t total = ElementCount(inferred);
    for (int64_t i = 0; i < x.size(); ++i)
      if (idx[i] < 0 || idx[i] >= total)
        return ctx.Error(absl::StrCat("index ", idx[i], " (element ", i, " of I) is out of range for the unpooled shape ",
                                      ShapeToString(inferred), " of ", total, " elements"));
    const size_t rank = inferred.size();
    const std::vector<int64_t> out_strides = RowMajorStrides(out.shape());
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      std::fill(dst, dst + out.size(), Narrow<T>(0));
      for (int64_t i = 0; i < x.size(); ++i) {
        // The index's coordinates in the unpooled shape, placed in the output.
        int64_t rem = idx[i], at = 0;
        for (size_t d = rank; d-- > 0;) {
          at += (rem % inferred[d]) * out_strides[d];
          rem /= inferred[d];
        }
        dst[at] = src[i];
      }
    });
  }

 private:
  MaxUnpoolOp(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p)
      : kernel_(std::move(k)), strides_(std::move(s)), pads_(std::move(p)) {}
  std::vector<int64_t> kernel_, strides_, pads_;
};

// ---- NonMaxSuppression ----

struct SelectedPlan : OpPlan {
  std::vector<int64_t> triples;  // (batch, class, box) per selected box
};

class NonMaxSuppressionOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const int64_t c = node.attr_int("center_point_box", 0);
    if (c != 0 && c != 1) return AttributeError(node, absl::StrCat("center_point_box must be 0 or 1, got ", c));
    return std::unique_ptr<Op>(new NonMaxSuppressionOp(c == 1));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& boxes = ctx.input(0);
    const ValueType& scores = ctx.input(1);
    ValueType out;
    out.dtype = DType::kInt64;
    out.dims = std::vector<Dim>{Dim{}, Dim::Known(3)};
    if (boxes.dims && (boxes.rank() != 3 || ((*boxes.dims)[2].known() && (*boxes.dims)[2].value != 4)))
      return ctx.Error(absl::StrCat("boxes must be [num_batches, spatial_dimension, 4], got ", boxes.ToString()));
    if (scores.dims && scores.rank() != 3)
      return ctx.Error(absl::StrCat("scores must be [num_batches, num_classes, spatial_dimension], got ", scores.ToString()));
    for (size_t i = 2; i < 5; ++i)
      if (const std::optional<Shape> s = ctx.has_input(i) ? ctx.input(i).concrete_shape() : std::nullopt;
          s && ElementCount(*s) > 1)
        return ctx.Error(absl::StrCat("input ", i, " must be a scalar, got shape ", ShapeToString(*s)));
    const Tensor* b = ctx.value(0);
    const Tensor* s = ctx.value(1);
    bool known = b && s;
    for (size_t i = 2; i < 5; ++i) known = known && (!ctx.has_input(i) || ctx.value(i));
    if (!known) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    if (b->dim(0) != s->dim(0) || b->dim(1) != s->dim(2))
      return ctx.Error(absl::StrCat("boxes ", ShapeToString(b->shape()), " and scores ", ShapeToString(s->shape()),
                                    " disagree on the batches or the boxes"));
    auto scalar = [&](size_t i) -> const Tensor* {
      const Tensor* t = ctx.has_input(i) ? ctx.value(i) : nullptr;
      return t && t->size() > 0 ? t : nullptr;
    };
    const int64_t max_boxes = scalar(2) ? std::max<int64_t>(0, scalar(2)->data<int64_t>()[0]) : 0;
    const double iou = scalar(3) ? double(scalar(3)->data<float>()[0]) : 0.0;
    const std::optional<double> min_score =
        scalar(4) ? std::optional<double>(scalar(4)->data<float>()[0]) : std::nullopt;
    auto plan = std::make_shared<SelectedPlan>();
    Select(*b, *s, max_boxes, iou, min_score, plan->triples);
    out.dims = std::vector<Dim>{Dim::Known(int64_t(plan->triples.size() / 3)), Dim::Known(3)};
    ctx.set_plan(std::move(plan));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const std::vector<int64_t>& t = ctx.plan<SelectedPlan>().triples;
    std::copy(t.begin(), t.end(), ctx.output(0).data<int64_t>());
    return absl::OkStatus();
  }

 private:
  explicit NonMaxSuppressionOp(bool center) : center_(center) {}

  // A box as (y_min, x_min, y_max, x_max).
  std::array<double, 4> Corners(const float* b) const {
    if (center_) {
      const double hw = double(b[2]) / 2, hh = double(b[3]) / 2;
      return {double(b[1]) - hh, double(b[0]) - hw, double(b[1]) + hh, double(b[0]) + hw};
    }
    return {std::min<double>(b[0], b[2]), std::min<double>(b[1], b[3]), std::max<double>(b[0], b[2]),
            std::max<double>(b[1], b[3])};
  }

  // Whether IoU(a, b) > threshold; boxes without area never suppress.
  static bool Overlaps(const std::array<double, 4>& a, const std::array<double, 4>& b, double threshold) {
    const double ix = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    const double iy = std::min(a[2], b[2]) - std::max(a[0], b[0]);
    if (!(ix > 0) || !(iy > 0)) return false;
    const double inter = ix * iy;
    const double area_a = (a[3] - a[1]) * (a[2] - a[0]), area_b = (b[3] - b[1]) * (b[2] - b[0]);
    const double uni = area_a + area_b - inter;
    if (!(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
    return inter / uni > threshold;
  }

  void Select(const Tensor& boxes, const Tensor& scores, int64_t max_boxes, double iou,
              const std::optional<double>& min_score, std::vector<int64_t>& out) const {
    const int64_t B = boxes.dim(0), S = boxes.dim(1), C = scores.dim(1);
    const float* box = boxes.data<float>();
    const float* score = scores.data<float>();
    std::vector<int64_t> order;
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < B && max_boxes > 0; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const float* sc = score + (b * C + c) * S;
        order.clear();
        for (int64_t i = 0; i < S; ++i)
          if (!min_score || double(sc[i]) > *min_score) order.push_back(i);
        // Highest score first, ties by index; NaN scores last.
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          const bool nx = std::isnan(sc[x]), ny = std::isnan(sc[y]);
          if (nx || ny) return !nx && ny;
          return sc[x] > sc[y];
        });
        kept.clear();
        for (int64_t i : order) {
          if (int64_t(kept.size()) >= max_boxes) break;
          const std::array<double, 4> cand = Corners(box + (b * S + i) * 4);
          bool keep = true;
          for (int64_t k : kept)
            if (Overlaps(cand, Corners(box + (b * S + k) * 4), iou)) {
              keep = false;
              break;
            }
          if (!keep) continue;
          kept.push_back(i);
          out.insert(out.end(), {b, c, i});
        }
      }
  }

  bool center_;
};

}  // namespace

std::vector<OpDef> SamplingOps() {
  const TypeConstraint floats = {"T1", kFloatTypes};
  const TypeConstraint int64 = {"T2", kInt64};
  const TypeConstraint f32 = {"F", {DType::kFloat}};
  return {
      {kOnnxDomain, "GridSample", Versions{16}, "T1 T2", "T1", {{"T1", AnyTypes::set()}, {"T2", kFloatTypes}},
       GridSampleOp::Create},
      {kOnnxDomain, "AffineGrid", Versions{20}, "T1 T2", "T1", {floats, int64}, MakeOp<AffineGridOp>},
      {kOnnxDomain, "RoiAlign", Versions{10}, "T1 T1 T2", "T1", {floats, int64}, RoiAlignOp::Create},
      {kOnnxDomain, "MaxUnpool", Versions{9}, "T1 T2 T2?", "T1", {floats, int64}, MaxUnpoolOp::Create},
      {kOnnxDomain, "NonMaxSuppression", Versions{10}, "F F T2? F? F?", "T2", {f32, int64},
       NonMaxSuppressionOp::Create},
  };
}

}  // namespace onnx_mini
