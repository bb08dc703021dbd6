// Signal processing: DFT (17 with the axis attribute, 20 with the axis as an
// input), STFT (17), HannWindow, HammingWindow, BlackmanWindow and
// MelWeightMatrix (17). Transforms run in double through kernels/signal/fft.h (radix-2
// or Bluestein, any length); 16-bit inputs are read and written through it.
//
// Where the ONNX text and its reference implementation differ, the reference
// is followed (it made the upstream cases): a one-sided forward transform of
// complex input returns the first floor(n/2) + 1 bins of the full one, STFT
// without window and frame_length frames the whole signal, and
// MelWeightMatrix spaces its num_mel_bins + 2 edges by (high - low) /
// (num_mel_bins + 2) mels.
#include "kernels/signal/fft.h"


#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <optional>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {

// ---- The transforms (kernels/signal/fft.h) ----

namespace {

constexpr double kPi = 3.14159265358979323846;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

FftPlan::FftPlan(int64_t n) : n_(n), m_(n), bluestein_(!IsPowerOfTwo(n)) {
  if (bluestein_) {
    m_ = 1;
    while (m_ < 2 * n_ - 1) m_ *= 2;
  }
  twiddle_.resize(size_t(m_ / 2));
  for (int64_t k = 0; k < m_ / 2; ++k) {
    const double a = -2 * kPi * double(k) / double(m_);
    twiddle_[size_t(k)] = Cplx(std::cos(a), std::sin(a));
  }
  if (!bluestein_) return;
  // chirp[k] = exp(-pi i k^2 / n), with k^2 reduced mod 2n exactly (the
  // angle is periodic in 2n), so long transforms keep their precision.
  chirp_.resize(size_t(n_));
  int64_t q = 0;  // k^2 mod 2n
  for (int64_t k = 0; k < n_; ++k) {
    const double a = -kPi * double(q) / double(n_);
    chirp_[size_t(k)] = Cplx(std::cos(a), std::sin(a));
    q = (q + 2 * k + 1) % (2 * n_);
  }
  // The convolution kernel conj(chirp[t]) for t in (-n, n), stored circularly.
  filter_.assign(size_t(m_), Cplx(0, 0));
  filter_[0] = std::conj(chirp_[0]);
  for (int64_t t = 1; t < n_; ++t) filter_[size_t(t)] = filter_[size_t(m_ - t)] = std::conj(chirp_[size_t(t)]);
  Radix2(filter_.data());
  for (Cplx& f : filter_) f /= double(m_);  // the inverse FFT's 1/m, folded in once
}

void FftPlan::Radix2(Cplx* a) const {
  const int64_t m = m_;
  for (int64_t i = 1, j = 0; i < m; ++i) {  // bit-reversal permutation
    int64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= m; len <<= 1) {
    const int64_t half = len / 2, step = m / len;
    for (int64_t i = 0; i < m; i += len)
      for (int64_t k = 0; k < half; ++k) {
        const Cplx u = a[i + k], v = a[i + k + half] * twiddle_[size_t(k * step)];
        a[i + k] = u + v;
        a[i + k + half] = u - v;
      }
  }
}

void FftPlan::Transform(Cplx* data, bool inverse, Cplx* scratch) const {
  // The inverse transform is the conjugate of the forward one of the conjugate.
  if (inverse)
    for (int64_t k = 0; k < n_; ++k) data[k] = std::conj(data[k]);
  if (!bluestein_) {
    Radix2(data);
  } else {
    // X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]): a convolution.
    for (int64_t j = 0; j < n_; ++j) scratch[j] = data[j] * chirp_[size_t(j)];
    std::fill(scratch + n_, scratch + m_, Cplx(0, 0));
    Radix2(scratch);
    for (int64_t k = 0; k < m_; ++k) scratch[k] = std::conj(scratch[k] * filter_[size_t(k)]);
    Radix2(scratch);  // the inverse FFT, as the conjugate of a forward one
    for (int64_t k = 0; k < n_; ++k) data[k] = std::conj(scratch[k]) * chirp_[size_t(k)];
  }
  if (inverse)
    for (int64_t k = 0; k < n_; ++k) data[k] = std::conj(data[k]);
}

void ReferenceDft(const Cplx* in, Cplx* out, int64_t n, bool inverse) {
  const double sign = inverse ? 1 : -1;
  for (int64_t k = 0; k < n; ++k) {
    Cplx sum(0, 0);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t r = int64_t((__int128(j) * k) % n);  // exact: the angle is periodic in n
      const double a = sign * 2 * kPi * double(r) / double(n);
      sum += in[j] * Cplx(std::cos(a), std::sin(a));
    }
    out[k] = sum;
  }
}

