// kernels/conv/conv_transpose.cc: the non-overlapping ConvTranspose as a
// product and a scatter, against direct summation.
#include "kernels/conv/conv_transpose.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace onnx_mini {
namespace {

TEST(PixelDeconv, MatchesDirectSummation) {
  std::mt19937 rng(27);
  std::uniform_real_distribution<float> u(-1, 1);
  struct Shape {
    int64_t n, c, m;
    std::array<int64_t, 3> in, k;
  };
  for (const Shape& s : {Shape{1, 24, 1, {1, 5, 7}, {1, 2, 2}}, Shape{2, 3, 5, {1, 4, 3}, {1, 3, 2}},
                         Shape{1, 4, 6, {1, 1, 9}, {1, 1, 4}}, Shape{2, 2, 3, {2, 3, 2}, {2, 2, 2}},
                         Shape{1, 5, 3, {1, 3, 37}, {1, 2, 1}}, Shape{1, 6, 2, {2, 2, 19}, {3, 1, 3}}})
    for (bool bias : {false, true})
      for (int threads : {1, 2}) {
        PixelDeconvProblem p;
        p.n = s.n;
        p.c = s.c;
        p.m = s.m;
        p.in = s.in;
        p.k = s.k;
        const int64_t hw = s.in[0] * s.in[1] * s.in[2], kk = s.k[0] * s.k[1] * s.k[2];
        std::vector<float> x(size_t(s.n * s.c * hw)), w(size_t(s.c * s.m * kk)), b(size_t(s.m));
        for (auto* v : {&x, &w, &b})
          for (float& e : *v) e = u(rng);
        std::vector<float> y(size_t(s.n * s.m * hw * kk), NAN), ref(y.size()), scratch(size_t(s.m * kk * hw));
        ASSERT_TRUE(PixelDeconv(p, x.data(), w.data(), bias ? b.data() : nullptr, y.data(), scratch.data(), threads));
        PixelDeconvReference(p, x.data(), w.data(), bias ? b.data() : nullptr, ref.data());
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << "c " << s.c << " m " << s.m << " at " << i;
      }
}

}  // namespace
}  // namespace onnx_mini
