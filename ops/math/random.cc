// Random draws: RandomNormal, RandomUniform, RandomNormalLike,
// RandomUniformLike (1, 22), Bernoulli (15, 22) and Multinomial (7, 22).
//
// Every node draws from its own stream, one element after another, so the
// values do not depend on the thread count. A node with a `seed` starts its
// stream from that seed at every run: the same values at every run, in every
// session. Without a seed each run starts from a fresh seed of the system's
// random source. The stream is NumPy's legacy RandomState (MT19937 seeded
// with the 32-bit seed, 53-bit uniforms, the polar Gaussian, the inversion
// binomial), which ONNX's reference implementation uses, so a seeded node
// gives the reference's values (up to float rounding for Multinomial, which
// the reference does not implement). The rows are `random`: never folded into
// constants at session creation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <random>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

// NumPy's legacy RandomState draws.
class LegacyRandom {
 public:
  explicit LegacyRandom(uint32_t seed) : mt_(seed) {}

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() {
    const uint32_t hi = mt_() >> 5, lo = mt_() >> 6;
    return (double(hi) * 67108864.0 + double(lo)) / 9007199254740992.0;
  }

  // A standard normal: Marsaglia's polar method, two values per accepted
  // pair, the second kept for the next call.
  double Gauss() {
    if (has_gauss_) {
      has_gauss_ = false;
      return gauss_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * Uniform() - 1.0;
      x2 = 2.0 * Uniform() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

  // One Bernoulli(p) draw, p in [0, 1], as NumPy's binomial(1, p): inversion
  // on min(p, 1 - p), one uniform per draw (and a retry past the bound).
  int Bernoulli(double p) {
    const bool flip = p > 0.5;
    const double pp = flip ? 1.0 - p : p, q = 1.0 - pp;
    const double qn = std::exp(std::log(q)), np = pp;
    const double bound = std::min(1.0, np + 10.0 * std::sqrt(np * q + 1));
    int x = 0;
    double px = qn, u = Uniform();
    while (u > px) {
      ++x;
      if (double(x) > bound) {
        x = 0;
        px = qn;
        u = Uniform();
      } else {
        u -= px;
        px = (double(1 - x + 1) * pp * px) / (double(x) * q);
      }
    }
    return flip ? 1 - x : x;
  }

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

// The `seed` attribute (a float): none (or NaN, as ONNX's reference reads
// it) draws a fresh seed at every run; otherwise its integer part, modulo 2^32.
struct Seed {
  bool fixed = false;
  uint32_t value = 0;
};

absl::StatusOr<Seed> ParseSeed(const Node& node) {
  Seed s;
  const Attribute* a = node.attr("seed");
  if (a == nullptr || std::isnan(a->f)) return s;
  if (std::isinf(a->f))
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": seed ", a->f, " is not finite"));
  double m = std::fmod(std::trunc(double(a->f)), 4294967296.0);
  if (m < 0) m += 4294967296.0;
  s.fixed = true;
  s.value = uint32_t(m);
  return s;
}

LegacyRandom MakeStream(const Seed& seed) {
  if (seed.fixed) return LegacyRandom(seed.value);
  uint32_t fresh;
  try {
    fresh = std::random_device{}();
  } catch (...) {  // no system source: the clock still differs between runs
    fresh = uint32_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  }
  return LegacyRandom(fresh);
}

// A `dtype` attribute that must be one of `allowed`; `fallback` when absent.
absl::StatusOr<DType> DtypeAttr(const Node& node, DType fallback, TypeSet allowed) {
  const Attribute* a = node.attr("dtype");
  if (a == nullptr) return fallback;
  if (!IsValidDType(int32_t(a->i)) || int64_t(int32_t(a->i)) != a->i || !allowed.contains(DType(a->i)))
    return absl::InvalidArgumentError(
        absl::StrCat(node.Describe(), ": dtype = ", a->i, " is not one of ", allowed.ToString()));
  return DType(a->i);
}

// ---- RandomNormal, RandomUniform and their Like forms ----

class RandomOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const bool like = node.op_type == "RandomNormalLike" || node.op_type == "RandomUniformLike";
    const bool normal = node.op_type == "RandomNormal" || node.op_type == "RandomNormalLike";
    auto op = std::unique_ptr<RandomOp>(new RandomOp);
    op->normal_ = normal;
    ASSIGN_OR_RETURN(op->seed_, ParseSeed(node));
    // Like forms take the input's type unless dtype says otherwise (checked in Infer).
    ASSIGN_OR_RETURN(op->dtype_, DtypeAttr(node, like ? DType::kUndefined : DType::kFloat, kFloatTypes));
    // Values are drawn in double, then rounded to the type, scaled and shifted in it, as the reference does.
    if (normal) {
      op->scale_ = node.attr_float("scale", 1.0f);
      op->shift_ = node.attr_float("mean", 0.0f);
    } else {
      op->scale_ = double(node.attr_float("high", 1.0f)) - double(node.attr_float("low", 0.0f));
      op->shift_ = node.attr_float("low", 0.0f);
    }
    if (!like) {
      const Attribute* shape = node.attr("shape");
      if (shape == nullptr || shape->type != AttrType::kInts)
        return absl::InvalidArgumentError(node.Describe() + ": attribute 'shape' (a list of ints) is required");
      for (int64_t d : shape->ints)
        if (d < 0)
          return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": shape ", ShapeToString(shape->ints),
                                                         " has a negative dim"));
      if (!CheckedProduct(shape->ints))
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": shape ", ShapeToString(shape->ints), " has too many elements"));
      op->shape_ = shape->ints;
    }
    op->like_ = like;
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    if (!like_) {
      ctx.set_output(0, ValueType::Of(dtype_, shape_));
      return absl::OkStatus();
    }
    ValueType out = ctx.input(0);
    if (dtype_ != DType::kUndefined) out.dtype = dtype_;
    else if (!kFloatTypes.contains(out.dtype))
      return ctx.Error(absl::StrCat("the input is ", LowerName(out.dtype),
                                    ": without a dtype attribute the output takes the input's type, which must be one of ",
                                    kFloatTypes.ToString()));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& y = ctx.output(0);
    LegacyRandom stream = MakeStream(seed_);
    return Dispatch<FloatTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const A scale = Widen(Narrow<T>(A(scale_))), shift = Widen(Narrow<T>(A(shift_)));
      T* out = y.data<T>();
      for (int64_t i = 0; i < y.size(); ++i) {
        const T draw = Narrow<T>(A(normal_ ? stream.Gauss() : stream.Uniform()));
        out[i] = Narrow<T>(A(Widen(Narrow<T>(A(Widen(draw) * scale))) + shift));
      }
    });
  }

 private:
  RandomOp() = default;
  bool normal_ = false, like_ = false;
  Seed seed_;
  DType dtype_ = DType::kFloat;
  double scale_ = 1, shift_ = 0;
  Shape shape_;
};