namespace {

// ---- Shared helpers ----

absl::Status OutOfMemory(const Node& node, const char* what, int64_t n) {
  return absl::ResourceExhaustedError(absl::StrCat(node.Describe(), ": out of memory for ", what, " of length ", n));
}

// The value of a scalar input (rank 0, or rank 1 with one element): nullopt
// while unknown (the session infers again at run time), an error otherwise.
absl::StatusOr<std::optional<int64_t>> ScalarInt(const InferContext& ctx, size_t i, const char* name) {
  const Tensor* t = ctx.value(i);
  if (t == nullptr) return std::optional<int64_t>();
  if (t->shape().size() > 1 || t->size() != 1)
    return ctx.Error(absl::StrCat(name, " must be a scalar, got shape ", ShapeToString(t->shape())));
  return std::optional<int64_t>(IndexValues(*t)[0]);
}

absl::StatusOr<std::optional<double>> ScalarFloat(const InferContext& ctx, size_t i, const char* name) {
  const Tensor* t = ctx.value(i);
  if (t == nullptr) return std::optional<double>();
  if (t->shape().size() > 1 || t->size() != 1)
    return ctx.Error(absl::StrCat(name, " must be a scalar, got shape ", ShapeToString(t->shape())));
  return std::optional<double>(GetDouble(*t, 0));
}

// A 0-or-1 attribute, or an error naming it.
absl::StatusOr<bool> FlagAttr(const Node& node, const char* name, int64_t fallback) {
  const int64_t v = node.attr_int(name, fallback);
  if (v != 0 && v != 1)
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": attribute ", name, " = ", v, " must be 0 or 1"));
  return v == 1;
}

// The output_datatype attribute of the windows and MelWeightMatrix, which must be in `allowed`.
absl::StatusOr<DType> OutputDatatype(const Node& node, TypeSet allowed) {
  const int64_t code = node.attr_int("output_datatype", int64_t(DType::kFloat));
  if (!IsValidDType(int32_t(code)) || int64_t(int32_t(code)) != code || !allowed.contains(DType(code)))
    return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": output_datatype = ", code,
                                                   " is not one of ", allowed.ToString()));
  return DType(code);
}

template <class T>
void Store(T* out, int64_t i, double v) {
  out[i] = Narrow<T>(typename Arith<T>::type(v));
}

// An FftPlan's memory for length n (its twiddles, and Bluestein's chirp and
// filter), charged to the session's budget while the plan lives.
absl::StatusOr<MemoryReservation> ReservePlan(const KernelContext& ctx, int64_t n) {
  const bool bluestein = (n & (n - 1)) != 0;
  int64_t m = n;
  if (bluestein)
    for (m = 1; m < 2 * n - 1;) m *= 2;
  return ctx.Reserve(m / 2 + (bluestein ? n + m : 0), sizeof(Cplx), "the FFT plan");
}

// Runs body(line, buffer, scratch) for lines [0, lines), in parallel when the
// work is large, each thread with its own buffer of `length` values and the
// plan's scratch.
template <class Body>
absl::Status ForEachLine(const KernelContext& ctx, const FftPlan& fft, int64_t lines, int64_t length, Body body) {
  const Node& node = ctx.node();
  const int threads = ctx.threads();
  const int64_t per = length + fft.scratch_size();
  // A line's transform: some 4 units of work per value of its buffer.
  const int nt = int(std::min<int64_t>(lines, ThreadsForWork(threads, 4.0 * double(lines) * double(per))));
  std::vector<Cplx> work;
  ASSIGN_OR_RETURN(const MemoryReservation charge, ctx.Reserve(int64_t(nt) * per, sizeof(Cplx), "the transform buffers"));
  try {
    work.resize(size_t(nt) * size_t(per));
  } catch (const std::bad_alloc&) {
    return OutOfMemory(node, "the transform buffers", length);
  }
  // nt chunks, each with its own buffer (a chunk runs on one thread at a time).
  const int64_t grain = (lines + nt - 1) / nt;
  ParallelFor(nt, lines, grain, [&](int64_t begin, int64_t end) {
    Cplx* buffer = work.data() + begin / grain * per;
    for (int64_t line = begin; line < end; ++line) body(line, buffer, buffer + length);
  });
  return absl::OkStatus();
}

