#include "kernels/copy/copy.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu_dispatch.h"
#include "runtime/checked.h"
#include "runtime/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace onnx_mini {
namespace {

// One dim of a copy: its size and its source and destination strides (elements).
struct CopyDim {
  int64_t n, s, d;
};
// Small copies are common (a decode step's slices and concats): no heap for
// ranks up to 8.
using CopyDims = absl::InlinedVector<CopyDim, 8>;

// The copy's dims, outer to inner, with the size-1 dims dropped and each dim
// merged into the one outside it where the pair is contiguous in both source
// and destination. `unit` > 1 splits each element into that many units (an
// extra innermost dim). False if the shape is empty (nothing to copy).
bool Simplify(const Shape& shape, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides,
              int64_t unit, CopyDims& dims) {
  for (int64_t n : shape)
    if (n == 0) return false;
  // The dense destination's strides (a non-empty tensor's dims multiply without overflow).
  absl::InlinedVector<int64_t, 8> ds(shape.size());
  for (size_t k = shape.size(), stride = 1; k-- > 0; stride *= size_t(shape[k]))
    ds[k] = dst_strides.empty() ? int64_t(stride) : dst_strides[k];
  dims.clear();
  auto add = [&](CopyDim c) {
    if (!dims.empty() && dims.back().s == c.s * c.n && dims.back().d == c.d * c.n) {
      dims.back() = {dims.back().n * c.n, c.s, c.d};
    } else {
      dims.push_back(c);
    }
  };
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] != 1) add({shape[k], src_strides[k] * unit, ds[k] * unit});
  if (unit > 1) add({unit, 1, 1});
  return true;
}

// Walks the rows of the outer dims in row-major order, tracking the source
// and destination offsets of the current row.
class RowCursor {
 public:
  RowCursor(const CopyDim* outer, size_t rank) : outer_(outer), rank_(rank), index_(rank, 0) {}
  void Seek(int64_t row) {
    src_ = dst_ = 0;
    for (size_t k = rank_; k-- > 0;) {
      index_[k] = row % outer_[k].n;
      row /= outer_[k].n;
      src_ += index_[k] * outer_[k].s;
      dst_ += index_[k] * outer_[k].d;
    }
  }
  void Next() {
    for (size_t k = rank_; k-- > 0;) {
      src_ += outer_[k].s;
      dst_ += outer_[k].d;
      if (++index_[k] < outer_[k].n) return;
      src_ -= outer_[k].n * outer_[k].s;
      dst_ -= outer_[k].n * outer_[k].d;
      index_[k] = 0;
    }
  }
  int64_t src() const { return src_; }
  int64_t dst() const { return dst_; }

 private:
  const CopyDim* outer_;
  size_t rank_;
  absl::InlinedVector<int64_t, 8> index_;
  int64_t src_ = 0, dst_ = 0;
};

// Runs work(begin, end) over [0, items), on the kernels' pool in a few
// chunks per thread when the copy moves more than kParallelCopyBytes and the
// pool's size rule (a byte an eighth of a unit, as Tensor's copies) gives it
// more than one thread.
template <class F>
void ParallelItems(int64_t items, int64_t bytes, int threads, F work) {
  if (bytes <= kParallelCopyBytes || items < 2) return work(0, items);
  threads = ThreadsForWork(threads, double(bytes) / 8);
  if (threads <= 1) return work(0, items);
  ParallelFor(threads, items, std::max<int64_t>(1, items / (4 * int64_t(threads))), work);
}

// How the innermost dim (or two) is copied.
enum class Inner { kRun, kFill, kTranspose, kStrided };

// Copies n contiguous elements (short runs in a loop: cheaper than a call).
template <class U>
inline void CopyRun(U* d, const U* s, int64_t n) {
  if constexpr (std::is_trivially_copyable_v<U>) {
    if (n * int64_t(sizeof(U)) <= 256) {
      for (int64_t j = 0; j < n; ++j) d[j] = s[j];
    } else {
      std::memcpy(d, s, size_t(n) * sizeof(U));
    }
  } else {
    std::copy(s, s + n, d);
  }
}

