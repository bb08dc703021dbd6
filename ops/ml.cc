// The ai.onnx.ml ops: LabelEncoder (2 and 4), Binarizer, ArrayFeatureExtractor.
#include <cmath>
#include <unordered_map>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

constexpr const char* kMl = "ai.onnx.ml";

absl::Status AttrError(const Node& node, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
}

// ---- LabelEncoder ----

// LabelEncoder-4's key and value types; version 2 has the first three.
using LabelTypes = TypeList<std::string, int64_t, float, int32_t, int16_t, double>;
constexpr TypeSet kLabel2Types = {DType::kString, DType::kInt64, DType::kFloat};

// The one keys_* or values_* attribute set (`what` is "keys" or "values"),
// as a tensor of its elements; `tensors` allows the _tensor form (version 4).
absl::StatusOr<Tensor> ListAttribute(const Node& node, const std::string& what, bool tensors) {
  std::vector<Tensor> set;
  if (const Attribute* a = node.attr(what + "_strings")) set.push_back(Tensor::FromVector(a->strings, {int64_t(a->strings.size())}));
  if (const Attribute* a = node.attr(what + "_int64s")) set.push_back(Tensor::FromVector(a->ints, {int64_t(a->ints.size())}));
  if (const Attribute* a = node.attr(what + "_floats")) set.push_back(Tensor::FromVector(a->floats, {int64_t(a->floats.size())}));
  if (const Attribute* a = node.attr(what + "_tensor"); a && tensors) {
    if (!a->t.defined() || !LabelTypes::set().contains(a->t.dtype()))
      return AttrError(node, absl::StrCat(what, "_tensor must be a tensor of string, int64, float, int32, int16 or double"));
    set.push_back(a->t.Reshaped({a->t.size()}));
  }
  if (set.size() != 1)
    return AttrError(node, absl::StrCat("exactly one ", what, "_* attribute must be set, got ", set.size()));
  if (!set[0].defined()) return absl::ResourceExhaustedError(node.Describe() + ": out of memory for " + what);
  return set[0];
}

// The value for keys not found: default_tensor with values_tensor, else the
// default_* attribute of the values' type, with the spec's defaults.
absl::StatusOr<Tensor> DefaultValue(const Node& node, DType dtype) {
  if (node.attr("values_tensor") != nullptr) {
    if (const Attribute* a = node.attr("default_tensor")) {
      if (!a->t.defined() || a->t.size() != 1 || a->t.dtype() != dtype)
        return AttrError(node, absl::StrCat("default_tensor must be one ", LowerName(dtype), " like values_tensor"));
      return a->t.Reshaped({1});
    }
  }
  switch (dtype) {
    case DType::kString: return Tensor::FromVector<std::string>({node.attr_string("default_string", "_Unused")}, {1});
    case DType::kFloat: return Tensor::FromVector<float>({node.attr_float("default_float", -0.0f)}, {1});
    case DType::kDouble: return Tensor::FromVector<double>({-0.0}, {1});
    default: {
      Tensor t = Tensor::Zeros(dtype, {1});
      SetDouble(t, 0, double(node.attr_int("default_int64", -1)));
      return t;
    }
  }
}

template <class K>
class LabelEncoderOp : public Op {
 public:
  LabelEncoderOp(const Tensor& keys, Tensor values, Tensor fallback)
      : key_dtype_(keys.dtype()), values_(std::move(values)), default_(std::move(fallback)) {
    const K* k = keys.data<K>();
    for (int64_t i = 0; i < keys.size(); ++i) {  // a repeated key: the last one wins
      if constexpr (std::is_floating_point_v<K>) {
        if (std::isnan(k[i])) {
          nan_index_ = i;  // NaN keys match every NaN
          continue;
        }
      }
      index_.insert_or_assign(k[i], i);
    }
  }
  absl::Status Infer(InferContext& ctx) const override {
    if (ctx.input(0).dtype != key_dtype_)
      return ctx.Error(absl::StrCat("X is ", LowerName(ctx.input(0).dtype), " but the keys are ", LowerName(key_dtype_)));
    ValueType y = ctx.input(0);
    y.dtype = values_.dtype();
    ctx.set_output(0, y);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    return Dispatch<LabelTypes>(ctx, y.dtype(), [&](auto tag) {
      using V = typename decltype(tag)::type;
      const V* values = values_.data<V>();
      const K* in = x.data<K>();
      V* out = y.data<V>();
      for (int64_t i = 0; i < x.size(); ++i) {
        const int64_t at = Find(in[i]);
        out[i] = at >= 0 ? values[at] : default_.data<V>()[0];
      }
    });
  }

