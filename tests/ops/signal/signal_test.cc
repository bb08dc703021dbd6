// ops/signal/signal.cc: the FFT against the plain DFT over many lengths; DFT (17,
// 20) on impulses and sines against closed forms, round trips, one-sided
// forms, padding and truncation; STFT against windowed frames; the windows
// against their formulas; MelWeightMatrix against known matrices; errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>

#include "kernels/signal/fft.h"
#include "runtime/element.h"
#include "tests/ops/budget_util.h"
#include "tests/ops/op_tester.h"

namespace onnx_mini {
namespace {

using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

Tensor Typed(DType dt, const std::vector<double>& v, const Shape& s) {
  Tensor t = Tensor::Zeros(dt, s);
  for (int64_t i = 0; i < t.size(); ++i) SetDouble(t, i, v[size_t(i)]);
  return t;
}

std::vector<Cplx> RandomSignal(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Cplx> x(static_cast<size_t>(n));
  for (Cplx& v : x) v = Cplx(u(rng), u(rng));
  return x;
}

// The [..., 2] tensor of a complex sequence, shape [1, n, 2].
Tensor ComplexTensor(DType dt, const std::vector<Cplx>& x) {
  std::vector<double> v;
  for (const Cplx& c : x) {
    v.push_back(c.real());
    v.push_back(c.imag());
  }
  return Typed(dt, v, {1, int64_t(x.size()), 2});
}

Cplx At(const Tensor& t, int64_t k) { return Cplx(GetDouble(t, 2 * k), GetDouble(t, 2 * k + 1)); }

TEST(Fft, AgreesWithThePlainDftAtEveryLength) {
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {96, 97, 128, 255, 256, 1000, 1009, 1024}) lengths.push_back(n);
  for (int64_t n : lengths)
    for (bool inverse : {false, true}) {
      const std::vector<Cplx> x = RandomSignal(n, uint32_t(n));
      std::vector<Cplx> want(static_cast<size_t>(n));
      ReferenceDft(x.data(), want.data(), n, inverse);
      FftPlan plan(n);
      std::vector<Cplx> got = x, scratch(static_cast<size_t>(plan.scratch_size()));
      plan.Transform(got.data(), inverse, scratch.data());
      double worst = 0;
      for (int64_t k = 0; k < n; ++k) worst = std::max(worst, std::abs(got[size_t(k)] - want[size_t(k)]));
      // Both sums have magnitude about sqrt(n); the FFT's error grows like log n.
      EXPECT_LT(worst, 1e-10 * std::sqrt(double(n)) * (1 + std::log2(double(n)))) << "n " << n << " inverse " << inverse;
    }
}

TEST(DFT, ImpulseGivesAPureRotation) {
  // x = delta at j0: X[k] = exp(-2 pi i k j0 / n).
  for (int64_t n : {8, 10, 7}) {
    for (int64_t j0 : {int64_t(0), int64_t(1), n - 1}) {
      std::vector<double> x(size_t(n), 0.0);
      x[size_t(j0)] = 1;
      auto y = RunOne(20, "DFT", {Typed(DType::kFloat, x, {1, n, 1})});
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ(y->shape(), (Shape{1, n, 2}));
      for (int64_t k = 0; k < n; ++k) {
        const double a = -2 * kPi * double(k * j0) / double(n);
        EXPECT_NEAR(GetDouble(*y, 2 * k), std::cos(a), 1e-6) << n << " " << j0 << " " << k;
        EXPECT_NEAR(GetDouble(*y, 2 * k + 1), std::sin(a), 1e-6) << n << " " << j0 << " " << k;
      }
    }
  }
}

TEST(DFT, SinesLandInTheirBins) {
  // cos(2 pi f j / n) has n / 2 in bins f and n - f; sin has -n/2 i and +n/2 i there.
  const int64_t n = 12, f = 3;
  std::vector<double> c, s;
  for (int64_t j = 0; j < n; ++j) {
    c.push_back(std::cos(2 * kPi * double(f * j) / double(n)));
    s.push_back(std::sin(2 * kPi * double(f * j) / double(n)));
  }
  for (DType dt : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kBFloat16 ? 0.2 : dt == DType::kFloat16 ? 0.02 : 1e-5;
    auto yc = RunOne(17, "DFT", {Typed(dt, c, {1, n, 1})});
    auto ys = RunOne(17, "DFT", {Typed(dt, s, {1, n, 1})});
    ASSERT_TRUE(yc.ok() && ys.ok()) << yc.status() << ys.status();
    for (int64_t k = 0; k < n; ++k) {
      const bool hit = k == f || k == n - f;
      EXPECT_NEAR(At(*yc, k).real(), hit ? n / 2.0 : 0, tol) << LowerName(dt) << " " << k;
      EXPECT_NEAR(At(*yc, k).imag(), 0, tol) << LowerName(dt) << " " << k;
      EXPECT_NEAR(At(*ys, k).real(), 0, tol) << LowerName(dt) << " " << k;
      EXPECT_NEAR(At(*ys, k).imag(), k == f ? -n / 2.0 : k == n - f ? n / 2.0 : 0, tol) << LowerName(dt) << " " << k;
    }
  }
}

TEST(DFT, InverseUndoesTheForwardTransform) {
  for (int64_t n : {1, 5, 12, 16, 31}) {
    const std::vector<Cplx> x = RandomSignal(n, 7);
    for (int64_t opset : {17, 20}) {
      auto y = RunOne(opset, "DFT", {ComplexTensor(DType::kDouble, x)});
      ASSERT_TRUE(y.ok()) << y.status();
      auto back = RunOne(opset, "DFT", {*y}, [](onnx::NodeProto& p) { SetAttr(p, "inverse", int64_t(1)); });
      ASSERT_TRUE(back.ok()) << back.status();
      ASSERT_EQ(back->shape(), (Shape{1, n, 2}));
      for (int64_t k = 0; k < n; ++k) {
        EXPECT_NEAR(At(*back, k).real(), x[size_t(k)].real(), 1e-12) << n;
        EXPECT_NEAR(At(*back, k).imag(), x[size_t(k)].imag(), 1e-12) << n;
      }
    }
  }
}

TEST(DFT, AlongAnyAxisMatchesThePlainDft) {
  // [2, 5, 6, 2]: transform along axis 1 (17: attribute; 20: input, also as -3) or 2.
  const Shape shape = {2, 5, 6, 2};
  std::vector<double> v;
  const std::vector<Cplx> sig = RandomSignal(60, 3);
  for (const Cplx& c : sig) {
    v.push_back(c.real());
    v.push_back(c.imag());
  }
  const Tensor x = Typed(DType::kDouble, v, shape);
  for (int64_t axis : {1, 2}) {
    const int64_t n = shape[size_t(axis)];
    auto y17 = RunOne(17, "DFT", {x}, [axis](onnx::NodeProto& p) { SetAttr(p, "axis", axis); });
    auto y20 = RunOne(20, "DFT", {x, Tensor(), I({axis}, {})});
    auto y20n = RunOne(20, "DFT", {x, Tensor(), I({axis - 4}, {})});
    for (auto* y : {&y17, &y20, &y20n}) ASSERT_TRUE(y->ok()) << y->status();
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < (axis == 1 ? 6 : 5); ++b) {
        // The line: index (a, j, b) for axis 1, (a, b, j) for axis 2.
        auto flat = [&](int64_t j) { return axis == 1 ? (a * 5 + j) * 6 + b : (a * 5 + b) * 6 + j; };
        std::vector<Cplx> line(static_cast<size_t>(n)), want(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) line[size_t(j)] = sig[size_t(flat(j))];
        ReferenceDft(line.data(), want.data(), n, false);
        for (int64_t k = 0; k < n; ++k)
          for (auto* y : {&y17, &y20, &y20n}) {
            EXPECT_NEAR(At(**y, flat(k)).real(), want[size_t(k)].real(), 1e-12);
            EXPECT_NEAR(At(**y, flat(k)).imag(), want[size_t(k)].imag(), 1e-12);
          }
      }
  }
  // DFT-20's default axis is -2: here 2.
  auto def = RunOne(20, "DFT", {x});
  auto two = RunOne(20, "DFT", {x, Tensor(), I({2}, {})});
  ASSERT_TRUE(def.ok() && two.ok());
  EXPECT_EQ(Values(*def), Values(*two));
}