// One strip of a 2-D transpose, rows i in [i0, i1) of all C columns:
// d[i * dr + j] = s[i + j * sc], in B x B blocks (64 bytes of each of B lines
// on both sides, so a block's source lines stay in L1 while it is written).
template <class U>
void TransposeStrip(const U* s, int64_t sc, U* d, int64_t dr, int64_t i0, int64_t i1, int64_t C) {
  constexpr int64_t B = std::max<int64_t>(8, int64_t(64 / sizeof(U)));
  for (int64_t j0 = 0; j0 < C; j0 += B) {
    const int64_t j1 = std::min(C, j0 + B);
    for (int64_t i = i0; i < i1; ++i) {
      U* di = d + i * dr;
      const U* si = s + i;
      for (int64_t j = j0; j < j1; ++j) di[j] = si[j * sc];
    }
  }
}

#if defined(__x86_64__)
// Register transposes of one square tile for AVX2: to[k * dr + m] =
// from[k + m * sc] for k, m < the tile's size (8 x 8 of 4 and of 2 bytes,
// 4 x 4 of 8 bytes): one load per source line, one store per destination line.
[[gnu::target("avx2"), gnu::always_inline]] inline void Tile4(const uint32_t* s, int64_t sc, uint32_t* d, int64_t dr) {
  const float* from = reinterpret_cast<const float*>(s);
  __m256 r[8], t[8], u[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(from + k * sc);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  float* to = reinterpret_cast<float*>(d);
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(to + k * dr, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
    _mm256_storeu_ps(to + (k + 4) * dr, _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
  }
}

[[gnu::target("avx2"), gnu::always_inline]] inline void Tile2(const uint16_t* s, int64_t sc, uint16_t* d, int64_t dr) {
  __m128i r[8], a[8], b[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k * sc));
  for (int k = 0; k < 8; k += 2) {  // pairs of lines interleaved by 2 bytes
    a[k] = _mm_unpacklo_epi16(r[k], r[k + 1]);
    a[k + 1] = _mm_unpackhi_epi16(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {  // then quads by 4 bytes: b[k..k+4) hold columns 0-1, 2-3, 4-5, 6-7
    b[k] = _mm_unpacklo_epi32(a[k], a[k + 2]);
    b[k + 1] = _mm_unpackhi_epi32(a[k], a[k + 2]);
    b[k + 2] = _mm_unpacklo_epi32(a[k + 1], a[k + 3]);
    b[k + 3] = _mm_unpackhi_epi32(a[k + 1], a[k + 3]);
  }
  for (int k = 0; k < 4; ++k) {  // and the two halves of the lines by 8 bytes
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * k) * dr), _mm_unpacklo_epi64(b[k], b[k + 4]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * k + 1) * dr), _mm_unpackhi_epi64(b[k], b[k + 4]));
  }
}