// ---- DFT ----

// The input seen as [outer, in_len, inner, in_c] around the axis; the output
// as [outer, out_len, inner, out_c].
struct DftPlan : OpPlan {
  int64_t outer = 0, in_len = 0, inner = 0, in_c = 1;
  int64_t n = 0, out_len = 0, out_c = 2;
};

class DftOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const bool inverse, FlagAttr(node, "inverse", 0));
    ASSIGN_OR_RETURN(const bool onesided, FlagAttr(node, "onesided", 0));
    return std::unique_ptr<Op>(new DftOp(inverse, onesided, node.opset < 20, node.attr_int("axis", 1)));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType out;
    out.dtype = x.dtype;
    const bool irfft = inverse_ && onesided_;
    if (!x.dims) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    const int64_t r = x.rank();
    if (r < 2)
      return ctx.Error(absl::StrCat("input ", x.ToString(), " must have rank 2 or more: [signal dims..., 1 or 2]"));
    const Dim& last = x.dims->back();
    if (last.known() && last.value != 1 && last.value != 2)
      return ctx.Error(absl::StrCat("the last dim of input ", x.ToString(),
                                    " must be 1 (real) or 2 (real and imaginary parts)"));
    out.dims = std::vector<Dim>(size_t(r));
    out.dims->back() = Dim::Known(irfft ? 1 : 2);
    int64_t axis = axis_attr_;
    if (!axis_is_attr_) {
      axis = -2;
      if (ctx.has_input(2)) {
        ASSIGN_OR_RETURN(std::optional<int64_t> a, ScalarInt(ctx, 2, "axis"));
        if (!a) {  // the dims are known once the axis is
          ctx.set_output(0, out);
          return absl::OkStatus();
        }
        axis = *a;
      }
    }
    if (!(axis >= -r && axis <= -2) && !(axis >= 0 && axis <= r - 2))
      return ctx.Error(absl::StrCat("axis ", axis, " is out of range for input ", x.ToString(), ": it must be in [", -r,
                                    ", -2] or [0, ", r - 2, "] (the last dim holds the complex parts)"));
    if (axis < 0) axis += r;
    for (int64_t d = 0; d + 1 < r; ++d) (*out.dims)[size_t(d)] = (*x.dims)[size_t(d)];
    const Dim& len = (*x.dims)[size_t(axis)];
    std::optional<int64_t> n;
    if (ctx.has_input(1)) {
      ASSIGN_OR_RETURN(n, ScalarInt(ctx, 1, "dft_length"));
      if (n && *n < 1) return ctx.Error(absl::StrCat("dft_length ", *n, " must be at least 1"));
    } else if (len.known()) {
      // The inverse of a one-sided spectrum of L bins is 2 (L - 1) long by default.
      if (irfft && len.value > std::numeric_limits<int64_t>::max() / 2)
        return ctx.Error(absl::StrCat("input ", x.ToString(), " is too long along axis ", axis));
      n = irfft ? 2 * (len.value - 1) : len.value;
      if (*n < 1)
        return ctx.Error(absl::StrCat("the default DFT length of input ", x.ToString(), " along axis ", axis, " is ",
                                      *n, irfft ? " (2 * (dim - 1) for an inverse one-sided DFT)" : "",
                                      "; it must be at least 1"));
    }
    (*out.dims)[size_t(axis)] = n ? Dim::Known(onesided_ && !inverse_ ? *n / 2 + 1 : *n) : Dim{};
    ctx.set_output(0, out);
    const std::optional<Shape> xs = x.concrete_shape();
    if (!xs || !n) return absl::OkStatus();
    auto plan = std::make_shared<DftPlan>();
    // Only an empty input's dims can overflow (then there is nothing to transform).
    plan->outer = CheckedProduct(*xs, 0, size_t(axis)).value_or(0);
    plan->inner = CheckedProduct(*xs, size_t(axis) + 1, size_t(r - 1)).value_or(0);
    plan->in_len = (*xs)[size_t(axis)];
    plan->in_c = xs->back();
    plan->n = *n;
    plan->out_len = (*out.dims)[size_t(axis)].value;
    plan->out_c = irfft ? 1 : 2;
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const DftPlan& p = ctx.plan<DftPlan>();
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t lines = p.outer * p.inner;
    if (lines == 0 || y.size() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const MemoryReservation plan_charge, ReservePlan(ctx, p.n));
    std::optional<FftPlan> fft;
    try {
      fft.emplace(p.n);
    } catch (const std::bad_alloc&) {
      return OutOfMemory(ctx.node(), "the DFT plan", p.n);
    }
    const bool irfft = inverse_ && onesided_;
    const double scale = inverse_ ? 1.0 / double(p.n) : 1.0;
    const int64_t n = p.n;
    absl::Status status;
    RETURN_IF_ERROR(Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const int64_t in_step = p.inner * p.in_c, out_step = p.inner * p.out_c;
      status = ForEachLine(ctx, *fft, lines, n, [&](int64_t line, Cplx* buf, Cplx* scratch) {
        const int64_t o = line / p.inner, i = line % p.inner;
        const T* src = in + (o * p.in_len * p.inner + i) * p.in_c;
        auto at = [&](int64_t k) {
          const T* e = src + k * in_step;
          return Cplx(double(Widen(e[0])), p.in_c == 2 ? double(Widen(e[1])) : 0.0);
        };
        if (irfft) {
          // Bins 0..n/2 as given (truncated or zero-padded), the rest by
          // conjugate symmetry; the imaginary parts that symmetry leaves
          // undefined (bin 0, bin n/2) do not reach the real output.
          const int64_t given = std::min(n / 2 + 1, p.in_len);
          for (int64_t k = 0; k < n; ++k) {
            const int64_t src_k = k <= n / 2 ? k : n - k;
            const Cplx v = src_k < given ? at(src_k) : Cplx(0, 0);
            buf[k] = k <= n / 2 ? v : std::conj(v);
          }
        } else {
          const int64_t given = std::min(n, p.in_len);
          for (int64_t k = 0; k < given; ++k) buf[k] = at(k);
          std::fill(buf + given, buf + n, Cplx(0, 0));
        }
        fft->Transform(buf, inverse_, scratch);
        T* dst = out + (o * p.out_len * p.inner + i) * p.out_c;
        for (int64_t k = 0; k < p.out_len; ++k) {
          Store(dst, k * out_step, buf[k].real() * scale);
          if (p.out_c == 2) Store(dst, k * out_step + 1, buf[k].imag() * scale);
        }
      });
    }));
    return status;
  }

 private:
  DftOp(bool inverse, bool onesided, bool axis_is_attr, int64_t axis)
      : inverse_(inverse), onesided_(onesided), axis_is_attr_(axis_is_attr), axis_attr_(axis) {}
  bool inverse_, onesided_, axis_is_attr_;
  int64_t axis_attr_;
};