TEST(DFT, LengthPadsWithZerosOrTruncates) {
  const std::vector<Cplx> x = RandomSignal(6, 11);
  for (int64_t n : {4, 6, 9, 16}) {
    for (DType len_type : {DType::kInt32, DType::kInt64}) {
      Tensor len = Tensor::Zeros(len_type, {});
      SetDouble(len, 0, double(n));
      auto y = RunOne(20, "DFT", {ComplexTensor(DType::kDouble, x), len});
      ASSERT_TRUE(y.ok()) << y.status();
      ASSERT_EQ(y->shape(), (Shape{1, n, 2}));
      std::vector<Cplx> line(size_t(n), Cplx(0, 0)), want(static_cast<size_t>(n));
      for (int64_t j = 0; j < std::min<int64_t>(n, 6); ++j) line[size_t(j)] = x[size_t(j)];
      ReferenceDft(line.data(), want.data(), n, false);
      for (int64_t k = 0; k < n; ++k) EXPECT_NEAR(std::abs(At(*y, k) - want[size_t(k)]), 0, 1e-12) << n;
    }
  }
}

// The FFT plan (Bluestein's chirp and filter for a length that is not a
// power of two) and the per-thread lines count against the memory budget.
TEST(DFT, PlanAndBuffersCountAgainstTheMemoryLimit) {
  const std::vector<Cplx> x = RandomSignal(6, 11);
  Tensor len = Tensor::Zeros(DType::kInt64, {});
  SetDouble(len, 0, double((1 << 20) + 1));  // Y 16 MiB; the plan ~117 MiB
  OpTester t;
  t.op = "DFT";
  t.opset = 20;
  t.inputs = {ComplexTensor(DType::kDouble, x), len};
  ExpectOverBudget(t, size_t(64) << 20);
  // A short transform fits a small limit and gives the plain DFT.
  SetDouble(len, 0, 1000.0);
  t.inputs = {ComplexTensor(DType::kDouble, x), len};
  t.memory_limit = size_t(1) << 20;
  absl::StatusOr<Tensor> y = t.RunOne();
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<Cplx> line(1000, Cplx(0, 0)), want(1000);
  for (size_t j = 0; j < 6; ++j) line[j] = x[j];
  ReferenceDft(line.data(), want.data(), 1000, false);
  for (int64_t k = 0; k < 1000; ++k) EXPECT_NEAR(std::abs(At(*y, k) - want[size_t(k)]), 0, 1e-9);
}