 private:
  int64_t Find(const K& key) const {
    if constexpr (std::is_floating_point_v<K>) {
      if (std::isnan(key)) return nan_index_;
    }
    auto it = index_.find(key);
    return it == index_.end() ? -1 : it->second;
  }
  DType key_dtype_;
  Tensor values_, default_;
  std::unordered_map<K, int64_t> index_;
  int64_t nan_index_ = -1;
};

absl::StatusOr<std::unique_ptr<Op>> CreateLabelEncoder(const Node& node) {
  const bool v4 = node.opset >= 4;
  ASSIGN_OR_RETURN(Tensor keys, ListAttribute(node, "keys", v4));
  ASSIGN_OR_RETURN(Tensor values, ListAttribute(node, "values", v4));
  if (keys.size() != values.size())
    return AttrError(node, absl::StrCat("the keys (", keys.size(), ") and values (", values.size(),
                                        ") must be as many"));
  ASSIGN_OR_RETURN(Tensor fallback, DefaultValue(node, values.dtype()));
  std::unique_ptr<Op> op;
  VisitTypes<LabelTypes>(keys.dtype(), [&](auto tag) {
    using K = typename decltype(tag)::type;
    op = std::make_unique<LabelEncoderOp<K>>(keys, std::move(values), std::move(fallback));
  });
  return op;
}

// ---- Binarizer ----

using BinarizerTypes = TypeList<float, double, int64_t, int32_t>;

class BinarizerOp : public Op {
 public:
  explicit BinarizerOp(const Node& node) : threshold_(node.attr_float("threshold", 0.0f)) {}
  absl::Status Infer(InferContext& ctx) const override {
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    return Dispatch<BinarizerTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      // Compared in double: exact for every input type and the float threshold.
      for (int64_t i = 0; i < x.size(); ++i) out[i] = double(in[i]) > threshold_ ? T(1) : T(0);
    });
  }

 private:
  double threshold_;
};

// ---- ArrayFeatureExtractor ----

using FeatureTypes = TypeList<float, double, int64_t, int32_t, std::string>;

// Z[..., j] = X[..., Y[j]] over the last axis for every index of Y (flattened);
// a 1-D X gives [1, |Y|].
class ArrayFeatureExtractorOp : public Op {
 public:
  explicit ArrayFeatureExtractorOp(const Node&) {}
  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& idx = ctx.input(1);
    ValueType z;
    z.dtype = x.dtype;
    if (x.dims && x.rank() == 0) return ctx.Error("X must have at least one dim");
    if (x.dims && idx.dims) {
      Dim count = Dim::Known(1);
      for (const Dim& d : *idx.dims) {
        if (!d.known() || !count.known()) {
          count = Dim{};
          continue;
        }
        const std::optional<int64_t> product = CheckedMul(count.value, d.value);
        if (!product) return ctx.Error(absl::StrCat("Y's shape ", DimsToString(*idx.dims), " is too large"));
        count.value = *product;
      }
      z.dims = x.rank() == 1 ? std::vector<Dim>{Dim::Known(1)} : std::vector<Dim>(x.dims->begin(), x.dims->end() - 1);
      z.dims->push_back(count);
    }
    ctx.set_output(0, z);
    return absl::OkStatus();
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& idx = *ctx.input(1);
    Tensor& z = ctx.output(0);
    const int64_t n = x.dim(x.rank() - 1);
    const int64_t* index = idx.data<int64_t>();
    for (int64_t j = 0; j < idx.size(); ++j)
      if (index[j] < 0 || index[j] >= n)
        return ctx.Error(absl::StrCat("index Y[", j, "] = ", index[j], " is outside [0, ", n, ")"));
    const int64_t rows = n == 0 ? 0 : x.size() / n;
    return Dispatch<FeatureTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = z.data<T>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < idx.size(); ++j) out[r * idx.size() + j] = in[r * n + index[j]];
    });
  }
};

}  // namespace

std::vector<OpDef> MlOps() {
  return {
      {kMl, "LabelEncoder", 2, 3, "T1", "T2", {{"T1", kLabel2Types}, {"T2", kLabel2Types}}, CreateLabelEncoder},
      {kMl, "LabelEncoder", 4, 0, "T1", "T2", {{"T1", LabelTypes::set()}, {"T2", LabelTypes::set()}}, CreateLabelEncoder},
      {kMl, "Binarizer", 1, 0, "T", "T", {{"T", BinarizerTypes::set()}}, MakeOp<BinarizerOp>},
      {kMl, "ArrayFeatureExtractor", 1, 0, "T I", "T", {{"T", FeatureTypes::set()}, {"I", kInt64}},
       MakeOp<ArrayFeatureExtractorOp>},
  };
}

}  // namespace onnx_mini