// ---- STFT ----

struct StftPlan : OpPlan {
  int64_t batch = 0, signal_len = 0, in_c = 1;
  int64_t frames = 0, step = 0, frame_len = 0, bins = 0;
};

class StftOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const bool onesided, FlagAttr(node, "onesided", 1));
    return std::unique_ptr<Op>(new StftOp(onesided));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& s = ctx.input(0);
    ValueType out = ValueType::Of(s.dtype, {});
    out.dims = std::vector<Dim>(4);
    (*out.dims)[3] = Dim::Known(2);
    if (s.dims) {
      if (s.rank() != 3)
        return ctx.Error(absl::StrCat("signal ", s.ToString(), " must have rank 3: [batch, length, 1 or 2]"));
      const Dim& c = (*s.dims)[2];
      if (c.known() && c.value != 1 && c.value != 2)
        return ctx.Error(absl::StrCat("the last dim of signal ", s.ToString(),
                                      " must be 1 (real) or 2 (real and imaginary parts)"));
      (*out.dims)[0] = (*s.dims)[0];
    }
    std::optional<int64_t> window_len;
    if (ctx.has_input(2) && ctx.input(2).dims) {
      const ValueType& w = ctx.input(2);
      if (w.rank() != 1) return ctx.Error(absl::StrCat("window ", w.ToString(), " must have rank 1"));
      if ((*w.dims)[0].known()) window_len = (*w.dims)[0].value;
    }
    ctx.set_output(0, out);
    ASSIGN_OR_RETURN(const std::optional<int64_t> step, ScalarInt(ctx, 1, "frame_step"));
    if (step && *step < 1) return ctx.Error(absl::StrCat("frame_step ", *step, " must be at least 1"));
    std::optional<int64_t> frame_len;
    if (ctx.has_input(3)) {
      ASSIGN_OR_RETURN(frame_len, ScalarInt(ctx, 3, "frame_length"));
      if (!frame_len) return absl::OkStatus();
      if (*frame_len < 1) return ctx.Error(absl::StrCat("frame_length ", *frame_len, " must be at least 1"));
      if (window_len && *window_len != *frame_len)
        return ctx.Error(absl::StrCat("window length ", *window_len, " differs from frame_length ", *frame_len));
    } else if (ctx.has_input(2)) {
      frame_len = window_len;
      if (frame_len && *frame_len < 1) return ctx.Error("the window is empty: frames need at least one sample");
    } else if (s.dims && (*s.dims)[1].known()) {
      frame_len = (*s.dims)[1].value;  // no window and no frame_length: one frame of the whole signal
      if (*frame_len < 1) return ctx.Error("the signal is empty and neither window nor frame_length is given");
    }
    if (!frame_len) return absl::OkStatus();
    (*out.dims)[2] = Dim::Known(onesided_ ? *frame_len / 2 + 1 : *frame_len);
    if (step && s.dims && (*s.dims)[1].known()) {
      const int64_t len = (*s.dims)[1].value;
      if (len < *frame_len)
        return ctx.Error(absl::StrCat("signal ", s.ToString(), " is shorter than one frame of ", *frame_len, " samples"));
      (*out.dims)[1] = Dim::Known(1 + (len - *frame_len) / *step);
    }
    ctx.set_output(0, out);
    const std::optional<Shape> ss = s.concrete_shape();
    if (!ss || !step || !out.concrete_shape()) return absl::OkStatus();
    auto plan = std::make_shared<StftPlan>();
    plan->batch = (*ss)[0];
    plan->signal_len = (*ss)[1];
    plan->in_c = (*ss)[2];
    plan->frames = (*out.dims)[1].value;
    plan->step = *step;
    plan->frame_len = *frame_len;
    plan->bins = (*out.dims)[2].value;
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const StftPlan& p = ctx.plan<StftPlan>();
    const Tensor& s = *ctx.input(0);
    const Tensor* w = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    const int64_t lines = p.batch * p.frames;
    if (y.size() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const MemoryReservation plan_charge, ReservePlan(ctx, p.frame_len));
    std::optional<FftPlan> fft;
    try {
      fft.emplace(p.frame_len);
    } catch (const std::bad_alloc&) {
      return OutOfMemory(ctx.node(), "the STFT plan", p.frame_len);
    }
    absl::Status status;
    RETURN_IF_ERROR(Dispatch<FloatTypes>(ctx, s.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = s.data<T>();
      const T* window = w ? w->data<T>() : nullptr;
      T* out = y.data<T>();
      status = ForEachLine(ctx, *fft, lines, p.frame_len, [&](int64_t line, Cplx* buf, Cplx* scratch) {
        const int64_t b = line / p.frames, f = line % p.frames;
        const T* src = in + (b * p.signal_len + f * p.step) * p.in_c;
        for (int64_t j = 0; j < p.frame_len; ++j) {
          const double wj = window ? double(Widen(window[j])) : 1.0;
          const T* e = src + j * p.in_c;
          buf[j] = Cplx(double(Widen(e[0])) * wj, p.in_c == 2 ? double(Widen(e[1])) * wj : 0.0);
        }
        fft->Transform(buf, false, scratch);
        T* dst = out + line * p.bins * 2;
        for (int64_t k = 0; k < p.bins; ++k) {
          Store(dst, 2 * k, buf[k].real());
          Store(dst, 2 * k + 1, buf[k].imag());
        }
      });
    }));
    return status;
  }

 private:
  explicit StftOp(bool onesided) : onesided_(onesided) {}
  bool onesided_;
};