TEST(DFT, OneSidedForwardAndInverseRoundTrip) {
  for (int64_t n : {8, 9, 10, 1, 2}) {
    std::vector<double> x;
    for (int64_t j = 0; j < n; ++j) x.push_back(std::sin(double(j) * 1.3) + 0.25 * double(j));
    auto half = RunOne(20, "DFT", {Typed(DType::kDouble, x, {1, n, 1})},
                       [](onnx::NodeProto& p) { SetAttr(p, "onesided", int64_t(1)); });
    ASSERT_TRUE(half.ok()) << half.status();
    ASSERT_EQ(half->shape(), (Shape{1, n / 2 + 1, 2}));
    auto full = RunOne(20, "DFT", {Typed(DType::kDouble, x, {1, n, 1})});
    ASSERT_TRUE(full.ok());
    for (int64_t k = 0; k <= n / 2; ++k) EXPECT_NEAR(std::abs(At(*half, k) - At(*full, k)), 0, 1e-12);
    // Back to the signal: the default length 2 (bins - 1) fits even n; odd n needs dft_length.
    std::vector<Tensor> in = {*half};
    if (n % 2 == 1 || n == 1) in.push_back(I({n}, {}));
    auto back = RunOne(20, "DFT", in, [](onnx::NodeProto& p) {
      SetAttr(p, "onesided", int64_t(1));
      SetAttr(p, "inverse", int64_t(1));
    });
    ASSERT_TRUE(back.ok()) << n << ": " << back.status();
    ASSERT_EQ(back->shape(), (Shape{1, n, 1}));
    for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(GetDouble(*back, j), x[size_t(j)], 1e-12) << n << " " << j;
  }
}

