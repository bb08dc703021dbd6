// The router of MatMul and Gemm with a constant B (prepared once, at session
// creation): our packed GEMM, our GEMV over B as stored, or oneDNN's matmul
// on B reordered into its layout. Two routes of three are our own kernels.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/panel_memory.h"
#include "runtime/cpu.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace onnx_mini {

// B packed into the GEMM's panels (kernels/gemm/gemm.h) on one CPU target:
// used by no kernel of another target. Shared by the products that read one
// weight (PrepareContext::Shared), charged once to the budget it was made with.
struct PackedGemmB {
  // GemmPackedSize(k, n) floats, on huge pages where large (as the quantized
  // panels: a prefill's products read every panel per row block, a decode
  // step streams them once; over 4 KiB pages each page is a TLB miss).
  std::vector<float, PanelAllocator<float>> panels;
  MemoryReservation reserved;  // panels' bytes, against the budget
  CpuTarget target = CpuTarget::kBaseline;
  int64_t k = 0, n = 0;
  bool trans_b = false;
};

// B (K x N, or N x K with trans_b) packed for the GEMM of the active target;
// nullptr when B is not a float32 matrix, the target has no packed GEMM, the
// panels' padding would more than double B, or `budget` refuses.
std::shared_ptr<const PackedGemmB> PackGemmB(const Tensor& b, bool trans_b,
                                             const std::shared_ptr<MemoryBudget>& budget);

// C = A x B (+ bias) with a constant B, prepared once at session creation.
// float32 on AVX-512 runs kernels/gemm/gemm.h for every row count of A, with B packed
// into its panels here (a decode step's products then read B in order: on
// some CPUs B's rows read 64 columns at a time stream at half the speed),
// unless B has so few columns that the panels' padding would more than
// double it. Other float32 runs the GEMV (kernels/gemm/gemv.h) on B as stored for at
// most kGemvMaxRows rows of A. Otherwise (bfloat16, more rows on other CPUs) B is
// reordered into the layout oneDNN's matmul prefers (pre-packing) and kept,
// and a primitive per row count M of A is made on first use and cached (a
// bounded cache: decode and prefill shapes, not every length). Run may be
// called from several threads at once.
class PackedMatMul {
 public:
  // B is (K, N), or (N, K) with trans_b; bias, if defined, has N elements.
  // Both must outlive this object (it keeps references to their storage).
  // nullptr when oneDNN does not run this dtype or shape. Every copy of B it
  // keeps (packed, reordered) is charged to `budget` (optional) while it
  // lives; one the budget refuses is not made (Run takes another path).
  // `packed` (optional): B already packed by PackGemmB, used when it fits.
  static std::unique_ptr<PackedMatMul> Make(const Tensor& b, bool trans_b, const Tensor& bias, int threads,
                                            const std::shared_ptr<MemoryBudget>& budget = nullptr,
                                            std::shared_ptr<const PackedGemmB> packed = nullptr);
  ~PackedMatMul();

  int64_t k() const;
  int64_t n() const;
  bool has_bias() const;
  // Whether `b` is the matrix this object packed (the same storage).
  bool packs(const Tensor& b) const;
  // Lets go of B's original when Run works without it (B packed for the
  // GEMM, which runs every row count and thread count): true, and B's
  // storage may be freed; false (B still needed) otherwise. Run then
  // declines (returns false) only on another CPU target than B was packed on.
  bool ReleaseB();
  // C (M x N, row-major) = A (M x K, row-major) x B (+ bias), with the thread
  // count it was made for. Returns false (having written nothing) when
  // oneDNN declines or `threads` differs.
  bool Run(const void* a, void* c, int64_t m, int threads) const;

  struct Impl;

 private:
  explicit PackedMatMul(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnx_mini