// ---- HannWindow, HammingWindow, BlackmanWindow ----

// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1.
struct WindowCoefficients {
  double a0, a1, a2;
};

class WindowOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const DType dtype, OutputDatatype(node, kNumericTypes));
    ASSIGN_OR_RETURN(const bool periodic, FlagAttr(node, "periodic", 1));
    WindowCoefficients c = {0.5, 0.5, 0};                                    // Hann
    if (node.op_type == "HammingWindow") c = {25.0 / 46.0, 21.0 / 46.0, 0};  // as ONNX's reference: 0.543..., 0.456...
    if (node.op_type == "BlackmanWindow") c = {0.42, 0.5, 0.08};
    return std::unique_ptr<Op>(new WindowOp(dtype, periodic, c));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out = ValueType::Of(dtype_, {});
    out.dims = std::vector<Dim>(1);
    ASSIGN_OR_RETURN(const std::optional<int64_t> size, ScalarInt(ctx, 0, "size"));
    if (size && *size < 0) return ctx.Error(absl::StrCat("size ", *size, " must not be negative"));
    if (size) (*out.dims)[0] = Dim::Known(*size);
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const int64_t size = y.size();
    const double n = periodic_ ? double(size) : double(size - 1);
    return Dispatch<NumericTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y.data<T>();
      for (int64_t i = 0; i < size; ++i) {
        // A symmetric window of one point divides 0 by 0: its limit, 1, as NumPy and PyTorch give.
        const double a = n > 0 ? 2 * kPi * double(i) / n : 0.0;
        const double v = n > 0 ? c_.a0 - c_.a1 * std::cos(a) + c_.a2 * std::cos(2 * a) : 1.0;
        StoreDouble(out, y.dtype(), i, v, CastOptions{});
      }
    });
  }

 private:
  WindowOp(DType dtype, bool periodic, WindowCoefficients c) : dtype_(dtype), periodic_(periodic), c_(c) {}
  DType dtype_;
  bool periodic_;
  WindowCoefficients c_;
};