TEST(DFT, InverseOneSidedIgnoresTheUndefinedImaginaryParts) {
  // Bins 0 and n/2 of a real signal's spectrum are real: their imaginary
  // parts do not change the real output (as NumPy's irfft).
  Tensor spec = Typed(DType::kFloat, {4, 5, 1, 0, 2, 7}, {1, 3, 2});  // n = 4: bins 0, 1, 2
  auto y = RunOne(20, "DFT", {spec}, [](onnx::NodeProto& p) {
    SetAttr(p, "onesided", int64_t(1));
    SetAttr(p, "inverse", int64_t(1));
  });
  ASSERT_TRUE(y.ok()) << y.status();
  // The full spectrum is 4, 1, 2, 1: x[j] = (4 + 2 cos(pi j / 2) + 2 (-1)^j) / 4.
  const std::vector<double> want = {2, 0.5, 1, 0.5};
  for (int64_t j = 0; j < 4; ++j) EXPECT_NEAR(GetDouble(*y, j), want[size_t(j)], 1e-6) << j;
}

TEST(DFT, ThreadsAndConstantInputsDoNotChangeTheResult) {
  // 64 lines of 500 (Bluestein) or 512 (radix-2) points: enough work to run in parallel.
  for (int64_t n : {500, 512}) {
    const std::vector<Cplx> sig = RandomSignal(64 * n, 9);
    std::vector<double> v;
    for (const Cplx& c : sig) {
      v.push_back(c.real());
      v.push_back(c.imag());
    }
    const Tensor x = Typed(DType::kFloat, v, {64, n, 2});
    // dft_length and axis as run-time inputs (planned at every run) or initializers (planned once).
    auto one = RunNode(20, "DFT", {x, I({n}, {}), I({1}, {})}, 1, {}, {false, false, false}, 1);
    auto two = RunNode(20, "DFT", {x, I({n}, {}), I({1}, {})}, 1, {}, {false, true, true}, 2);
    ASSERT_TRUE(one.ok() && two.ok()) << one.status() << two.status();
    EXPECT_EQ(Values((*one)[0]), Values((*two)[0]));
    std::vector<Cplx> want(static_cast<size_t>(n));
    ReferenceDft(sig.data() + 37 * n, want.data(), n, false);  // line 37
    for (int64_t k = 0; k < n; ++k)
      EXPECT_NEAR(std::abs(At((*two)[0], 37 * n + k) - want[size_t(k)]), 0, 2e-3 * (1 + std::abs(want[size_t(k)])));
  }
}

TEST(DFT, ClearErrors) {
  const Tensor x = F(std::vector<float>(12, 1.0f), {1, 4, 3});
  EXPECT_THAT(Message(RunOne(20, "DFT", {x}).status()), HasSubstr("must be 1 (real) or 2"));
  const Tensor r = F(std::vector<float>(8, 1.0f), {2, 4, 1});
  EXPECT_THAT(Message(RunOne(20, "DFT", {r, Tensor(), I({2}, {})}).status()), HasSubstr("axis 2 is out of range"));
  EXPECT_THAT(Message(RunOne(20, "DFT", {r, Tensor(), I({-1}, {})}).status()), HasSubstr("axis -1 is out of range"));
  EXPECT_THAT(Message(RunOne(17, "DFT", {r}, [](onnx::NodeProto& p) { SetAttr(p, "axis", int64_t(-4)); }).status()),
              HasSubstr("axis -4 is out of range"));
  EXPECT_THAT(Message(RunOne(20, "DFT", {r, I({0}, {})}).status()), HasSubstr("dft_length 0 must be at least 1"));
  EXPECT_THAT(Message(RunOne(20, "DFT", {r, I({4, 4}, {2})}).status()), HasSubstr("dft_length must be a scalar"));
  EXPECT_THAT(Message(RunOne(20, "DFT", {F({1}, {1})}).status()), HasSubstr("must have rank 2 or more"));
  EXPECT_THAT(Message(RunOne(20, "DFT", {r}, [](onnx::NodeProto& p) { SetAttr(p, "inverse", int64_t(2)); }).status()),
              HasSubstr("inverse = 2 must be 0 or 1"));
  // An inverse one-sided DFT of one bin has a default length of 0.
  EXPECT_THAT(Message(RunOne(20, "DFT", {F({1, 0}, {1, 1, 2})}, [](onnx::NodeProto& p) {
                        SetAttr(p, "onesided", int64_t(1));
                        SetAttr(p, "inverse", int64_t(1));
                      }).status()),
              HasSubstr("default DFT length"));
  // An empty batch is fine.
  auto empty = RunOne(20, "DFT", {F({}, {0, 4, 1})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), (Shape{0, 4, 2}));
}

