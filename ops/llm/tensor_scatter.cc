// TensorScatter-24 (SEMANTICS.md part A, TS1-TS10): writes `update` into a
// copy of `past_cache` along `axis`, at per-batch positions `write_indices`,
// linearly or wrapping around (circular). Declares past_cache as its in-place
// input: when the output shares past_cache's buffer only the update slices
// are written, so a decode step costs O(update), not O(cache).
#include <cstring>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

// Every type except the 2-bit ones (TS8: all_tensor_types_ir12).
using ScatterTypes = Join<UnpackedTypes, TypeList<UInt4x2, Int4x2, Float4E2M1x2>>;

// The layout of one scatter, made once the shapes are known.
struct ScatterGeometry : OpPlan {
  int64_t axis = 0, batch = 0, max_len = 0, update_len = 0;
  int64_t outer = 0;  // product of the dims before axis (batch included)
  int64_t inner = 0;  // product of the dims after axis: one contiguous slab
  bool circular = false;
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
  ParallelFor(threads, slabs, WorkPerIndex{double(slab_bytes) / 4},
              [&](int64_t k_begin, int64_t k_end) { for (int64_t k = k_begin; k < k_end; ++k) {
    int64_t src, dst;
    slab_offsets(k, src, dst);
    std::memcpy(to + size_t(dst) * elem, from + size_t(src) * elem, slab_bytes);
  }});
}

class TensorScatterOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string mode = node.attr_string("mode", "linear");
    if (mode != "linear" && mode != "circular")
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": mode '", mode, "' is not 'linear' or 'circular' (TS1)"));
    return std::unique_ptr<Op>(new TensorScatterOp(mode == "circular", node.attr_int("axis", -2)));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& past = ctx.input(0);
    const ValueType& update = ctx.input(1);
    ctx.set_output(0, past);
    if (!past.dims) return absl::OkStatus();
    const int64_t rank = past.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (rank < 2 || axis < 1 || axis >= rank)
      return ctx.Error(absl::StrCat("axis ", axis_, " is invalid for past_cache of rank ", rank,
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
              "update ", update.ToString(), " does not fit past_cache ", past.ToString(), " along axis ", axis,
              d == axis ? " (TS3: the update is longer than the cache)" : absl::StrCat(" (TS3: dim ", d, " differs)")));
      }
    }
    if (ctx.has_input(2)) {
      const ValueType& w = ctx.input(2);
      if (w.dims) {
        const Dim& batch = (*past.dims)[0];
        if (w.rank() != 1 || ((*w.dims)[0].known() && batch.known() && (*w.dims)[0].value != batch.value))
          return ctx.Error(absl::StrCat("write_indices ", w.ToString(), " must have shape [",
                                        batch.known() ? absl::StrCat(batch.value) : "B",
                                        "], one index per batch entry (TS3)"));
      }
    }
    const std::optional<Shape> past_shape = past.concrete_shape();
    const std::optional<Shape> update_shape = update.concrete_shape();
    if (!past_shape || !update_shape) return absl::OkStatus();
    auto g = std::make_shared<ScatterGeometry>();
    g->axis = axis;
    g->batch = (*past_shape)[0];
    g->max_len = (*past_shape)[size_t(axis)];
    g->update_len = (*update_shape)[size_t(axis)];
    // Only an empty cache's dims can overflow (0 then: the kernel writes nothing).
    g->outer = CheckedProduct(*past_shape, 0, size_t(axis)).value_or(0);
    g->inner = CheckedProduct(*past_shape, size_t(axis) + 1, size_t(rank)).value_or(0);
    g->circular = circular_;
    // With the indices at hand (constant, or at each run), check every linear
    // write stays inside the cache (TS5, TS9), before anything is written.
    if (ctx.has_input(2) && !circular_) {
      const Tensor* indices = ctx.value(2);
      if (indices == nullptr) return absl::OkStatus();  // checked at run
      const int64_t max_len = g->max_len, len = g->update_len;
      for (int64_t b = 0; b < indices->size(); ++b) {
        const int64_t w = indices->data<int64_t>()[b];
        if (w < 0)
          return ctx.Error(absl::StrCat("write_indices[", b, "] = ", w,
                                        " is negative, which linear mode does not allow (TS5)"));
        if (w > max_len - len)
          return ctx.Error(absl::StrCat("write_indices[", b, "] = ", w, " + update length ", len,
                                        " exceeds the cache length ", max_len, " (TS5, linear mode)"));
      }
    }
    ctx.set_plan(std::move(g));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& past = *ctx.input(0);
    const Tensor& update = *ctx.input(1);
    const Tensor* indices = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    Tensor& out = ctx.output(0);
    // In place when the session handed over past_cache's storage: only the update slices are written.
    if (out.raw() != past.raw()) CopyElements(past, out, ctx.threads());
    ScatterUpdate(ctx.plan<ScatterGeometry>(), update, indices ? indices->data<int64_t>() : nullptr, out,
                  ctx.threads());
    return absl::OkStatus();
  }

 private:
  TensorScatterOp(bool circular, int64_t axis) : circular_(circular), axis_(axis) {}
  bool circular_;
  int64_t axis_;
};

}  // namespace

std::vector<OpDef> TensorScatterOps() {
  return {{"", "TensorScatter", 24, 0, "T T I?", "T", {{"T", ScatterTypes::set()}, {"I", kInt64}},
           TensorScatterOp::Create, {{0, 0, Alias::kInPlace}}}};
}

}  // namespace onnx_mini
