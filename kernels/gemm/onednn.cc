#include "kernels/gemm/onednn.h"

#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/thread_pool.h"

namespace onnx_mini {

dnnl::engine& OneDnnEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

int OneDnnMatMulThreads(int threads, int64_t batch, int64_t m, int64_t k, int64_t n) {
  return ThreadsForWork(threads, double(batch) * double(m) * double(k) * double(n), kMinOneDnnThreadWork);
}

bool OneDnnMatMul(DType dtype, const void* a, const void* b, void* c, int64_t batch, int64_t batch_a,
                  int64_t batch_b, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, int threads) {
  using dnnl::memory;
  memory::data_type dt;
  if (dtype == DType::kFloat) dt = memory::data_type::f32;
  else if (dtype == DType::kBFloat16) dt = memory::data_type::bf16;
  else return false;
  if (batch <= 0 || m <= 0 || k <= 0 || n <= 0) return false;
  // An OpenMP team for a product of a few hundred thousand multiply-adds
  // costs more than the product (silero VAD's LSTM input projection made the
  // model 1.3-1.5x slower on 2 threads than on 1).
  threads = OneDnnMatMulThreads(threads, batch, m, k, n);
  try {
    const OmpThreadsScope scope(threads);  // this thread's setting only, before the primitive is made
    // Strides express the transposes; oneDNN broadcasts a batch of 1.
    const memory::desc a_md({batch_a, m, k}, dt, trans_a ? memory::dims{m * k, 1, m} : memory::dims{m * k, k, 1});
    const memory::desc b_md({batch_b, k, n}, dt, trans_b ? memory::dims{k * n, 1, k} : memory::dims{k * n, n, 1});
    const memory::desc c_md({batch, m, n}, dt, memory::dims{m * n, n, 1});
    // Repeated shapes hit oneDNN's own primitive cache.
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), OneDnnEngine());
    const dnnl::matmul primitive(pd);
    dnnl::stream stream(OneDnnEngine());
    memory a_mem(a_md, OneDnnEngine(), const_cast<void*>(a));
    memory b_mem(b_md, OneDnnEngine(), const_cast<void*>(b));
    memory c_mem(c_md, OneDnnEngine(), c);
    primitive.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace onnx_mini