// ---- STFT ----

TEST(STFT, FramesAreWindowedDfts) {
  const int64_t len = 40, step = 6;
  for (int64_t channels : {1, 2}) {
    const std::vector<Cplx> sig = RandomSignal(2 * len, 5);
    std::vector<double> v;
    for (const Cplx& c : sig) {
      v.push_back(c.real());
      if (channels == 2) v.push_back(c.imag());
    }
    const Tensor s = Typed(DType::kDouble, v, {2, len, channels});
    for (int64_t fl : {8, 10}) {
      std::vector<double> wv;
      for (int64_t j = 0; j < fl; ++j) wv.push_back(0.5 + 0.1 * double(j));
      struct Form {
        bool window, frame_length;
      };
      for (Form form : {Form{true, false}, Form{false, true}, Form{true, true}})
        for (int64_t onesided : {0, 1}) {
          std::vector<Tensor> in = {s, I({step}, {}), form.window ? Typed(DType::kDouble, wv, {fl}) : Tensor()};
          if (form.frame_length) in.push_back(I({fl}, {}));
          auto y = RunOne(17, "STFT", in, [onesided](onnx::NodeProto& p) { SetAttr(p, "onesided", onesided); });
          ASSERT_TRUE(y.ok()) << y.status();
          const int64_t frames = 1 + (len - fl) / step, bins = onesided ? fl / 2 + 1 : fl;
          ASSERT_EQ(y->shape(), (Shape{2, frames, bins, 2}));
          for (int64_t b = 0; b < 2; ++b)
            for (int64_t f = 0; f < frames; ++f) {
              std::vector<Cplx> frame(static_cast<size_t>(fl)), want(static_cast<size_t>(fl));
              for (int64_t j = 0; j < fl; ++j) {
                Cplx c = sig[size_t(b * len + f * step + j)];
                if (channels == 1) c = Cplx(c.real(), 0);
                frame[size_t(j)] = c * (form.window ? wv[size_t(j)] : 1.0);
              }
              ReferenceDft(frame.data(), want.data(), fl, false);
              for (int64_t k = 0; k < bins; ++k)
                EXPECT_NEAR(std::abs(At(*y, (b * frames + f) * bins + k) - want[size_t(k)]), 0, 1e-12)
                    << channels << " " << fl << " " << b << " " << f << " " << k;
            }
        }
    }
  }
}

TEST(STFT, ASineOfABinFrequencyPeaksInThatBin) {
  // 16-sample frames of cos(2 pi 2 j / 16): bin 2 holds 8, the others 0.
  std::vector<float> v;
  for (int64_t j = 0; j < 64; ++j) v.push_back(float(std::cos(2 * kPi * 2 * double(j) / 16)));
  auto y = RunOne(17, "STFT", {F(v, {1, 64, 1}), I({16}, {}), Tensor(), I({16}, {})});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{1, 4, 9, 2}));
  for (int64_t f = 0; f < 4; ++f)
    for (int64_t k = 0; k < 9; ++k) {
      EXPECT_NEAR(At(*y, f * 9 + k).real(), k == 2 ? 8 : 0, 1e-5) << f << " " << k;
      EXPECT_NEAR(At(*y, f * 9 + k).imag(), 0, 1e-5) << f << " " << k;
    }
}