// ---- MelWeightMatrix ----

struct MelPlan : OpPlan {
  std::vector<int64_t> edges;  // num_mel_bins + 2 spectrogram bins: each triangle's left, center and right
};

class MelWeightMatrixOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    ASSIGN_OR_RETURN(const DType dtype, OutputDatatype(node, kNumericTypes));
    return std::unique_ptr<Op>(new MelWeightMatrixOp(dtype));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out = ValueType::Of(dtype_, {});
    out.dims = std::vector<Dim>(2);
    ctx.set_output(0, out);
    ASSIGN_OR_RETURN(const std::optional<int64_t> mel_bins, ScalarInt(ctx, 0, "num_mel_bins"));
    ASSIGN_OR_RETURN(const std::optional<int64_t> dft_length, ScalarInt(ctx, 1, "dft_length"));
    ASSIGN_OR_RETURN(const std::optional<int64_t> sample_rate, ScalarInt(ctx, 2, "sample_rate"));
    ASSIGN_OR_RETURN(const std::optional<double> lower, ScalarFloat(ctx, 3, "lower_edge_hertz"));
    ASSIGN_OR_RETURN(const std::optional<double> upper, ScalarFloat(ctx, 4, "upper_edge_hertz"));
    if (mel_bins && *mel_bins < 1) return ctx.Error(absl::StrCat("num_mel_bins ", *mel_bins, " must be at least 1"));
    if (dft_length && *dft_length < 1) return ctx.Error(absl::StrCat("dft_length ", *dft_length, " must be at least 1"));
    if (sample_rate && *sample_rate < 1)
      return ctx.Error(absl::StrCat("sample_rate ", *sample_rate, " must be at least 1"));
    if (dft_length) (*out.dims)[0] = Dim::Known(*dft_length / 2 + 1);
    if (mel_bins) (*out.dims)[1] = Dim::Known(*mel_bins);
    ctx.set_output(0, out);
    if (!mel_bins || !dft_length || !sample_rate || !lower || !upper) return absl::OkStatus();
    if (!(*lower >= 0 && *lower <= *upper && std::isfinite(*upper)))
      return ctx.Error(absl::StrCat("the edges lower_edge_hertz ", *lower, " and upper_edge_hertz ", *upper,
                                    " must satisfy 0 <= lower <= upper, both finite"));
    const std::optional<int64_t> count = CheckedMul(*dft_length / 2 + 1, *mel_bins);
    if (!count || *count > int64_t(kMaxTensorBytes))
      return ctx.Error(absl::StrCat("the output [", *dft_length / 2 + 1, ", ", *mel_bins, "] is too large"));
    // num_mel_bins + 2 points evenly spaced on the mel scale, mapped to
    // spectrogram bins floor((dft_length + 1) f / sample_rate).
    const int64_t bins = *dft_length / 2 + 1;
    const auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
    const double low = mel(*lower), step = (mel(*upper) - low) / double(*mel_bins + 2);
    auto plan = std::make_shared<MelPlan>();
    try {
      plan->edges.resize(size_t(*mel_bins + 2));
    } catch (const std::bad_alloc&) {
      return OutOfMemory(ctx.node(), "the mel bands", *mel_bins);
    }
    for (int64_t i = 0; i < *mel_bins + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (double(i) * step + low) / 2595.0) - 1.0);
      const double bin = std::floor((double(*dft_length) + 1) * hz / double(*sample_rate));
      // The last band's right edge may lie one past the spectrogram (it is never written).
      const int64_t limit = i == *mel_bins + 1 ? bins : bins - 1;
      if (!(bin >= 0 && bin <= double(limit)))
        return ctx.Error(absl::StrCat("upper_edge_hertz ", *upper, " maps mel edge ", i, " to spectrogram bin ", bin,
                                      ", beyond the ", bins, " bins of dft_length ", *dft_length, " at sample_rate ",
                                      *sample_rate, " (upper_edge_hertz must not exceed about sample_rate / 2)"));
      plan->edges[size_t(i)] = int64_t(bin);
    }
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const MelPlan& p = ctx.plan<MelPlan>();
    Tensor& y = ctx.output(0);
    const int64_t mel_bins = int64_t(p.edges.size()) - 2;
    std::vector<double> w;
    try {
      w.assign(size_t(y.size()), 0.0);
    } catch (const std::bad_alloc&) {
      return OutOfMemory(ctx.node(), "the mel weights", y.size());
    }
    // Triangles rising from the left edge to 1 at the center, falling to the right edge.
    for (int64_t m = 0; m < mel_bins; ++m) {
      const int64_t left = p.edges[size_t(m)], center = p.edges[size_t(m + 1)], right = p.edges[size_t(m + 2)];
      if (center == left) w[size_t(center * mel_bins + m)] = 1;
      for (int64_t j = left; j <= center && center > left; ++j)
        w[size_t(j * mel_bins + m)] = double(j - left) / double(center - left);
      for (int64_t j = center; j < right; ++j) w[size_t(j * mel_bins + m)] = double(right - j) / double(right - center);
    }
    return Dispatch<NumericTypes>(ctx, y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y.data<T>();
      for (int64_t i = 0; i < y.size(); ++i) StoreDouble(out, y.dtype(), i, w[size_t(i)], CastOptions{});
    });
  }

 private:
  explicit MelWeightMatrixOp(DType dtype) : dtype_(dtype) {}
  DType dtype_;
};

}  // namespace

