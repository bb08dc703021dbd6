// The pools: MaxPool (1, 8 with Indices, 10 ceil_mode and dilations, 12
// integer types), AveragePool (1, 7 count_include_pad, 10 ceil_mode, 19
// dilations), LpPool (1 with a float p, 2 on with an integer p, 18 ceil_mode
// and dilations), GlobalAveragePool, GlobalMaxPool and GlobalLpPool. Later
// versions only add attributes whose defaults are the earlier behaviour, so
// one op serves every version. float max and average pools run on
// kernels/conv/pool.h, bfloat16 ones on oneDNN (the primitive kept in the
// plan), unless MaxPool's Indices are asked for.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/conv/pool.h"
#include "ops/ops.h"
#include "ops/nn/spatial.h"

namespace onnx_mini {
namespace {

enum class Pool { kMax, kAverage, kLp };

struct PoolPlan : OpPlan {
  Window w;
  int64_t planes = 0;  // N * C
  std::shared_ptr<const OneDnnForward> dnn;
};

// The kernel taps [lo, hi) of output o along one dim that fall inside the
// input, and how many fall inside the input with its pads. Computed, not
// searched: a huge kernel over padding costs nothing.
struct TapRange {
  int64_t lo = 0, hi = 0, padded = 0;
};
inline TapRange Taps(const Window& w, int j, int64_t o) {
  const size_t d = size_t(j);
  const int64_t start = o * w.s[d] - w.pb[d];  // the input position of tap 0
  TapRange r;
  r.lo = start >= 0 ? 0 : (-start + w.d[d] - 1) / w.d[d];
  r.hi = start > w.in[d] - 1 ? 0 : std::min(w.k[d], (w.in[d] - 1 - start) / w.d[d] + 1);
  r.hi = std::max(r.hi, r.lo);
  // Taps before in + pe (none lies before -pb).
  const int64_t end = w.in[d] + w.pe[d] - start;
  r.padded = end <= 0 ? 0 : std::min(w.k[d], (end + w.d[d] - 1) / w.d[d]);
  return r;
}

// Calls f(flat input offset, coordinates) for the taps of the window at output
// (o0, o1, o2) that fall inside the input; counts those and the taps inside
// the input with its pads.
template <class F>
void ForEachTap(const Window& w, int64_t o0, int64_t o1, int64_t o2, F f, int64_t& inside, int64_t& padded) {
  const TapRange r0 = Taps(w, 0, o0), r1 = Taps(w, 1, o1), r2 = Taps(w, 2, o2);
  inside = (r0.hi - r0.lo) * (r1.hi - r1.lo) * (r2.hi - r2.lo);
  padded = r0.padded * r1.padded * r2.padded;
  for (int64_t k0 = r0.lo; k0 < r0.hi; ++k0) {
    const int64_t i0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0];
    for (int64_t k1 = r1.lo; k1 < r1.hi; ++k1) {
      const int64_t i1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
      for (int64_t k2 = r2.lo; k2 < r2.hi; ++k2) {
        const int64_t i2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
        f((i0 * w.in[1] + i1) * w.in[2] + i2, i0, i1, i2);
      }
    }
  }
}

class PoolOp : public Op {
 public:
  // `global`: the window is the whole of the spatial dims.
  PoolOp(const Node& node, Pool kind, bool global) : kind_(kind), global_(global) {
    count_include_pad_ = node.attr_int("count_include_pad", 0) != 0;
    storage_order_ = node.attr_int("storage_order", 0);
    // LpPool-1 and GlobalLpPool-1 take p as a float; later versions as an integer.
    const Attribute* p = node.attr("p");
    if (p && p->type == AttrType::kFloat) p_ = p->f;
    else if (p) p_ = float(p->i);
  }

  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node, Pool kind, bool global) {
    auto op = std::make_unique<PoolOp>(node, kind, global);
    if (!global) {
      ASSIGN_OR_RETURN(op->a_, WindowAttrs::Parse(node));
    }
    if (op->storage_order_ != 0 && op->storage_order_ != 1)
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": storage_order ", op->storage_order_, " must be 0 or 1"));
    if (kind == Pool::kLp && !(op->p_ > 0 && std::isfinite(op->p_)))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": p ", op->p_, " must be positive"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType out;
    out.dtype = x.dtype;
    ValueType indices;
    indices.dtype = DType::kInt64;
    if (x.dims) {
      if (x.rank() < (global_ ? 2 : 3))
        return ctx.Error(absl::StrCat("X ", x.ToString(), " must be (N, C, spatial...)"));
      out.dims = std::vector<Dim>(size_t(x.rank()), global_ ? Dim::Known(1) : Dim{});
      (*out.dims)[0] = (*x.dims)[0];
      (*out.dims)[1] = (*x.dims)[1];
    }
    const std::optional<Shape> xs = x.concrete_shape();
    if (xs) {
      auto p = std::make_shared<PoolPlan>();
      p->planes = (*xs)[0] * (*xs)[1];
      const Shape spatial(xs->begin() + 2, xs->end());
      if (global_) {
        // Any rank: one window over all spatial elements, as a 1-D pool.
        const int64_t n = ElementCount(spatial);
        if (n < 0 || (n == 0 && p->planes > 0))
          return ctx.Error(absl::StrCat("X ", ShapeToString(*xs), " has no spatial elements to pool"));
        p->w.rank = 1;
        p->w.in[2] = p->w.k[2] = n;
      } else {
        RETURN_IF_ERROR(CheckWindowAttrs(ctx, a_, int64_t(spatial.size()), {}));
        ASSIGN_OR_RETURN(p->w, ForwardWindow(ctx, a_, spatial, a_.kernel));
        for (size_t i = 0; i < spatial.size(); ++i)
          (*out.dims)[2 + i] = Dim::Known(p->w.Spatial(p->w.out)[i]);
      }
      const bool indices_wanted = ctx.num_outputs() > 1 && ctx.output_requested(1);
      if (kind_ != Pool::kLp && !indices_wanted && !OwnKernel(x.dtype))
        p->dnn = MakeOneDnnPool(x.dtype, p->w, (*xs)[0], (*xs)[1],
                                kind_ == Pool::kMax  ? PoolKind::kMax
                                : count_include_pad_ ? PoolKind::kAverageIncludePad
                                                     : PoolKind::kAverageExcludePad);
      ctx.set_plan(std::move(p));
    }
    indices.dims = out.dims;
    ctx.set_output(0, out);
    if (ctx.num_outputs() > 1) ctx.set_output(1, indices);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    int64_t* indices = ctx.num_outputs() > 1 && ctx.output_requested(1) ? ctx.output(1).data<int64_t>() : nullptr;
    const PoolPlan& p = ctx.plan<PoolPlan>();
    if (y.size() == 0) return absl::OkStatus();
    const int dnn_threads =
        ThreadsForWork(ctx.threads(), double(p.planes) * double(p.w.out_size() * p.w.k_size()), kMinOneDnnThreadWork);
    // GlobalAveragePool over float planes: a sum per plane (oneDNN's NCHW
    // pooling took ~14 us for the small planes of a squeeze-excitation block).
    if (global_ && kind_ == Pool::kAverage && x.dtype() == DType::kFloat) {
      GlobalAverage(x.data<float>(), y.data<float>(), p.planes, p.w.in_size(), ctx.threads());
      return absl::OkStatus();
    }
    if (OwnKernel(x.dtype()) && !indices) {
      PoolProblem pp;
      pp.planes = p.planes;
      pp.in = p.w.in;
      pp.out = p.w.out;
      pp.k = p.w.k;
      pp.s = p.w.s;
      pp.d = p.w.d;
      pp.pb = p.w.pb;
      pp.pe = p.w.pe;
      if (kind_ == Pool::kMax) MaxPoolFloat(pp, x.data<float>(), y.data<float>(), ctx.threads());
      else AveragePoolFloat(pp, count_include_pad_, x.data<float>(), y.data<float>(), ctx.threads());
      return absl::OkStatus();
    }
    if (p.dnn && p.dnn->Run(x.raw(), nullptr, nullptr, y.raw(), dnn_threads, false, ctx.budget()))
      return absl::OkStatus();
    return Dispatch<Join<FloatTypes, TypeList<int8_t, uint8_t>>>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Reference(p, x.data<T>(), y.data<T>(), indices, ctx.threads());
    });
  }

 private:
  // float max and average pools: kernels/conv/pool.h.
  bool OwnKernel(DType dtype) const { return kind_ != Pool::kLp && dtype == DType::kFloat; }

  // Each plane's mean, summed in 8 float lanes (vectorized) and then in double.
  static void GlobalAverage(const float* x, float* y, int64_t planes, int64_t size, int threads) {
    ParallelFor(threads, planes, WorkPerIndex{double(size)}, [&](int64_t p0, int64_t p1) {
      for (int64_t plane = p0; plane < p1; ++plane) {
        const float* xp = x + plane * size;
        float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= size; i += 8)
          for (int l = 0; l < 8; ++l) lane[l] += xp[i + l];
        double sum = 0;
        for (int l = 0; l < 8; ++l) sum += double(lane[l]);
        for (; i < size; ++i) sum += double(xp[i]);
        y[plane] = float(sum / double(size));
      }
    });
  }

  template <class T>
  void Reference(const PoolPlan& p, const T* x, T* y, int64_t* indices, int threads) const {
    using A = typename Arith<T>::type;
    const Window& w = p.w;
    const int64_t in_sz = w.in_size(), out_sz = w.out_size();
    ParallelFor(threads, p.planes, WorkPerIndex{double(out_sz * w.k_size())}, [&](int64_t p0, int64_t p1) {
    for (int64_t plane = p0; plane < p1; ++plane) {
      const T* xp = x + plane * in_sz;
      for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
            const int64_t at = plane * out_sz + (o0 * w.out[1] + o1) * w.out[2] + o2;
            int64_t inside = 0, padded = 0;
            if (kind_ == Pool::kMax) {
              A best = std::numeric_limits<A>::lowest();
              int64_t best_at = -1;
              ForEachTap(
                  w, o0, o1, o2,
                  [&](int64_t off, int64_t i0, int64_t i1, int64_t i2) {
                    const A v = A(Widen(xp[off]));
                    if (best_at < 0 || v > best) {
                      best = v;
                      // Indices count over the whole of X, row-major or (storage_order 1) column-major
                      // over the spatial dims.
                      best_at = storage_order_ ? i0 + w.in[0] * (i1 + w.in[1] * i2) : off;
                    }
                  },
                  inside, padded);
              y[at] = Narrow<T>(best);
              if (indices) indices[at] = plane * in_sz + best_at;
            } else {
              double sum = 0;
              ForEachTap(
                  w, o0, o1, o2,
                  [&](int64_t off, int64_t, int64_t, int64_t) {
                    const double v = double(Widen(xp[off]));
                    sum += kind_ == Pool::kLp ? std::pow(std::fabs(v), double(p_)) : v;
                  },
                  inside, padded);
              const double r = kind_ == Pool::kLp ? std::pow(sum, 1.0 / double(p_))
                                                  : sum / double(count_include_pad_ ? padded : inside);
              y[at] = Narrow<T>(A(r));
            }
          }
    }});
  }

  Pool kind_;
  bool global_;
  WindowAttrs a_;
  bool count_include_pad_ = false;
  int64_t storage_order_ = 0;
  float p_ = 2;
};

