// TensorScatter-24 (SEMANTICS.md part A, TS1-TS10): writes `update` into a
// copy of `past_cache` along `axis`, at per-batch positions `write_indices`,
// linearly or wrapping around (circular). Declares past_cache as its in-place
// input: when the output shares past_cache's buffer only the update slices
// are written, so a decode step costs O(update), not O(cache).
#include <cstring>

#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// Every type except the 2-bit ones (TS8: all_tensor_types_ir12).
bool ScatterType(DType d) { return IsValidDType(int32_t(d)) && d != DType::kUInt2 && d != DType::kInt2; }

absl::Status InferTensorScatter(InferContext& ctx) {
  absl::StatusOr<DType> past_type = CheckInputs(ctx, 2, 3);
  if (!past_type.ok()) return past_type.status();
  absl::StatusOr<DType> update_type = InputDType(ctx, 1);
  if (!update_type.ok()) return update_type.status();
  if (*past_type != *update_type)
    return ctx.Error(absl::StrCat("past_cache is ", LowerName(*past_type), " but update is ",
                                  LowerName(*update_type), " (TS1: both are T)"));
  const std::string mode = ctx.node().attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return ctx.Error(absl::StrCat("mode '", mode, "' is not 'linear' or 'circular' (TS1)"));
  const ValueType& past = ctx.input(0);
  const ValueType& update = ctx.input(1);
  ctx.set_output(0, past);
  if (!past.dims) return absl::OkStatus();
  const int64_t rank = past.rank();
  int64_t axis = ctx.node().attr_int("axis", -2);
  if (axis < 0) axis += rank;
  if (rank < 2 || axis < 1 || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", ctx.node().attr_int("axis", -2),
                                  " is invalid for past_cache of rank ", rank,
                                  " (TS2: 1 <= axis < rank after adding rank to a negative axis; "
                                  "axis 0 is the batch axis)"));
  if (update.dims) {
    if (update.rank() != rank)
      return ctx.Error(absl::StrCat("update ", update.ToString(), " must have the rank of past_cache ",
                                    past.ToString(), " (TS3)"));
    for (int64_t d = 0; d < rank; ++d) {
      const Dim& p = (*past.dims)[size_t(d)];
      const Dim& u = (*update.dims)[size_t(d)];
      if (!p.known() || !u.known()) continue;
      if (d == axis ? u.value > p.value : u.value != p.value)
        return ctx.Error(absl::StrCat(
            "update ", update.ToString(), " does not fit past_cache ", past.ToString(), " along axis ",
            axis, d == axis ? " (TS3: the update is longer than the cache)"
                            : absl::StrCat(" (TS3: dim ", d, " differs)")));
    }
  }
  if (ctx.has_input(2)) {
    const ValueType& w = ctx.input(2);
    if (w.dtype != DType::kInt64)
      return ctx.Error(absl::StrCat("write_indices must be int64, got ", LowerName(w.dtype)));
    if (w.dims) {
      const Dim& batch = (*past.dims)[0];
      if (w.rank() != 1 || ((*w.dims)[0].known() && batch.known() && (*w.dims)[0].value != batch.value))
        return ctx.Error(absl::StrCat("write_indices ", w.ToString(), " must have shape [",
                                      batch.known() ? absl::StrCat(batch.value) : "B",
                                      "], one index per batch entry (TS3)"));
    }
  }
  // With values at hand, check every write stays inside the cache (TS5, TS9).
  const Tensor* indices = ctx.value(2);
  const std::optional<Shape> past_shape = past.concrete_shape();
  const std::optional<Shape> update_shape = update.concrete_shape();
  if (indices == nullptr || !past_shape || !update_shape || mode != "linear") return absl::OkStatus();
  const int64_t max_len = (*past_shape)[size_t(axis)];
  const int64_t len = (*update_shape)[size_t(axis)];
  for (int64_t b = 0; b < indices->size(); ++b) {
    const int64_t w = indices->data<int64_t>()[b];
    if (w < 0)
      return ctx.Error(absl::StrCat("write_indices[", b, "] = ", w,
                                    " is negative, which linear mode does not allow (TS5)"));
    if (w > max_len - len)
      return ctx.Error(absl::StrCat("write_indices[", b, "] = ", w, " + update length ", len,
                                    " exceeds the cache length ", max_len, " (TS5, linear mode)"));
  }
  return absl::OkStatus();
}

struct ScatterGeometry {
  int64_t axis, batch, max_len, update_len;
  int64_t outer;  // product of the dims before axis (batch included)
  int64_t inner;  // product of the dims after axis: one contiguous slab
  bool circular;
};

