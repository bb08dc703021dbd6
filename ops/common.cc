#include "ops/common.h"

#include "runtime/checked.h"


namespace onnx_mini {

std::vector<int64_t> IndexValues(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.size()));
  VisitTypes<IndexTypes>(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.size(); ++i) v[size_t(i)] = int64_t(t.data<T>()[i]);
  });
  return v;
}

absl::Status AttributeError(const Node& node, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
}

int64_t ShapeProduct(const Shape& shape, int64_t from, int64_t to) {
  return CheckedProduct(shape, size_t(from), size_t(to)).value_or(0);
}

absl::StatusOr<int64_t> NormalizeAxis(const InferContext& ctx, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat(what, " ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<Dim>> BroadcastDims(const InferContext& ctx, const std::vector<Dim>& a,
                                               const std::vector<Dim>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->known() && db->known()) {
      if (da->value != db->value && da->value != 1 && db->value != 1) {
        return ctx.Error(absl::StrCat("shapes ", DimsToString(a), " and ", DimsToString(b),
                                      " do not broadcast (dim ", i, ": ", da->value, " vs ",
                                      db->value, ")"));
      }
      out[i] = Dim::Known(da->value == 1 ? db->value : da->value);
    } else if (da->known() && da->value != 1) {
      out[i] = *da;
    } else if (db->known() && db->value != 1) {
      out[i] = *db;
    } else if (da->known()) {  // a is 1: the result is b's dim
      out[i] = *db;
    } else if (db->known()) {
      out[i] = *da;
    } else {
      out[i] = (!da->symbol.empty() && da->symbol == db->symbol) ? *da : Dim{};
    }
  }
  return out;
}

bool ConcreteInputShapes(const InferContext& ctx, size_t count, std::vector<std::optional<Shape>>& shapes) {
  shapes.assign(count, std::nullopt);
  bool known = true;
  for (size_t i = 0; i < count; ++i)
    if (ctx.has_input(i)) {
      shapes[i] = ctx.input(i).concrete_shape();
      known = known && shapes[i].has_value();
    }
  return known;
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = out.size() - 1 - k;
    strides[o] = in[i] == 1 ? 0 : stride;
    stride = CheckedMul(stride, in[i]).value_or(0);  // overflows only for an empty input: nothing is read
  }
  return strides;
}

}  // namespace onnx_mini