TEST(STFT, ConstantFrameParametersArePlannedOnce) {
  std::vector<float> v;
  for (int64_t j = 0; j < 32; ++j) v.push_back(float(j % 5));
  const std::vector<Tensor> in = {F(v, {1, 32, 1}), I({4}, {}), F(std::vector<float>(8, 0.5f), {8}), I({8}, {})};
  auto run_time = RunNode(17, "STFT", in);
  auto planned = RunNode(17, "STFT", in, 1, {}, {false, true, true, true});
  ASSERT_TRUE(run_time.ok() && planned.ok()) << run_time.status() << planned.status();
  EXPECT_EQ((*planned)[0].shape(), (Shape{1, 7, 5, 2}));
  EXPECT_EQ(Values((*run_time)[0]), Values((*planned)[0]));
  // Bin 0 of frame 0 is half the sum of samples 0..7: (0+1+2+3+4+0+1+2) / 2.
  EXPECT_NEAR(GetDouble((*planned)[0], 0), 6.5, 1e-6);
}

TEST(STFT, ClearErrors) {
  const Tensor s = F(std::vector<float>(16, 1.0f), {1, 16, 1});
  EXPECT_THAT(Message(RunOne(17, "STFT", {s, I({0}, {}), Tensor(), I({4}, {})}).status()),
              HasSubstr("frame_step 0 must be at least 1"));
  EXPECT_THAT(Message(RunOne(17, "STFT", {s, I({2}, {}), F({1, 1, 1}, {3}), I({4}, {})}).status()),
              HasSubstr("window length 3 differs from frame_length 4"));
  EXPECT_THAT(Message(RunOne(17, "STFT", {s, I({2}, {}), Tensor(), I({17}, {})}).status()),
              HasSubstr("shorter than one frame of 17 samples"));
  EXPECT_THAT(Message(RunOne(17, "STFT", {F(std::vector<float>(16, 1.0f), {16, 1}), I({2}, {})}).status()),
              HasSubstr("must have rank 3"));
  EXPECT_THAT(Message(RunOne(17, "STFT", {F(std::vector<float>(48, 1.0f), {1, 16, 3}), I({2}, {})}).status()),
              HasSubstr("must be 1 (real) or 2"));
  EXPECT_THAT(Message(RunOne(17, "STFT", {s, I({2}, {}), F({1, 1}, {1, 2})}).status()), HasSubstr("must have rank 1"));
}

// ---- Windows ----

TEST(Windows, MatchTheirFormulasPeriodicAndSymmetric) {
  struct Kind {
    const char* op;
    double a0, a1, a2;
  };
  for (Kind k : {Kind{"HannWindow", 0.5, 0.5, 0}, Kind{"HammingWindow", 25.0 / 46, 21.0 / 46, 0},
                 Kind{"BlackmanWindow", 0.42, 0.5, 0.08}})
    for (int64_t periodic : {0, 1})
      for (int64_t size : {0, 1, 2, 5, 10}) {
        for (DType dt : {DType::kFloat, DType::kDouble}) {
          auto y = RunOne(17, k.op, {I({size}, {})}, [&](onnx::NodeProto& p) {
            SetAttr(p, "periodic", periodic);
            SetAttr(p, "output_datatype", int64_t(dt));
          });
          ASSERT_TRUE(y.ok()) << k.op << ": " << y.status();
          ASSERT_EQ(y->dtype(), dt);
          ASSERT_EQ(y->shape(), (Shape{size}));
          const double n = periodic ? double(size) : double(size - 1);
          for (int64_t i = 0; i < size; ++i) {
            const double want = n == 0 ? 1.0
                                       : k.a0 - k.a1 * std::cos(2 * kPi * double(i) / n) +
                                             k.a2 * std::cos(4 * kPi * double(i) / n);
            EXPECT_NEAR(GetDouble(*y, i), want, 1e-7) << k.op << " periodic " << periodic << " size " << size << " " << i;
          }
        }
      }
  // Hann's symmetric window of 5 points is exactly 0, 0.5, 1, 0.5, 0; as int32 it truncates.
  auto h = RunOne(17, "HannWindow", {Typed(DType::kInt32, {5}, {})}, [](onnx::NodeProto& p) {
    SetAttr(p, "periodic", int64_t(0));
    SetAttr(p, "output_datatype", int64_t(DType::kInt32));
  });
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->dtype(), DType::kInt32);
  EXPECT_EQ(Values(*h), (std::vector<double>{0, 0, 1, 0, 0}));
}