template <Pool kKind, bool kGlobal>
absl::StatusOr<std::unique_ptr<Op>> MakePool(const Node& node) {
  return PoolOp::Create(node, kKind, kGlobal);
}

}  // namespace

std::vector<OpDef> PoolOps() {
  const std::vector<TypeConstraint> t = {{"T", kFloatTypes}};
  const TypeConstraint i = {"I", kInt64};
  const TypeConstraint t8 = {"T", kFloatTypes | TypeSet{DType::kInt8, DType::kUInt8}};
  return {
      {kOnnxDomain, "MaxPool", Versions{1, 7}, "T", "T", t, MakePool<Pool::kMax, false>},
      {kOnnxDomain, "MaxPool", Versions{8, 11}, "T", "T I?", {t[0], i}, MakePool<Pool::kMax, false>},
      {kOnnxDomain, "MaxPool", Versions{12}, "T", "T I?", {t8, i}, MakePool<Pool::kMax, false>},
      {kOnnxDomain, "AveragePool", Versions{1}, "T", "T", t, MakePool<Pool::kAverage, false>},
      {kOnnxDomain, "LpPool", Versions{1}, "T", "T", t, MakePool<Pool::kLp, false>},
      {kOnnxDomain, "GlobalMaxPool", Versions{1}, "T", "T", t, MakePool<Pool::kMax, true>},
      {kOnnxDomain, "GlobalAveragePool", Versions{1}, "T", "T", t, MakePool<Pool::kAverage, true>},
      {kOnnxDomain, "GlobalLpPool", Versions{1}, "T", "T", t, MakePool<Pool::kLp, true>},
  };
}

}  // namespace onnx_mini