std::vector<OpDef> SignalOps() {
  const TypeConstraint lengths = {"T2", kIndexTypes};
  return {
      {"", "DFT", 17, 19, "T1 T2?", "T1", {{"T1", kFloatTypes}, lengths}, DftOp::Create},
      {"", "DFT", 20, 0, "T1 T2? I?", "T1", {{"T1", kFloatTypes}, lengths, {"I", kInt64}}, DftOp::Create},
      {"", "STFT", 17, 0, "T1 T2 T1? T2?", "T1", {{"T1", kFloatTypes}, lengths}, StftOp::Create},
      {"", "HannWindow", 17, 0, "T1", "T2", {{"T1", kIndexTypes}, {"T2", kNumericTypes}}, WindowOp::Create},
      {"", "HammingWindow", 17, 0, "T1", "T2", {{"T1", kIndexTypes}, {"T2", kNumericTypes}}, WindowOp::Create},
      {"", "BlackmanWindow", 17, 0, "T1", "T2", {{"T1", kIndexTypes}, {"T2", kNumericTypes}}, WindowOp::Create},
      {"", "MelWeightMatrix", 17, 0, "T1 T1 T1 T2 T2", "T3",
       {{"T1", kIndexTypes}, {"T2", kFloatTypes}, {"T3", kNumericTypes}}, MelWeightMatrixOp::Create},
  };
}

}  // namespace onnx_mini
