// com.microsoft GatherBlockQuantized(data, indices, scales, zero_points?):
// Gather over a block-quantized table (an LLM's embedding in 4 or 8 bits),
// dequantizing only the gathered slices (kernels/quant/gather_blocks.h); the
// table stays packed. As onnxruntime's CPU kernel: data uint8 (`bits` 2, 4
// or 8 per element, packed along the last axis, gather_axis 0 and
// quantize_axis last), int4 or uint4 (any axes); `block_size` a power of two
// >= 16; zero points absent (uint8: 2^(bits-1), int4/uint4: 0) or in the
// data's type (uint8 packed per row of scales); output in the scales' type.
// An index outside [-dim, dim) is an error (onnxruntime writes zeros).
#include "kernels/quant/gather_blocks.h"
#include "ops/common.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

struct GatherBlocksPlan : OpPlan {
  const BlockFormat* format = nullptr;
  int64_t outer = 0, axis_dim = 0, inner = 0, qdim = 0, qinner = 0;
  int64_t zero_row = 1, zero_row_stride = 1;
  float default_zero = 0;
};

class GatherBlockQuantizedOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    auto op = std::make_unique<GatherBlockQuantizedOp>();
    op->gather_axis_ = node.attr_int("gather_axis", 0);
    op->quantize_axis_ = node.attr_int("quantize_axis", 1);
    op->block_ = node.attr_int("block_size", 128);
    op->bits_ = node.attr_int("bits", 4);
    if (op->block_ < 16 || (op->block_ & (op->block_ - 1)) != 0)
      return AttributeError(node, absl::StrCat("block_size ", op->block_, " must be a power of 2 and >= 16"));
    if (op->bits_ != 2 && op->bits_ != 4 && op->bits_ != 8)
      return AttributeError(node, absl::StrCat("bits ", op->bits_, " must be 2, 4 or 8"));
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const DType dt = ctx.input(0).dtype;
    const bool u8 = dt == DType::kUInt8;
    if (!u8 && bits_ != 4)
      return ctx.Error(absl::StrCat("bits ", bits_, " with ", LowerName(dt), " data: int4 and uint4 data take bits 4"));
    const DType storage = !u8 ? dt : bits_ == 8 ? DType::kUInt8 : bits_ == 4 ? DType::kUInt4 : DType::kUInt2;
    const int64_t components = u8 ? 8 / bits_ : 1;
    ValueType out;
    out.dtype = ctx.input(2).dtype;
    const ValueType& data = ctx.input(0);
    const ValueType& idx = ctx.input(1);
    if (!data.dims) {
      ctx.set_output(0, out);
      return absl::OkStatus();
    }
    const int64_t rank = data.rank();
    if (rank < 1) return ctx.Error("data must have rank >= 1");
    ASSIGN_OR_RETURN(const int64_t g, NormalizeAxis(ctx, gather_axis_, rank, "gather_axis"));
    ASSIGN_OR_RETURN(const int64_t q, NormalizeAxis(ctx, quantize_axis_, rank, "quantize_axis"));
    if (u8 && (g != 0 || q != rank - 1 || g == q))
      return ctx.Error(absl::StrCat("uint8 data takes gather_axis 0 and quantize_axis the last (", rank - 1,
                                    ", and not 0), got ", g, " and ", q));
    // The output: data's dims with the gather axis replaced by the indices' (the last one unpacked).
    if (idx.dims) {
      std::vector<Dim> dims(data.dims->begin(), data.dims->begin() + g);
      dims.insert(dims.end(), idx.dims->begin(), idx.dims->end());
      dims.insert(dims.end(), data.dims->begin() + g + 1, data.dims->end());
      Dim& last = dims.back();
      if (u8 && last.known()) last = Dim::Known(last.value * components);
      else if (u8) last = Dim{};
      out.dims = dims;
    }
    ctx.set_output(0, out);
    const std::optional<Shape> ds = data.concrete_shape(), ss = ctx.input(2).concrete_shape();
    if (!ds || !ss) return absl::OkStatus();
    Shape logical = *ds;
    if (logical.back() > (int64_t{1} << 60) / components)
      return ctx.Error(absl::StrCat("data's last dim ", logical.back(), " unpacked to ", components,
                                    " elements a byte overflows"));
    logical.back() *= components;
    const int64_t blocks = (logical[size_t(q)] + block_ - 1) / block_;
    bool fits = int64_t(ss->size()) == rank;
    for (int64_t d = 0; fits && d < rank; ++d) fits = (*ss)[size_t(d)] == (d == q ? blocks : logical[size_t(d)]);
    if (!fits)
      return ctx.Error(absl::StrCat("scales ", ShapeToString(*ss), " must be data's shape ", ShapeToString(logical),
                                    " (unpacked) with ceil(", logical[size_t(q)], " / block_size ", block_, ") = ",
                                    blocks, " at quantize_axis ", q));
    auto p = std::make_shared<GatherBlocksPlan>();
    p->format = FindBlockFormat(storage);
    if (ctx.has_input(3)) {
      const std::optional<Shape> zs = ctx.input(3).concrete_shape();
      if (zs) {
        Shape want = *ss;
        if (components > 1) want[size_t(q)] = (want[size_t(q)] + components - 1) / components;
        if (*zs != want)
          return ctx.Error(absl::StrCat("zero_points ", ShapeToString(*zs), " must be ", ShapeToString(want),
                                        components > 1 ? " (the scales' shape, packed along the last axis)"
                                                       : " (the scales' shape)"));
      }
      if (components > 1) {
        p->zero_row = (*ss)[size_t(q)];
        p->zero_row_stride = (p->zero_row + components - 1) / components * components;
      }
    }
    p->default_zero = u8 ? float(1 << (bits_ - 1)) : 0.0f;
    p->outer = ShapeProduct(logical, 0, g);
    p->axis_dim = logical[size_t(g)];
    p->inner = ShapeProduct(logical, g + 1, rank);
    p->qdim = logical[size_t(q)];
    p->qinner = ShapeProduct(logical, q + 1, rank);
    ctx.set_plan(std::move(p));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const GatherBlocksPlan& p = ctx.plan<GatherBlocksPlan>();
    const Tensor& indices = *ctx.input(1);
    std::vector<int64_t> idx = IndexValues(indices);
    for (size_t j = 0; j < idx.size(); ++j) {  // checked before anything is written
      if (idx[j] < -p.axis_dim || idx[j] >= p.axis_dim)
        return ctx.Error(absl::StrCat("index ", idx[j], " at position ", j, " is outside the table's ", p.axis_dim,
                                      " entries (gather_axis dim; valid: ", -p.axis_dim, "..", p.axis_dim - 1, ")"));
      if (idx[j] < 0) idx[j] += p.axis_dim;
    }
    Tensor& y = ctx.output(0);
    if (y.size() == 0) return absl::OkStatus();
    const Tensor* zero = ctx.num_inputs() > 3 ? ctx.input(3) : nullptr;
    GatherBlocksProblem g;
    g.format = p.format;
    g.data = ctx.input(0)->raw();
    g.outer = p.outer;
    g.axis_dim = p.axis_dim;
    g.inner = p.inner;
    g.indices = idx.data();
    g.count = int64_t(idx.size());
    g.qdim = p.qdim;
    g.qinner = p.qinner;
    g.block = block_;
    g.scales = ctx.input(2)->raw();
    g.scale_f16 = ctx.input(2)->dtype() == DType::kFloat16;
    g.zeros = zero ? zero->raw() : nullptr;
    g.zero_row = p.zero_row;
    g.zero_row_stride = p.zero_row_stride;
    g.default_zero = p.default_zero;
    g.out = y.raw();
    g.out_f16 = y.dtype() == DType::kFloat16;
    GatherBlocks(g, ctx.threads());
    return absl::OkStatus();
  }

 private:
  int64_t gather_axis_ = 0, quantize_axis_ = 1, block_ = 128, bits_ = 4;
};

}  // namespace

std::vector<OpDef> GatherBlockQuantizedOps() {
  return {
      {kMsDomain, "GatherBlockQuantized", Versions{1}, "T1 Tind T2 T1?", "T2",
       {{"T1", {DType::kUInt8, DType::kInt4, DType::kUInt4}},
        {"T2", {DType::kFloat, DType::kFloat16}},
        {"Tind", {DType::kInt32, DType::kInt64}}},
       GatherBlockQuantizedOp::Create},
  };
}

}  // namespace onnx_mini
