// Discrete Fourier transforms of complex sequences in double precision, for
// DFT and STFT (ops/signal/signal.cc): an iterative radix-2 FFT for powers of two,
// Bluestein's algorithm (the transform as a chirp convolution, done with a
// radix-2 FFT of at least twice the length) for every other length, and the
// plain O(n^2) sum the two are tested against.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

namespace onnx_mini {

using Cplx = std::complex<double>;

// The transform of one length, planned once and used by any number of
// threads at once (Transform only reads the plan).
class FftPlan {
 public:
  // Precomputes the twiddles (and Bluestein's chirp and filter) for length
  // n >= 1. Throws std::bad_alloc when memory is short.
  explicit FftPlan(int64_t n);

  int64_t size() const { return n_; }
  // The length of the scratch buffer Transform needs (0 for powers of two).
  int64_t scratch_size() const { return bluestein_ ? m_ : 0; }

  // data[k] := sum_j data[j] exp(-+2 pi i j k / n) over j < n: the forward
  // transform (minus), or the inverse one without the 1/n (plus).
  void Transform(Cplx* data, bool inverse, Cplx* scratch) const;

 private:
  void Radix2(Cplx* a) const;  // forward, in place, length m_
  int64_t n_, m_;              // m_: the radix-2 length (n_ itself, or Bluestein's)
  bool bluestein_;
  std::vector<Cplx> twiddle_;  // exp(-2 pi i k / m) for k < m / 2
  std::vector<Cplx> chirp_;    // exp(-pi i k^2 / n) for k < n (Bluestein)
  std::vector<Cplx> filter_;   // the FFT of the conjugate chirp, length m, scaled by 1/m (Bluestein)
};

// The plain sum out[k] = sum_j in[j] exp(-+2 pi i j k / n) (unscaled), with
// exact angle reduction: the reference the FFT is tested against.
void ReferenceDft(const Cplx* in, Cplx* out, int64_t n, bool inverse);

}  // namespace onnx_mini
