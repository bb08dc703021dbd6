// Resize (10, 11, 13, 18, 19) and Upsample (7, 9).
//
// Infer turns scales or sizes (with axes, roi and keep_aspect_ratio_policy)
// into the output shape and, for each resized axis, the taps of every output
// index: the input indices and weights it reads (one tap for nearest), or
// that it is extrapolated (tf_crop_and_resize). Compute only applies them:
// nearest is one gather over all axes; linear and cubic are separable, one
// pass per axis that changes (shrinking axes first, so buffers stay small).
// The reference kernel takes the full N-D product of the taps per output
// element, in double; tests compare the two.
#include "ops/nn/resize.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <new>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

std::atomic<bool> g_reference{false};

using ResizeTypes = NumericTypes;

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
                   kTfHalfPixelForNn, kTfCropAndResize };
// kSimple: Resize-10 and Upsample, which had no nearest_mode: floor when
// upsampling, ceil when downsampling (as onnxruntime keeps them).
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };
enum class Policy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttributes {
  bool upsample = false;       // Upsample-7/9
  bool legacy = false;         // Resize-10 or Upsample: scales only, asymmetric
  std::vector<float> scales;   // Upsample-7's attribute
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  std::vector<int64_t> axes;  // empty: all
  Policy policy = Policy::kStretch;
};

// What one output index of one axis reads.
struct AxisTaps {
  int64_t in = 0, out = 0;
  int64_t n = 1;                 // taps per output index
  std::vector<int64_t> index;    // out * n input indices, in [0, in)
  std::vector<double> weight;    // out * n
  std::vector<char> extrapolated;  // out: the output is extrapolation_value
  bool identity = false;         // every output copies its own index
};

struct ResizePlan : OpPlan {
  Shape in, out;
  std::vector<AxisTaps> axes;  // one per dim of X
  Mode mode = Mode::kNearest;
  double extrapolation = 0;
};