TEST(Windows, ClearErrors) {
  EXPECT_THAT(Message(RunOne(17, "HannWindow", {I({-1}, {})}).status()), HasSubstr("size -1 must not be negative"));
  EXPECT_THAT(Message(RunOne(17, "HammingWindow", {I({4}, {})}, [](onnx::NodeProto& p) {
                        SetAttr(p, "output_datatype", int64_t(DType::kBool));
                      }).status()),
              HasSubstr("output_datatype = 9 is not one of"));
  EXPECT_THAT(Message(RunOne(17, "BlackmanWindow", {I({4, 4}, {2})}).status()), HasSubstr("size must be a scalar"));
  EXPECT_THAT(Message(RunOne(17, "BlackmanWindow", {I({4}, {})}, [](onnx::NodeProto& p) {
                        SetAttr(p, "periodic", int64_t(3));
                      }).status()),
              HasSubstr("periodic = 3 must be 0 or 1"));
}

// ---- MelWeightMatrix ----

std::vector<Tensor> MelInputs(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, float lower, float upper) {
  return {Typed(DType::kInt32, {double(mel_bins)}, {}), Typed(DType::kInt32, {double(dft_length)}, {}),
          Typed(DType::kInt32, {double(sample_rate)}, {}), F({lower}, {}), F({upper}, {})};
}

TEST(MelWeightMatrix, TrianglesBetweenMelSpacedBins) {
  // Known matrices (ONNX's reference algorithm): 3 bands over 16-point DFTs at
  // 1000 Hz, 0 to 500 Hz (edges at bins 0, 1, 2, 4, 6); 2 bands at 16 kHz,
  // 100 to 8000 Hz (edges 0, 0, 1, 2: a band whose left edge is its center).
  auto y = RunOne(17, "MelWeightMatrix", MelInputs(3, 16, 1000, 0, 500));
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(y->shape(), (Shape{9, 3}));
  EXPECT_EQ(Values(*y), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0.5, 0.5, 0, 0, 1, 0, 0, 0.5, 0, 0, 0, 0, 0,
                                             0, 0, 0, 0}));
  auto z = RunOne(17, "MelWeightMatrix", MelInputs(2, 8, 16000, 100, 8000), [](onnx::NodeProto& p) {
    SetAttr(p, "output_datatype", int64_t(DType::kDouble));
  });
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->dtype(), DType::kDouble);
  EXPECT_EQ(Values(*z), (std::vector<double>{1, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(MelWeightMatrix, ClearErrors) {
  EXPECT_THAT(Message(RunOne(17, "MelWeightMatrix", MelInputs(0, 16, 1000, 0, 500)).status()),
              HasSubstr("num_mel_bins 0 must be at least 1"));
  EXPECT_THAT(Message(RunOne(17, "MelWeightMatrix", MelInputs(3, 16, 0, 0, 500)).status()),
              HasSubstr("sample_rate 0 must be at least 1"));
  EXPECT_THAT(Message(RunOne(17, "MelWeightMatrix", MelInputs(3, 16, 1000, 600, 500)).status()),
              HasSubstr("must satisfy 0 <= lower <= upper"));
  EXPECT_THAT(Message(RunOne(17, "MelWeightMatrix", MelInputs(3, 16, 1000, 0, NAN)).status()),
              HasSubstr("must satisfy 0 <= lower <= upper"));
  EXPECT_THAT(Message(RunOne(17, "MelWeightMatrix", MelInputs(1 << 30, 1 << 30, 1000, 0, 500)).status()),
              HasSubstr("is too large"));
  // 5000 Hz is far past the 500 Hz Nyquist frequency: the edges leave the spectrogram.
  EXPECT_THAT(Message(RunOne(17, "MelWeightMatrix", MelInputs(3, 16, 1000, 0, 5000)).status()),
              HasSubstr("beyond the 9 bins"));
}

}  // namespace
}  // namespace onnx_mini