// ---- Bernoulli ----

class BernoulliOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::unique_ptr<BernoulliOp>(new BernoulliOp);
    ASSIGN_OR_RETURN(op->seed_, ParseSeed(node));
    ASSIGN_OR_RETURN(op->dtype_, DtypeAttr(node, DType::kUndefined, kNumericTypes | kBool));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out = ctx.input(0);
    if (dtype_ != DType::kUndefined) out.dtype = dtype_;
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    ASSIGN_OR_RETURN(MemoryReservation reserved, ctx.Reserve(x.size(), sizeof(double), "the probabilities"));
    std::vector<double> p(size_t(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) {
      p[size_t(i)] = GetDouble(x, i);
      if (!(p[size_t(i)] >= 0 && p[size_t(i)] <= 1))
        return ctx.Error(absl::StrCat("input[", i, "] = ", p[size_t(i)], " is not a probability in [0, 1]"));
    }
    LegacyRandom stream = MakeStream(seed_);
    return Dispatch<Join<NumericTypes, TypeList<bool>>>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y.data<T>();
      for (int64_t i = 0; i < y.size(); ++i) StoreDouble(out, y.dtype(), i, stream.Bernoulli(p[size_t(i)]), CastOptions{});
    });
  }

 private:
  BernoulliOp() = default;
  Seed seed_;
  DType dtype_ = DType::kUndefined;
};

// ---- Multinomial ----

class MultinomialOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::unique_ptr<MultinomialOp>(new MultinomialOp);
    ASSIGN_OR_RETURN(op->seed_, ParseSeed(node));
    ASSIGN_OR_RETURN(op->dtype_, DtypeAttr(node, DType::kInt32, kIndexTypes));
    op->samples_ = node.attr_int("sample_size", 1);
    if (op->samples_ < 1)
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": sample_size ", op->samples_, " must be at least 1"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType out = ValueType::Of(dtype_, {0, samples_});
    if (!x.dims) {
      (*out.dims)[0] = Dim{};
    } else {
      if (x.rank() != 2) return ctx.Error(absl::StrCat("input ", x.ToString(), " must have rank 2: [batch, classes]"));
      (*out.dims)[0] = (*x.dims)[0];
    }
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t batch = x.shape()[0], classes = x.shape()[1];
    if (y.size() == 0) return absl::OkStatus();
    if (classes == 0) return ctx.Error("the input has no classes to sample from");
    std::vector<double> cumulative;
    try {
      cumulative.resize(size_t(classes));
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(absl::StrCat(ctx.node().Describe(), ": out of memory for ", classes, " classes"));
    }
    LegacyRandom stream = MakeStream(seed_);
    for (int64_t b = 0; b < batch; ++b) {
      // The row's log-probabilities, normalized by their maximum (softmax).
      double top = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) {
        const double v = GetDouble(x, b * classes + c);
        if (std::isnan(v) || v == INFINITY)
          return ctx.Error(absl::StrCat("input[", b, ", ", c, "] = ", v, " is not a log-probability"));
        top = std::max(top, v);
      }
      if (top == -INFINITY) return ctx.Error(absl::StrCat("every class of row ", b, " has probability 0 (log -inf)"));
      double total = 0;
      int64_t last = 0;  // the last class with a positive probability
      for (int64_t c = 0; c < classes; ++c) {
        const double e = std::exp(GetDouble(x, b * classes + c) - top);
        total += e;
        if (e > 0) last = c;
        cumulative[size_t(c)] = total;
      }
      for (int64_t s = 0; s < samples_; ++s) {
        const double u = stream.Uniform() * total;
        const int64_t c = std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin();
        const int64_t pick = std::min(c, last);
        if (y.dtype() == DType::kInt32) y.data<int32_t>()[b * samples_ + s] = int32_t(pick);
        else y.data<int64_t>()[b * samples_ + s] = pick;
      }
    }
    return absl::OkStatus();
  }

 private:
  MultinomialOp() = default;
  Seed seed_;
  DType dtype_ = DType::kInt32;
  int64_t samples_ = 1;
};

}  // namespace

std::vector<OpDef> RandomOps() {
  // The Like forms copy the shape of any tensor but a packed or float8 one.
  const TypeSet like_inputs = kNumericTypes | TypeSet{DType::kBool, DType::kString, DType::kComplex64, DType::kComplex128};
  return {
      {kOnnxDomain, "RandomNormal", Versions{1}, "", "T", {{"T", kFloatTypes}}, RandomOp::Create, kRandomDraws},
      {kOnnxDomain, "RandomUniform", Versions{1}, "", "T", {{"T", kFloatTypes}}, RandomOp::Create, kRandomDraws},
      {kOnnxDomain, "RandomNormalLike", Versions{1}, "T1", "T2", {{"T1", like_inputs}, {"T2", kFloatTypes}},
       RandomOp::Create, kRandomDraws},
      {kOnnxDomain, "RandomUniformLike", Versions{1}, "T1", "T2", {{"T1", like_inputs}, {"T2", kFloatTypes}},
       RandomOp::Create, kRandomDraws},
      {kOnnxDomain, "Bernoulli", Versions{15}, "T1", "T2", {{"T1", kFloatTypes}, {"T2", kNumericTypes | kBool}},
       BernoulliOp::Create, kRandomDraws},
      {kOnnxDomain, "Multinomial", Versions{7}, "T1", "T2", {{"T1", kFloatTypes}, {"T2", kIndexTypes}},
       MultinomialOp::Create, kRandomDraws},
  };
}

}  // namespace onnx_mini
