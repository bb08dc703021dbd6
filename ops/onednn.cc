#include "ops/onednn.h"

#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"

namespace onnx_mini {

namespace {
dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}
// Sets this thread's OpenMP thread count for oneDNN and restores it on every
// path out, exceptions included.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreadsScope() { omp_set_num_threads(saved_); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

}  // namespace

bool OneDnnMatMul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t batch_a,
                  int64_t batch_b, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int threads) {
  using dnnl::memory;
  memory::data_type dt;
  if (dtype == DType::kFloat) dt = memory::data_type::f32;
  else if (dtype == DType::kBFloat16) dt = memory::data_type::bf16;
  else return false;
  if (batch <= 0 || m <= 0 || k <= 0 || n <= 0) return false;
  try {
    // Strides express the transposes; oneDNN broadcasts a batch of 1.
    const memory::desc a_md({batch_a, m, k}, dt, trans_a ? memory::dims{m * k, 1, m} : memory::dims{m * k, k, 1});
    const memory::desc b_md({batch_b, k, n}, dt, trans_b ? memory::dims{k * n, 1, k} : memory::dims{k * n, n, 1});
    const memory::desc c_md({batch, m, n}, dt, memory::dims{m * n, n, 1});
    // Repeated shapes hit oneDNN's own primitive cache.
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), Engine());
    const dnnl::matmul primitive(pd);
    dnnl::stream stream(Engine());
    memory a_mem(a_md, Engine(), const_cast<void*>(a));
    memory b_mem(b_md, Engine(), const_cast<void*>(b));
    memory c_mem(c_md, Engine(), c);
    const OmpThreadsScope scope(threads);  // this thread's setting only
    primitive.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace onnx_mini
