#include "kernels/quant/gather_blocks.h"

#include <algorithm>

#include "runtime/dtype.h"
#include "runtime/thread_pool.h"

namespace onnx_mini {
namespace {

float ScaleAt(const GatherBlocksProblem& p, int64_t s) {
  return p.scale_f16 ? ToFloat(static_cast<const Float16*>(p.scales)[s]) : static_cast<const float*>(p.scales)[s];
}

float ZeroAt(const GatherBlocksProblem& p, int64_t s) {
  if (p.zeros == nullptr) return p.default_zero;
  return float(p.format->load(p.zeros, (s / p.zero_row) * p.zero_row_stride + s % p.zero_row));
}

// Scale index of data element e.
int64_t ScaleIndex(const GatherBlocksProblem& p, int64_t e) {
  const int64_t row = p.qdim * p.qinner;
  const int64_t x = e / row, y = e % row / p.qinner, z = e % p.qinner;
  const int64_t blocks = (p.qdim + p.block - 1) / p.block;
  return x * blocks * p.qinner + (y / p.block) * p.qinner + z;
}

void Store(const GatherBlocksProblem& p, int64_t i, const float* v, int64_t n) {
  if (p.out_f16) FloatToFloat16(v, static_cast<Float16*>(p.out) + i, n);
  else std::copy(v, v + n, static_cast<float*>(p.out) + i);
}

}  // namespace

void GatherBlocks(const GatherBlocksProblem& p, int threads) {
  const int64_t slices = p.outer * p.count;
  ParallelFor(threads, slices, WorkPerIndex{3.0 * double(p.inner)}, [&](int64_t s0, int64_t s1) {
    constexpr int64_t kChunk = 256;
    float buf[kChunk];
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t m = s / p.count, j = s % p.count;
      const int64_t base = (m * p.axis_dim + p.indices[j]) * p.inner;
      int64_t i = 0;
      while (i < p.inner) {
        // A run of elements with one scale: along qdim when the quantize
        // axis is last (qinner 1), else a single element.
        const int64_t e = base + i;
        int64_t run = 1;
        if (p.qinner == 1) {
          const int64_t y = e % p.qdim;
          run = std::min({p.block - y % p.block, p.qdim - y, p.inner - i, kChunk});
        }
        const int64_t si = ScaleIndex(p, e);
        p.format->dequantize_row(p.data, e, run, ScaleAt(p, si), ZeroAt(p, si), buf);
        Store(p, s * p.inner + i, buf, run);
        i += run;
      }
    }
  });
}

void GatherBlocksReference(const GatherBlocksProblem& p) {
  for (int64_t m = 0; m < p.outer; ++m)
    for (int64_t j = 0; j < p.count; ++j)
      for (int64_t i = 0; i < p.inner; ++i) {
        const int64_t e = (m * p.axis_dim + p.indices[j]) * p.inner + i;
        const int64_t si = ScaleIndex(p, e);
        const float v = float(p.format->load(p.data, e) - int32_t(ZeroAt(p, si))) * ScaleAt(p, si);
        Store(p, (m * p.count + j) * p.inner + i, &v, 1);
      }
}

}  // namespace onnx_mini