int64_t ScatterPosition(const ScatterGeometry& g, int64_t start, int64_t s) {
  if (!g.circular) return start + s;
  // Floor modulo: the result is in [0, M) for any int64 start (TS4, TS6).
  int64_t pos = (start % g.max_len + s % g.max_len) % g.max_len;
  return pos < 0 ? pos + g.max_len : pos;
}

void ScatterUpdate(const ScatterGeometry& g, const Tensor& update, const int64_t* indices, Tensor& out,
                   int threads) {
  if (g.outer == 0 || g.update_len == 0 || g.inner == 0) return;
  const int64_t per_batch = g.outer / g.batch;  // prefix rows per batch entry
  const int64_t slabs = g.outer * g.update_len;
  const DTypeInfo& info = Info(out.dtype());
  // Slab s of row r goes to row r at position pos(b, s); rows are
  // independent, so slabs can be written in parallel unless packed
  // elements of different slabs share a byte.
  auto slab_offsets = [&](int64_t k, int64_t& src, int64_t& dst) {
    const int64_t row = k / g.update_len, s = k % g.update_len;
    const int64_t b = row / per_batch;
    const int64_t start = indices ? indices[b] : 0;
    src = (row * g.update_len + s) * g.inner;
    dst = (row * g.max_len + ScatterPosition(g, start, s)) * g.inner;
  };
  if (info.packed()) {
    const uint8_t* from = update.data<uint8_t>();
    uint8_t* to = out.data<uint8_t>();
    const int64_t per_byte = info.elements_per_byte();
    const bool aligned = g.inner % per_byte == 0;
    for (int64_t k = 0; k < slabs; ++k) {
      int64_t src, dst;
      slab_offsets(k, src, dst);
      if (aligned) {
        std::memcpy(to + dst / per_byte, from + src / per_byte, size_t(g.inner / per_byte));
      } else {
        // Rows may start mid-byte: copy element by element (nibbles).
        for (int64_t e = 0; e < g.inner; ++e)
          SetPacked(out.dtype(), to, dst + e, uint32_t(GetPacked(out.dtype(), from, src + e)));
      }
    }
    return;
  }
  if (out.dtype() == DType::kString) {
    const std::string* from = update.data<std::string>();
    std::string* to = out.data<std::string>();
    for (int64_t k = 0; k < slabs; ++k) {
      int64_t src, dst;
      slab_offsets(k, src, dst);
      for (int64_t e = 0; e < g.inner; ++e) to[dst + e] = from[src + e];
    }
    return;
  }
  const size_t elem = size_t(info.bits / 8);
  const char* from = static_cast<const char*>(update.raw());
  char* to = static_cast<char*>(out.raw());
  const size_t slab_bytes = size_t(g.inner) * elem;
#pragma omp parallel for num_threads(threads) if (slabs * int64_t(slab_bytes) > (1 << 18))
  for (int64_t k = 0; k < slabs; ++k) {
    int64_t src, dst;
    slab_offsets(k, src, dst);
    std::memcpy(to + size_t(dst) * elem, from + size_t(src) * elem, slab_bytes);
  }
}

class TensorScatterKernel : public OpKernel {
 public:
  explicit TensorScatterKernel(const KernelInfo& info)
      : circular_(info.node.attr_string("mode", "linear") == "circular"),
        axis_(info.node.attr_int("axis", -2)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& past = *ctx.input(0);
    const Tensor& update = *ctx.input(1);
    const Tensor* indices = ctx.input(2);
    Tensor& out = ctx.output(0);
    ScatterGeometry g{};
    const int64_t rank = past.rank();
    g.axis = axis_ < 0 ? axis_ + rank : axis_;
    g.batch = past.dim(0);
    g.max_len = past.dim(g.axis);
    g.update_len = update.dim(g.axis);
    g.outer = 1;
    for (int64_t d = 0; d < g.axis; ++d) g.outer *= past.dim(d);
    g.inner = 1;
    for (int64_t d = g.axis + 1; d < rank; ++d) g.inner *= past.dim(d);
    g.circular = circular_;
    if (out.raw() != past.raw()) CopyElements(past, out, ctx.threads());
    ScatterUpdate(g, update, indices ? indices->data<int64_t>() : nullptr, out, ctx.threads());
    return absl::OkStatus();
  }

 private:
  bool circular_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<OpKernel>> CreateTensorScatter(const KernelInfo& info) {
  const DType dtype = info.inputs[0]->dtype;
  if (!ScatterType(dtype)) return NotImplemented(info.node, dtype);
  return MakeKernel<TensorScatterKernel>(info);
}

}  // namespace

std::vector<OpDef> TensorScatterOps() {
  return {{"", "TensorScatter", 24, 0, InferTensorScatter, CreateTensorScatter, 0}};
}

}  // namespace onnx_mini