double Cubic(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The source coordinate of output index y on one axis. `scale` is the
// axis' scale factor (given, or out/in from sizes) and out_f = scale * in
// (as the ONNX reference, which made the upstream expected outputs, uses it).
double SourceCoordinate(Coord coord, double y, double scale, int64_t in, int64_t out, double roi_start,
                        double roi_end) {
  const double out_f = scale * double(in);
  switch (coord) {
    case Coord::kHalfPixel: return (y + 0.5) / scale - 0.5;
    case Coord::kHalfPixelSymmetric: {
      const double adjustment = double(out) / out_f;
      const double offset = double(in) / 2 * (1 - adjustment);
      return offset + (y + 0.5) / scale - 0.5;
    }
    case Coord::kPytorchHalfPixel: return out > 1 ? (y + 0.5) / scale - 0.5 : 0;
    case Coord::kAlignCorners: return out_f == 1 ? 0 : y * double(in - 1) / (out_f - 1);
    case Coord::kAsymmetric: return y / scale;
    case Coord::kTfHalfPixelForNn: return (y + 0.5) / scale;
    case Coord::kTfCropAndResize: {
      const double x = out_f == 1 ? (roi_end - roi_start) * double(in - 1) / 2
                                  : y * (roi_end - roi_start) * double(in - 1) / (out_f - 1);
      return x + roi_start * double(in - 1);
    }
  }
  return 0;
}

AxisTaps MakeTaps(const ResizeAttributes& a, int64_t in, int64_t out, double scale, double roi_start,
                  double roi_end) {
  AxisTaps t;
  t.in = in;
  t.out = out;
  const bool nearest = a.mode == Mode::kNearest;
  const double support = a.mode == Mode::kCubic ? 2 : 1;
  // Antialiasing widens the kernel by 1/scale when downsampling.
  const double s = !nearest && a.antialias ? std::min(scale, 1.0) : 1.0;
  t.n = nearest ? 1 : int64_t(2 * std::ceil(support / s));
  t.index.resize(size_t(out * t.n));
  t.weight.resize(size_t(out * t.n));
  t.extrapolated.assign(size_t(out), 0);
  for (int64_t y = 0; y < out; ++y) {
    double x = SourceCoordinate(a.coord, double(y), scale, in, out, roi_start, roi_end);
    if (a.coord == Coord::kTfCropAndResize && !(x >= 0 && x <= double(in - 1))) t.extrapolated[size_t(y)] = 1;
    // Far outside the input every tap reads an edge (or is excluded): keep x
    // (a hostile roi can make it huge or NaN) where the conversions are exact.
    x = std::isnan(x) ? 0 : std::min(std::max(x, -double(t.n + 2)), double(in + t.n + 2));
    int64_t* idx = &t.index[size_t(y * t.n)];
    double* w = &t.weight[size_t(y * t.n)];
    if (nearest) {
      const double f = std::floor(x);
      double r = x;
      if (x != f) {
        const double frac = x - f;
        switch (a.nearest) {
          case Nearest::kRoundPreferFloor: r = frac <= 0.5 ? f : f + 1; break;
          case Nearest::kRoundPreferCeil: r = frac < 0.5 ? f : f + 1; break;
          case Nearest::kFloor: r = f; break;
          case Nearest::kCeil: r = f + 1; break;
          case Nearest::kSimple: r = scale < 1 ? f + 1 : f; break;
        }
      }
      idx[0] = int64_t(std::min(std::max(r, 0.0), double(in - 1)));
      w[0] = 1;
      continue;
    }
    const int64_t first = int64_t(std::floor(x)) - t.n / 2 + 1;
    double sum = 0;
    for (int64_t k = 0; k < t.n; ++k) {
      idx[k] = first + k;
      const double d = (double(first + k) - x) * s;
      w[k] = a.mode == Mode::kCubic ? Cubic(d, a.cubic_a) : std::max(0.0, 1 - std::abs(d));
      sum += w[k];
    }
    if (a.antialias && sum != 0)
      for (int64_t k = 0; k < t.n; ++k) w[k] /= sum;
    if (a.exclude_outside) {
      sum = 0;
      for (int64_t k = 0; k < t.n; ++k) {
        if (idx[k] < 0 || idx[k] >= in) w[k] = 0;
        sum += w[k];
      }
      if (sum != 0)
        for (int64_t k = 0; k < t.n; ++k) w[k] /= sum;
    }
    // Outside taps read the edge (or weigh nothing, with exclude_outside).
    for (int64_t k = 0; k < t.n; ++k) idx[k] = std::min(std::max<int64_t>(idx[k], 0), in - 1);
  }
  t.identity = in == out;
  for (int64_t y = 0; y < out && t.identity; ++y) {
    double self = 0;
    for (int64_t k = 0; k < t.n; ++k) {
      const double w = t.weight[size_t(y * t.n + k)];
      if (t.index[size_t(y * t.n + k)] == y) self += w;
      else if (w != 0) t.identity = false;
    }
    if (self != 1 || t.extrapolated[size_t(y)]) t.identity = false;
  }
  return t;
}

// Stores a value computed in C into T: integers round half to even and saturate.
template <class T, class C>
T Store(C v) {
  if constexpr (std::is_integral_v<T>) {
    const double d = std::nearbyint(double(v));
    if (std::isnan(d)) return T(0);
    if (d <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (d >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(d);
  } else {
    return Narrow<T>(typename Arith<T>::type(v));
  }
}

class ResizeOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ResizeAttributes a;
    const auto bad = [&](const std::string& what, const std::string& value) {
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", what, " '", value, "' is not supported"));
    };
    a.upsample = node.op_type == "Upsample";
    a.legacy = a.upsample || node.opset < 11;
    const std::string mode = node.attr_string("mode", "nearest");
    if (mode == "nearest") a.mode = Mode::kNearest;
    else if (mode == "linear") a.mode = Mode::kLinear;
    else if (mode == "cubic" && !a.legacy) a.mode = Mode::kCubic;
    else return bad("mode", mode);
    if (a.legacy) {
      a.coord = Coord::kAsymmetric;
      a.nearest = Nearest::kSimple;
      if (a.upsample && node.opset < 9) {
        const Attribute* s = node.attr("scales");
        if (s == nullptr) return absl::InvalidArgumentError(node.Describe() + ": attribute 'scales' is required");
        a.scales = s->floats;
      }
      return std::unique_ptr<Op>(new ResizeOp(a));
    }
    const std::string coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
    static const std::pair<const char*, Coord> kCoords[] = {
        {"half_pixel", Coord::kHalfPixel}, {"half_pixel_symmetric", Coord::kHalfPixelSymmetric},
        {"pytorch_half_pixel", Coord::kPytorchHalfPixel}, {"align_corners", Coord::kAlignCorners},
        {"asymmetric", Coord::kAsymmetric}, {"tf_half_pixel_for_nn", Coord::kTfHalfPixelForNn},
        {"tf_crop_and_resize", Coord::kTfCropAndResize}};
    bool found = false;
    for (const auto& [name, c] : kCoords)
      if (coord == name) a.coord = c, found = true;
    if (!found) return bad("coordinate_transformation_mode", coord);
    const std::string nearest = node.attr_string("nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor") a.nearest = Nearest::kRoundPreferFloor;
    else if (nearest == "round_prefer_ceil") a.nearest = Nearest::kRoundPreferCeil;
    else if (nearest == "floor") a.nearest = Nearest::kFloor;
    else if (nearest == "ceil") a.nearest = Nearest::kCeil;
    else return bad("nearest_mode", nearest);
    a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
    a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = node.attr_float("extrapolation_value", 0.0f);
    a.antialias = node.attr_int("antialias", 0) != 0;
    a.axes = node.attr_ints("axes");
    const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") a.policy = Policy::kStretch;
    else if (policy == "not_larger") a.policy = Policy::kNotLarger;
    else if (policy == "not_smaller") a.policy = Policy::kNotSmaller;
    else return bad("keep_aspect_ratio_policy", policy);
    return std::unique_ptr<Op>(new ResizeOp(a));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& xt = ctx.input(0);
    ValueType y;
    y.dtype = xt.dtype;
    if (xt.dims) y.dims = std::vector<Dim>(xt.dims->size());
    ctx.set_output(0, y);
    // Scales, sizes and roi must be known values; without them (or X's
    // shape) the plan waits for the run.
    const size_t scales_at = a_.legacy ? 1 : 2;
    const Tensor* scales = nullptr;
    const Tensor* sizes = nullptr;
    const Tensor* roi = nullptr;
    bool values_known = true;
    const auto get = [&](size_t i, const Tensor*& v) {
      if (!ctx.has_input(i)) return;
      v = ctx.value(i);
      if (v == nullptr) values_known = false;
    };
    if (!(a_.upsample && ctx.opset() < 9)) get(scales_at, scales);
    if (!a_.legacy) {
      get(3, sizes);
      if (a_.coord == Coord::kTfCropAndResize) get(1, roi);
    }
    const std::optional<Shape> xs = xt.concrete_shape();
    if (!xs || !values_known) return absl::OkStatus();
    const Shape& in = *xs;
    const int64_t rank = int64_t(in.size());
    if (rank == 0) return ctx.Error("X must have rank 1 or more");

    // The resized axes.
    std::vector<int64_t> axes;
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t ax : a_.axes) {
      ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(ctx, ax, rank, "axes"));
      if (seen[size_t(a)]) return ctx.Error(absl::StrCat("axes lists axis ", a, " twice"));
      seen[size_t(a)] = true;
      axes.push_back(a);
    }
    if (a_.axes.empty())
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    const int64_t na = int64_t(axes.size());

    std::vector<double> scale_of(size_t(rank), 1.0);
    Shape out = in;
    std::vector<double> given_scales;
    if (a_.upsample && ctx.opset() < 9) given_scales.assign(a_.scales.begin(), a_.scales.end());
    else if (scales && scales->size() > 0)
      for (int64_t i = 0; i < scales->size(); ++i) given_scales.push_back(scales->data<float>()[i]);
    const bool has_sizes = sizes && sizes->size() > 0;
    if (!given_scales.empty() && has_sizes) return ctx.Error("scales and sizes are both given; give one");
    if (given_scales.empty() && !has_sizes) return ctx.Error("neither scales nor sizes is given");
    if (!given_scales.empty()) {
      if (int64_t(given_scales.size()) != na)
        return ctx.Error(absl::StrCat("scales has ", given_scales.size(), " values for ", na, " resized axes of X ",
                                      ShapeToString(in)));
      if (a_.policy != Policy::kStretch) return ctx.Error("scales cannot be used with keep_aspect_ratio_policy other than stretch");
      for (int64_t i = 0; i < na; ++i) {
        const double s = given_scales[size_t(i)];
        const int64_t d = axes[size_t(i)];
        if (!(s > 0) || !std::isfinite(s)) return ctx.Error(absl::StrCat("scale ", s, " of axis ", d, " is not positive"));
        if (a_.upsample && s < 1) return ctx.Error(absl::StrCat("Upsample scale ", s, " of axis ", d, " is below 1"));
        const double o = std::floor(double(in[size_t(d)]) * s);
        if (o > double(int64_t(1) << 53))
          return ctx.Error(absl::StrCat("scale ", s, " makes axis ", d, " of size ", in[size_t(d)], " too large"));
        scale_of[size_t(d)] = s;
        out[size_t(d)] = int64_t(o);
      }
    } else {
      if (sizes->size() != na)
        return ctx.Error(absl::StrCat("sizes has ", sizes->size(), " values for ", na, " resized axes of X ",
                                      ShapeToString(in)));
      const int64_t* sz = sizes->data<int64_t>();
      for (int64_t i = 0; i < na; ++i) {
        const int64_t d = axes[size_t(i)];
        if (sz[i] < 0) return ctx.Error(absl::StrCat("sizes value ", sz[i], " for axis ", d, " is negative"));
        if (in[size_t(d)] == 0 && sz[i] != 0)
          return ctx.Error(absl::StrCat("axis ", d, " of X ", ShapeToString(in), " is empty and cannot become ", sz[i]));
      }
      if (a_.policy == Policy::kStretch) {
        for (int64_t i = 0; i < na; ++i) {
          const int64_t d = axes[size_t(i)];
          out[size_t(d)] = sz[i];
          if (in[size_t(d)] > 0) scale_of[size_t(d)] = double(sz[i]) / double(in[size_t(d)]);
        }
      } else {
        // One scale for every resized axis: the smallest (not_larger) or
        // largest (not_smaller) of sizes / input, sizes rounded half up.
        double scale = a_.policy == Policy::kNotLarger ? std::numeric_limits<double>::infinity() : 0;
        for (int64_t i = 0; i < na; ++i) {
          const int64_t d = axes[size_t(i)];
          if (in[size_t(d)] == 0) continue;
          const double s = double(sz[i]) / double(in[size_t(d)]);
          scale = a_.policy == Policy::kNotLarger ? std::min(scale, s) : std::max(scale, s);
        }
        for (int64_t i = 0; i < na && std::isfinite(scale) && scale > 0; ++i) {
          const int64_t d = axes[size_t(i)];
          scale_of[size_t(d)] = scale;
          out[size_t(d)] = int64_t(std::floor(scale * double(in[size_t(d)]) + 0.5));
        }
        if (!std::isfinite(scale) || !(scale > 0))
          for (int64_t i = 0; i < na; ++i) out[size_t(axes[size_t(i)])] = 0;
      }
    }
    // roi: starts then ends, one per resized axis (tf_crop_and_resize only).
    std::vector<double> roi_start(size_t(rank), 0.0), roi_end(size_t(rank), 1.0);
    if (a_.coord == Coord::kTfCropAndResize) {
      if (roi == nullptr || roi->size() == 0) return ctx.Error("tf_crop_and_resize needs roi");
      if (roi->size() != 2 * na)
        return ctx.Error(absl::StrCat("roi has ", roi->size(), " values; expected ", 2 * na, " (start and end of ",
                                      na, " axes)"));
      for (int64_t i = 0; i < na; ++i) {
        roi_start[size_t(axes[size_t(i)])] = GetDouble(*roi, i);
        roi_end[size_t(axes[size_t(i)])] = GetDouble(*roi, na + i);
      }
    }
    const int64_t count = ElementCount(out);
    if (count < 0 || StorageBytes(xt.dtype, count) > kMaxTensorBytes)
      return ctx.Error(absl::StrCat("the output shape ", ShapeToString(out), " is too large"));
    ctx.set_output(0, ValueType::Of(xt.dtype, out));
    auto plan = std::make_shared<ResizePlan>();
    plan->in = in;
    plan->out = out;
    plan->mode = a_.mode;
    plan->extrapolation = a_.extrapolation;
    if (count > 0) {
      try {
        for (int64_t d = 0; d < rank; ++d)
          plan->axes.push_back(MakeTaps(a_, in[size_t(d)], out[size_t(d)], scale_of[size_t(d)],
                                        roi_start[size_t(d)], roi_end[size_t(d)]));
      } catch (const std::bad_alloc&) {
        return absl::ResourceExhaustedError(
            absl::StrCat(ctx.node().Describe(), ": out of memory for the taps of output ", ShapeToString(out)));
      }
    }
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const ResizePlan& p = ctx.plan<ResizePlan>();
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    if (y.size() == 0) return absl::OkStatus();
    const bool reference = g_reference.load(std::memory_order_relaxed);
    absl::Status status;
    RETURN_IF_ERROR(Dispatch<ResizeTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (reference) Reference<T>(p, x.data<T>(), y.data<T>());
      else if (p.mode == Mode::kNearest) Gather<T>(p, x.data<T>(), y.data<T>(), ctx.threads());
      else status = Separable<T>(ctx, p, x.data<T>(), y.data<T>(), ctx.threads());
    }));
    return status;
  }

 private:
  explicit ResizeOp(ResizeAttributes a) : a_(std::move(a)) {}

  // Every output element from the product of its taps on every axis.
  template <class T>
  static void Reference(const ResizePlan& p, const T* x, T* y) {
    const int64_t rank = int64_t(p.in.size());
    std::vector<int64_t> in_stride(size_t(rank), 1);
    for (int64_t d = rank - 2; d >= 0; --d) in_stride[size_t(d)] = in_stride[size_t(d + 1)] * p.in[size_t(d + 1)];
    const int64_t total = ElementCount(p.out);
    std::vector<int64_t> pos(static_cast<size_t>(rank)), tap(static_cast<size_t>(rank));
    for (int64_t e = 0; e < total; ++e) {
      int64_t rem = e;
      bool extrapolated = false;
      for (int64_t d = rank - 1; d >= 0; --d) {
        pos[size_t(d)] = rem % p.out[size_t(d)];
        rem /= p.out[size_t(d)];
        extrapolated = extrapolated || p.axes[size_t(d)].extrapolated[size_t(pos[size_t(d)])];
      }
      if (extrapolated) {
        y[e] = Store<T>(p.extrapolation);
        continue;
      }
      double acc = 0;
      std::fill(tap.begin(), tap.end(), 0);
      while (true) {
        double w = 1;
        int64_t off = 0;
        for (int64_t d = 0; d < rank; ++d) {
          const AxisTaps& t = p.axes[size_t(d)];
          const size_t k = size_t(pos[size_t(d)] * t.n + tap[size_t(d)]);
          w *= t.weight[k];
          off += t.index[k] * in_stride[size_t(d)];
        }
        if (w != 0) acc += w * double(Widen(x[off]));
        int64_t d = rank - 1;
        while (d >= 0 && ++tap[size_t(d)] == p.axes[size_t(d)].n) tap[size_t(d--)] = 0;
        if (d < 0) break;
      }
      y[e] = Store<T>(acc);
    }
  }

  // Nearest: each output element copies one input element (or is extrapolated).
  template <class T>
  static void Gather(const ResizePlan& p, const T* x, T* y, int threads) {
    const int64_t rank = int64_t(p.in.size());
    // Per axis, the input offset of each output index (-1: extrapolated).
    std::vector<std::vector<int64_t>> off(static_cast<size_t>(rank));
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const AxisTaps& t = p.axes[size_t(d)];
      off[size_t(d)].resize(size_t(t.out));
      for (int64_t o = 0; o < t.out; ++o) off[size_t(d)][size_t(o)] = t.extrapolated[size_t(o)] ? -1 : t.index[size_t(o)] * stride;
      stride *= p.in[size_t(d)];
    }
    const int64_t inner = p.out.back();
    const int64_t rows = ElementCount(p.out) / inner;
    const T fill = Store<T>(p.extrapolation);
    const std::vector<int64_t>& last = off.back();
    ParallelFor(threads, rows, WorkPerIndex{double(inner)},
                [&](int64_t r_begin, int64_t r_end) {
      int64_t prev_base = -1;
      bool prev_extrapolated = false;
      for (int64_t r = r_begin; r < r_end; ++r) {
        int64_t base = 0, rem = r;
        bool extrapolated = false;
        for (int64_t d = rank - 2; d >= 0; --d) {
          const int64_t o = off[size_t(d)][size_t(rem % p.out[size_t(d)])];
          rem /= p.out[size_t(d)];
          if (o < 0) extrapolated = true;
          base += o;
        }
        T* row = y + r * inner;
        // An upscaled row repeats the one before it (the same input row): copied whole.
        if (r > r_begin && base == prev_base && extrapolated == prev_extrapolated) {
          std::copy(row - inner, row, row);
          continue;
        }
        prev_base = base;
        prev_extrapolated = extrapolated;
        for (int64_t i = 0; i < inner; ++i) row[i] = extrapolated || last[size_t(i)] < 0 ? fill : x[base + last[size_t(i)]];
      }
    });
  }

  // Linear and cubic: one weighted pass per axis that changes, in C (float
  // for float and the 16-bit floats, double otherwise).
  template <class T>
  static absl::Status Separable(const KernelContext& ctx, const ResizePlan& p, const T* x, T* y, int threads) {
    using C = std::conditional_t<std::is_same_v<typename Arith<T>::type, float>, float, double>;
    constexpr DType kC = DTypeOf<C>::value;
    const int64_t rank = int64_t(p.in.size());
    std::vector<int64_t> order;
    for (int64_t d = 0; d < rank; ++d)
      if (!p.axes[size_t(d)].identity) order.push_back(d);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return double(p.out[size_t(a)]) * double(p.in[size_t(b)]) < double(p.out[size_t(b)]) * double(p.in[size_t(a)]);
    });
    // The first pass reads X itself when it is already C; the last writes Y
    // itself when Y is C.
    constexpr bool kSame = std::is_same_v<T, C>;
    Tensor cur_t;
    const C* cur = nullptr;
    if constexpr (kSame) {
      cur = x;
    } else {
      ASSIGN_OR_RETURN(cur_t, ctx.NewTensor(kC, p.in));
      C* widened = cur_t.data<C>();
      for (int64_t i = 0; i < cur_t.size(); ++i) widened[i] = C(Widen(x[i]));
      cur = widened;
    }
    Shape shape = p.in;
    const C fill = C(p.extrapolation);
    for (size_t step = 0; step < order.size(); ++step) {
      const int64_t d = order[step];
      const AxisTaps& t = p.axes[size_t(d)];
      Shape next_shape = shape;
      next_shape[size_t(d)] = t.out;
      Tensor next_t;
      C* next = nullptr;
      if constexpr (kSame) {
        if (step + 1 == order.size()) next = y;
      }
      if (next == nullptr) {
        ASSIGN_OR_RETURN(next_t, ctx.NewTensor(kC, next_shape));
        next = next_t.data<C>();
      }
      int64_t outer = 1, inner = 1;
      for (int64_t k = 0; k < d; ++k) outer *= shape[size_t(k)];
      for (int64_t k = d + 1; k < rank; ++k) inner *= shape[size_t(k)];
      const int64_t in_len = shape[size_t(d)];
      ParallelFor(threads, outer * t.out, WorkPerIndex{double(inner) * double(t.n)},
                  [&](int64_t r_begin, int64_t r_end) { for (int64_t r = r_begin; r < r_end; ++r) {
        const int64_t o = r / t.out, j = r % t.out;
        C* dst = next + r * inner;
        if (t.extrapolated[size_t(j)]) {
          std::fill(dst, dst + inner, fill);
          continue;
        }
        const C* src = cur + o * in_len * inner;
        const int64_t* idx = &t.index[size_t(j * t.n)];
        const double* w = &t.weight[size_t(j * t.n)];
        if (inner == 1) {
          C acc = 0;
          for (int64_t k = 0; k < t.n; ++k) acc += C(w[k]) * src[idx[k]];
          dst[0] = acc;
        } else {
          std::fill(dst, dst + inner, C(0));
          for (int64_t k = 0; k < t.n; ++k) {
            const C wk = C(w[k]);
            if (wk == 0) continue;
            const C* s = src + idx[k] * inner;
            for (int64_t i = 0; i < inner; ++i) dst[i] += wk * s[i];
          }
        }
      }});
      if (next == static_cast<void*>(y)) return absl::OkStatus();
      cur_t = std::move(next_t);
      cur = cur_t.data<C>();
      shape = next_shape;
    }
    const int64_t total = ElementCount(p.out);
    for (int64_t i = 0; i < total; ++i) y[i] = Store<T>(cur[i]);
    return absl::OkStatus();
  }

  ResizeAttributes a_;
};

}  // namespace

