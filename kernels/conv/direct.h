// A float convolution, group 1, 1-D or 2-D, channels last on both sides, as
// register tiles over the output pixels: 6 pixels x 16 output channels of FMA
// accumulators, each tap's input row read where it lies (no im2col copy), the
// weights packed once, the post-ops in one pass over each stored tile (in
// L1). On an AVX2-only CPU
// oneDNN's jit:avx2 spends much of a small conv in its driver (a call per
// output row, each zeroing its argument block); this kernel has no per-row
// call. Only the AVX2 build exists (AVX-512's oneDNN kernels serve well).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace onnx_mini {

struct DirectConvProblem {
  int64_t n = 0, c = 0, m = 0;  // images, input channels, output channels
  // Spatial dims as (rows, columns); a 1-D conv has one row, kernel 1.
  std::array<int64_t, 2> in{1, 1}, out{1, 1}, k{1, 1}, s{1, 1}, d{1, 1}, pb{0, 0};
};

// What follows the product, in order, each result rounded to float: Relu
// (x > 0 ? x : 0), LeakyRelu (x < 0 ? alpha x : x), Clip to [alpha, beta]
// (NaN stays), alpha x + beta, and Add of the residual (laid out as Y).
struct DirectConvOp {
  enum Kind { kRelu, kLeakyRelu, kClip, kLinear, kAdd } kind = kRelu;
  float alpha = 0, beta = 0;
};

// Whether the host runs the kernel (an AVX2 build, the active target AVX2).
bool DirectConvAvailable();

// Whether the kernel beats oneDNN's jit:avx2 for W's shape (c, m, k): enough
// products a tile (taps x c >= 128), enough a tap (c >= 16: oww's
// melspectrogram, 512 taps of one channel, ran 0.05 -> 0.08 ms) and panels
// mostly Y's channels (m at least 85% of its panels' lanes). Measured on a Zen 3, one thread, against
// the same convs in oneDNN inside a model (oww_embedding's 1x3 and 3x1 convs
// of 48-96 channels: 0.010-0.104 ms against 0.025-0.133; 24 channels, 72
// products a tile: 0.205 against 0.104).
bool DirectConvSuits(const DirectConvProblem& p);

// Floats of packed weights for W (m, c, k0, k1): panels of 16 output
// channels, each [tap][c][16], zero past m; -1 if the count overflows.
int64_t DirectConvPackedSize(const DirectConvProblem& p);
void DirectConvPack(const DirectConvProblem& p, const float* w, float* packed);

// y (n, out0, out1, m) = b[m] + the taps' products of x (n, in0, in1, c) with
// W, taps outside the input skipped, then `ops`; z (Y's shape and layout) is
// the residual of kAdd, b may be null. Only where DirectConvAvailable().
void DirectConv(const DirectConvProblem& p, const float* x, const float* packed, const float* b, const float* z,
                const std::vector<DirectConvOp>& ops, float* y, int threads);

// The same with W unpacked, one output at a time (float sums, taps in order,
// then channels): the tests' reference.
void DirectConvReference(const DirectConvProblem& p, const float* x, const float* w, const float* b, const float* z,
                         const std::vector<DirectConvOp>& ops, float* y);

}  // namespace onnx_mini