[[gnu::target("avx2"), gnu::always_inline]] inline void Tile8(const uint64_t* s, int64_t sc, uint64_t* d, int64_t dr) {
  const double* from = reinterpret_cast<const double*>(s);
  __m256d r[4];
  for (int k = 0; k < 4; ++k) r[k] = _mm256_loadu_pd(from + k * sc);
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  double* to = reinterpret_cast<double*>(d);
  _mm256_storeu_pd(to, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(to + dr, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(to + 2 * dr, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(to + 3 * dr, _mm256_permute2f128_pd(t1, t3, 0x31));
}

// TransposeStrip with AVX2 for 2-, 4- and 8-byte units: full T x T tiles in
// registers, the ragged edges element by element. Gives the same bytes as
// TransposeStrip (tests compare them on every CPU target).
template <class U>
[[gnu::target("avx2")]] void TransposeStripAvx2(const U* s, int64_t sc, U* d, int64_t dr, int64_t i0, int64_t i1,
                                                int64_t C) {
  constexpr int64_t B = int64_t(64 / sizeof(U)), T = sizeof(U) == 8 ? 4 : 8;
  for (int64_t j0 = 0; j0 < C; j0 += B) {
    const int64_t j1 = std::min(C, j0 + B);
    int64_t i = i0;
    for (; i + T <= i1; i += T) {
      int64_t j = j0;
      for (; j + T <= j1; j += T) {
        if constexpr (sizeof(U) == 2) Tile2(s + i + j * sc, sc, d + i * dr + j, dr);
        else if constexpr (sizeof(U) == 4) Tile4(s + i + j * sc, sc, d + i * dr + j, dr);
        else Tile8(s + i + j * sc, sc, d + i * dr + j, dr);
      }
      for (int64_t ii = i; ii < i + T; ++ii)
        for (int64_t jj = j; jj < j1; ++jj) d[ii * dr + jj] = s[ii + jj * sc];
    }
    for (; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) d[i * dr + j] = s[i + j * sc];
  }
}
#endif

// The copy for one unit type U (an unsigned integer of the element's size, or
// std::string). `dims` is simplified and not empty.
template <class U>
void CopyUnits(CopyDims& dims, const U* src, U* dst, int threads) {
  int64_t total = 1;
  for (const CopyDim& c : dims) total *= c.n;
  const int64_t bytes = total * int64_t(sizeof(U));
  const CopyDim last = dims.back();
  Inner kind = Inner::kStrided;
  if (last.d == 1 && last.s == 1) kind = Inner::kRun;
  else if (last.d == 1 && last.s == 0) kind = Inner::kFill;
  if (kind == Inner::kStrided && last.d == 1) {
    // An outer dim with the source's unit stride makes a 2-D transpose with
    // the innermost dim; bring it next to the innermost (the order of the
    // outer loops is free).
    for (size_t k = 0; k + 1 < dims.size(); ++k) {
      if (dims[k].s != 1) continue;
      const CopyDim rows = dims[k];
      dims.erase(dims.begin() + int64_t(k));
      dims.insert(dims.end() - 1, rows);
      kind = Inner::kTranspose;
      break;
    }
  }
  const size_t inner_dims = kind == Inner::kTranspose ? 2 : 1;
  const size_t outer = dims.size() - inner_dims;
  int64_t rows = 1;
  for (size_t k = 0; k < outer; ++k) rows *= dims[k].n;

  if (kind == Inner::kTranspose) {
    // dst[i * R.d + j] = src[i + j * C.s] for i < R.n, j < C.n; work items
    // are strips of B rows of R (taller strips write more destination lines
    // at once, which conflict in L1 when R's stride is near a multiple of 2 KiB).
    const CopyDim r = dims[dims.size() - 2], c = dims.back();
    constexpr int64_t B = std::max<int64_t>(8, int64_t(64 / sizeof(U)));
    const int64_t strips = (r.n + B - 1) / B;
    auto strip = &TransposeStrip<U>;
#if defined(__x86_64__)
    if constexpr (std::is_same_v<U, uint16_t> || std::is_same_v<U, uint32_t> || std::is_same_v<U, uint64_t>) {
      static const CpuDispatchTable<decltype(strip)> table{{CpuTarget::kAvx2, &TransposeStripAvx2<U>},
                                                          {CpuTarget::kBaseline, &TransposeStrip<U>}};
      strip = table.Active();
    }
#endif
    ParallelItems(rows * strips, bytes, threads, [&](int64_t begin, int64_t end) {
      RowCursor cursor(dims.data(), outer);
      int64_t row = -1;
      for (int64_t item = begin; item < end; ++item) {
        const int64_t at = item / strips, i0 = (item % strips) * B, i1 = std::min(r.n, i0 + B);
        if (row < 0) cursor.Seek(at);
        else if (at != row) cursor.Next();
        row = at;
        strip(src + cursor.src(), c.s, dst + cursor.dst(), r.d, i0, i1, c.n);
      }
    });
    return;
  }

  auto copy_row = [&](const U* s, U* d, int64_t n) {
    switch (kind) {
      case Inner::kRun: CopyRun(d, s, n); break;
      case Inner::kFill: std::fill(d, d + n, *s); break;
      default:
        for (int64_t j = 0; j < n; ++j) d[j * last.d] = s[j * last.s];
        break;
    }
  };
  if (!(threads > 1 && bytes > kParallelCopyBytes && rows < threads && last.n >= 2 * threads)) {
    // One item per row (no division per row: short rows are common).
    ParallelItems(rows, bytes, threads, [&](int64_t begin, int64_t end) {
      RowCursor cursor(dims.data(), outer);
      cursor.Seek(begin);
      for (int64_t row = begin; row < end; ++row, cursor.Next())
        copy_row(src + cursor.src(), dst + cursor.dst(), last.n);
    });
    return;
  }
  // Fewer rows than threads: each row in `threads` pieces, so that a single
  // long run is shared too.
  const int64_t pieces = threads;
  ParallelItems(rows * pieces, bytes, threads, [&](int64_t begin, int64_t end) {
    RowCursor cursor(dims.data(), outer);
    int64_t row = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t at = item / pieces, piece = item % pieces;
      if (row < 0) cursor.Seek(at);
      else if (at != row) cursor.Next();
      row = at;
      const int64_t lo = last.n * piece / pieces, hi = last.n * (piece + 1) / pieces;
      copy_row(src + cursor.src() + lo * last.s, dst + cursor.dst() + lo * last.d, hi - lo);
    }
  });
}

template <class U>
void CopyAs(CopyDims& dims, const void* src, void* dst, int threads) {
  CopyUnits<U>(dims, static_cast<const U*>(src), static_cast<U*>(dst), threads);
}

}  // namespace

size_t ElementBytes(DType dtype) {
  return dtype == DType::kString ? sizeof(std::string) : size_t(Info(dtype).bits / 8);
}

absl::Status CopyStrided(DType dtype, const Shape& shape, const void* src, const std::vector<int64_t>& src_strides,
                         void* dst, const std::vector<int64_t>& dst_strides, int threads) {
  const DTypeInfo& info = Info(dtype);
  if (dtype == DType::kUndefined || info.packed())
    return absl::InternalError(absl::StrCat("strided copy of ", LowerName(dtype), " elements"));
  CopyDims dims;
  if (dtype == DType::kString) {
    if (!Simplify(shape, src_strides, dst_strides, 1, dims)) return absl::OkStatus();
    if (dims.empty()) dims.push_back({1, 1, 1});
    CopyAs<std::string>(dims, src, dst, threads);
    return absl::OkStatus();
  }
  // Elements move as units of the largest of 8, 4, 2, 1 bytes dividing their size.
  const size_t bytes = ElementBytes(dtype);
  const size_t unit = bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
  if (!Simplify(shape, src_strides, dst_strides, int64_t(bytes / unit), dims)) return absl::OkStatus();
  if (dims.empty()) dims.push_back({1, 1, 1});
  switch (unit) {
    case 8: CopyAs<uint64_t>(dims, src, dst, threads); break;
    case 4: CopyAs<uint32_t>(dims, src, dst, threads); break;
    case 2: CopyAs<uint16_t>(dims, src, dst, threads); break;
    default: CopyAs<uint8_t>(dims, src, dst, threads); break;
  }
  return absl::OkStatus();
}

absl::Status CopyStridedReference(DType dtype, const Shape& shape, const void* src,
                                  const std::vector<int64_t>& src_strides, void* dst,
                                  const std::vector<int64_t>& dst_strides) {
  const DTypeInfo& info = Info(dtype);
  if (dtype == DType::kUndefined || info.packed())
    return absl::InternalError(absl::StrCat("strided copy of ", LowerName(dtype), " elements"));
  const int64_t total = ElementCount(shape);
  if (total <= 0) return absl::OkStatus();
  const std::vector<int64_t> ds = dst_strides.empty() ? RowMajorStrides(shape) : dst_strides;
  const int64_t width = int64_t(ElementBytes(dtype));
  for (int64_t e = 0; e < total; ++e) {
    int64_t rem = e, from = 0, to = 0;
    for (size_t k = shape.size(); k-- > 0;) {
      const int64_t i = rem % shape[k];
      rem /= shape[k];
      from += i * src_strides[k];
      to += i * ds[k];
    }
    if (dtype == DType::kString) {
      static_cast<std::string*>(dst)[to] = static_cast<const std::string*>(src)[from];
    } else {
      std::memcpy(static_cast<char*>(dst) + to * width, static_cast<const char*>(src) + from * width, size_t(width));
    }
  }
  return absl::OkStatus();
}

}  // namespace onnx_mini