void SetResizeReferenceKernel(bool on) { g_reference.store(on, std::memory_order_relaxed); }

std::vector<OpDef> ResizeOps() {
  const std::vector<TypeConstraint> t = {{"T", ResizeTypes::set()}};
  const std::vector<TypeConstraint> t11 = {
      {"T1", ResizeTypes::set()}, {"T2", {DType::kFloat16, DType::kFloat, DType::kDouble}}, {"F", {DType::kFloat}},
      {"I", kInt64}};
  const std::vector<TypeConstraint> t10 = {{"T", ResizeTypes::set()}, {"F", {DType::kFloat}}};
  // 11, 13, 18 and 19 share one row: the later attributes (antialias, axes,
  // keep_aspect_ratio_policy, half_pixel_symmetric) take their defaults before.
  return {
      {kOnnxDomain, "Upsample", Versions{7, 8}, "T", "T", t, ResizeOp::Create},
      {kOnnxDomain, "Upsample", Versions{9, 9}, "T F", "T", t10, ResizeOp::Create},
      {kOnnxDomain, "Resize", Versions{10, 10}, "T F", "T", t10, ResizeOp::Create},
      {kOnnxDomain, "Resize", Versions{11}, "T1 T2? F? I?", "T1", t11, ResizeOp::Create},
  };
}

}  // namespace onnx_mini
