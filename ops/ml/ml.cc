// The ai.onnx.ml ops: LabelEncoder (1, 2 and 4), Binarizer, ArrayFeatureExtractor,
// TreeEnsemble (5).
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"
#include "runtime/element.h"

namespace onnx_mini {
namespace {

absl::Status AttrError(const Node& node, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", rule));
}

// ---- LabelEncoder ----

// LabelEncoder-4's key and value types; version 2 has the first three.
using LabelTypes = TypeList<std::string, int64_t, float, int32_t, int16_t, double>;
constexpr TypeSet kLabel2Types = {DType::kString, DType::kInt64, DType::kFloat};
constexpr TypeSet kLabel1Types = {DType::kString, DType::kInt64};

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

// LabelEncoder-1: classes_strings, one way or the other as the default set
// says (default_int64: strings to their index; default_string: indices to
// strings). A repeated class: its first index.
absl::StatusOr<std::unique_ptr<Op>> CreateLabelEncoder1(const Node& node) {
  const bool to_int = node.attr("default_int64") != nullptr;
  if (to_int == (node.attr("default_string") != nullptr))
    return AttrError(node, "exactly one of default_int64 and default_string must be set");
  const Attribute* a = node.attr("classes_strings");
  std::vector<std::string> classes = a ? a->strings : std::vector<std::string>{};
  std::vector<std::string> first_strings;
  std::vector<int64_t> first_indices;
  std::unordered_map<std::string, int64_t> seen;
  for (size_t i = 0; i < classes.size(); ++i)
    if (seen.emplace(classes[i], int64_t(i)).second) {
      first_strings.push_back(classes[i]);
      first_indices.push_back(int64_t(i));
    }
  std::vector<int64_t> all(classes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int64_t(i);
  const auto vec = [](const auto& v) { return Tensor::FromVector(v, {int64_t(v.size())}); };
  if (to_int)
    return std::unique_ptr<Op>(new LabelEncoderOp<std::string>(
        vec(first_strings), vec(first_indices), Tensor::FromVector<int64_t>({node.attr_int("default_int64", -1)}, {1})));
  return std::unique_ptr<Op>(new LabelEncoderOp<int64_t>(
      vec(all), vec(classes), Tensor::FromVector<std::string>({node.attr_string("default_string", "_Unused")}, {1})));
}

absl::StatusOr<std::unique_ptr<Op>> CreateLabelEncoder(const Node& node) {
  if (node.opset < 2) return CreateLabelEncoder1(node);
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

// ---- TreeEnsemble ----

enum class Branch { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };
enum class Aggregate { kAverage, kSum, kMin, kMax };

using TreeTypes = TypeList<float, double, Float16>;

// The trees are checked once, at creation: every child index in range and no
// cycle (a walk from a root always ends on a leaf), so runs only walk.
class TreeEnsembleOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    for (const char* required : {"nodes_featureids", "nodes_modes", "nodes_splits", "nodes_truenodeids",
                                 "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs", "leaf_targetids",
                                 "leaf_weights", "tree_roots"})
      if (node.attr(required) == nullptr) return AttrError(node, absl::StrCat("attribute '", required, "' is required"));
    auto op = std::unique_ptr<TreeEnsembleOp>(new TreeEnsembleOp());
    const int64_t aggregate = node.attr_int("aggregate_function", 1);
    if (aggregate < 0 || aggregate > 3) return AttrError(node, absl::StrCat("aggregate_function ", aggregate, " is not 0 to 3"));
    op->aggregate_ = Aggregate(aggregate);
    const int64_t post = node.attr_int("post_transform", 0);
    if (post != 0) return NotImplemented(node, absl::StrCat("post_transform ", post));
    op->targets_ = node.attr_int("n_targets", 1);
    if (op->targets_ < 0 || op->targets_ > (int64_t(1) << 32))
      return AttrError(node, absl::StrCat("n_targets must be in [0, 2^32], got ", op->targets_));

    const std::vector<int64_t> features = node.attr_ints("nodes_featureids");
    const size_t n = features.size();
    const Tensor& modes = node.attr("nodes_modes")->t;
    const Tensor& splits = node.attr("nodes_splits")->t;
    const std::vector<int64_t> true_ids = node.attr_ints("nodes_truenodeids");
    const std::vector<int64_t> false_ids = node.attr_ints("nodes_falsenodeids");
    const std::vector<int64_t> true_leafs = node.attr_ints("nodes_trueleafs");
    const std::vector<int64_t> false_leafs = node.attr_ints("nodes_falseleafs");
    std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
    if (missing.empty()) missing.assign(n, 0);
    for (const Tensor* t : {&modes, &splits})
      if (!t->defined() || !IsCastable(t->dtype()) || t->size() != int64_t(n))
        return AttrError(node, absl::StrCat("nodes_modes and nodes_splits must be numeric tensors of ", n, " entries"));
    for (size_t size : {true_ids.size(), false_ids.size(), true_leafs.size(), false_leafs.size(), missing.size()})
      if (size != n) return AttrError(node, absl::StrCat("every nodes_* attribute must have ", n, " entries"));
    const std::vector<int64_t> targets = node.attr_ints("leaf_targetids");
    const Tensor& weights = node.attr("leaf_weights")->t;
    if (!weights.defined() || !IsCastable(weights.dtype()) || weights.size() != int64_t(targets.size()))
      return AttrError(node, absl::StrCat("leaf_weights must be a numeric tensor of ", targets.size(), " entries"));
    for (size_t l = 0; l < targets.size(); ++l) {
      if (targets[l] < 0 || targets[l] >= op->targets_)
        return AttrError(node, absl::StrCat("leaf_targetids[", l, "] = ", targets[l], " is outside [0, ", op->targets_, ")"));
      op->leaves_.push_back({GetDouble(weights, int64_t(l)), targets[l]});
    }

    // Membership sets: NaN-delimited, in the order of the member nodes.
    std::vector<double> members;
    if (const Attribute* a = node.attr("membership_values"); a && a->t.defined()) {
      if (!IsCastable(a->t.dtype())) return AttrError(node, "membership_values must be numeric");
      for (int64_t i = 0; i < a->t.size(); ++i) members.push_back(GetDouble(a->t, i));
    }
    size_t next_member = 0;
    for (size_t i = 0; i < n; ++i) {
      TreeNode t;
      const double mode = GetDouble(modes, int64_t(i));
      if (!(mode >= 0 && mode <= 6) || mode != std::floor(mode))
        return AttrError(node, absl::StrCat("nodes_modes[", i, "] = ", mode, " is not 0 to 6"));
      t.mode = Branch(int(mode));
      t.split = GetDouble(splits, int64_t(i));
      t.feature = features[i];
      t.missing_true = missing[i] != 0;
      if (t.mode == Branch::kMember) {
        t.set = int64_t(op->sets_.size());
        op->sets_.emplace_back();
        if (next_member >= members.size())
          return AttrError(node, absl::StrCat("membership_values has no set for node ", i));
        for (; next_member < members.size() && !std::isnan(members[next_member]); ++next_member)
          op->sets_.back().insert(members[next_member]);
        ++next_member;  // the NaN delimiter
      }
      for (int side = 0; side < 2; ++side) {
        const bool leaf = (side == 0 ? true_leafs[i] : false_leafs[i]) != 0;
        const int64_t id = side == 0 ? true_ids[i] : false_ids[i];
        const int64_t limit = leaf ? int64_t(op->leaves_.size()) : int64_t(n);
        if (id < 0 || id >= limit)
          return AttrError(node, absl::StrCat("node ", i, "'s ", side == 0 ? "true" : "false", " ",
                                              leaf ? "leaf" : "node", " id ", id, " is outside [0, ", limit, ")"));
        (side == 0 ? t.true_child : t.false_child) = leaf ? ~id : id;  // leaves as ~index
      }
      op->nodes_.push_back(t);
    }
    // The roots; a root whose branches are the same leaf is that leaf. Then
    // every node reachable from a root is visited once, depth first: a node
    // met again on the current path is a cycle.
    std::vector<int8_t> state(n, 0);  // 0 unseen, 1 on the path, 2 done
    for (int64_t root : node.attr_ints("tree_roots")) {
      if (root < 0 || root >= int64_t(n)) return AttrError(node, absl::StrCat("tree root ", root, " is outside [0, ", n, ")"));
      const TreeNode& r = op->nodes_[size_t(root)];
      if (r.true_child < 0 && r.true_child == r.false_child) {
        op->roots_.push_back(r.true_child);
        continue;
      }
      op->roots_.push_back(root);
      std::vector<std::pair<int64_t, int>> stack = {{root, 0}};  // node, children visited
      state[size_t(root)] = state[size_t(root)] == 2 ? 2 : 1;
      if (state[size_t(root)] == 2) continue;
      while (!stack.empty()) {
        auto& [at, visited] = stack.back();
        const TreeNode& t = op->nodes_[size_t(at)];
        op->max_feature_ = std::max(op->max_feature_, t.feature);
        if (t.feature < 0) return AttrError(node, absl::StrCat("node ", at, "'s feature id ", t.feature, " is negative"));
        if (visited == 2) {
          state[size_t(at)] = 2;
          stack.pop_back();
          continue;
        }
        const int64_t child = visited++ == 0 ? t.true_child : t.false_child;
        if (child < 0 || state[size_t(child)] == 2) continue;
        if (state[size_t(child)] == 1) return AttrError(node, absl::StrCat("the trees have a cycle through node ", child));
        state[size_t(child)] = 1;
        stack.push_back({child, 0});
      }
    }
    return std::unique_ptr<Op>(std::move(op));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    ValueType y;
    y.dtype = x.dtype;
    if (x.dims) {
      if (x.rank() != 2) return ctx.Error(absl::StrCat("X must be [N, F], got ", DimsToString(*x.dims)));
      const Dim& f = (*x.dims)[1];
      if (f.known() && max_feature_ >= f.value)
        return ctx.Error(absl::StrCat("a node reads feature ", max_feature_, " of X's ", f.value));
      y.dims = std::vector<Dim>{(*x.dims)[0], Dim::Known(targets_)};
    }
    ctx.set_output(0, y);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    Tensor& y = ctx.output(0);
    return Dispatch<TreeTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t rows = x.dim(0), features = x.dim(1);
      if (rows == 0) return;
      // MIN and MAX start from the type's extremes (targets no leaf reaches keep them).
      const double limit = std::is_same_v<T, Float16> ? 65504.0 : std::is_same_v<T, double>
                               ? std::numeric_limits<double>::max() : double(std::numeric_limits<float>::max());
      std::vector<double> acc(static_cast<size_t>(targets_));
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = x.data<T>() + r * features;
        std::fill(acc.begin(), acc.end(),
                  aggregate_ == Aggregate::kMin ? limit : aggregate_ == Aggregate::kMax ? -limit : 0.0);
        for (int64_t root : roots_) {
          const Leaf& leaf = leaves_[size_t(~Walk(root, row))];
          double& a = acc[size_t(leaf.target)];
          switch (aggregate_) {
            case Aggregate::kSum: a += leaf.weight; break;
            case Aggregate::kAverage: a += leaf.weight / double(roots_.size()); break;
            case Aggregate::kMin: a = std::min(a, leaf.weight); break;
            case Aggregate::kMax: a = std::max(a, leaf.weight); break;
          }
        }
        for (int64_t t = 0; t < targets_; ++t) y.data<T>()[r * targets_ + t] = Narrow<T>(typename Arith<T>::type(acc[size_t(t)]));
      }
    });
  }

 private:
  struct TreeNode {
    Branch mode = Branch::kLeq;
    double split = 0;
    int64_t feature = 0;
    bool missing_true = false;
    int64_t set = -1;                     // kMember: index into sets_
    int64_t true_child = 0, false_child = 0;  // a node index, or ~leaf index
  };
  struct Leaf {
    double weight;
    int64_t target;
  };
  TreeEnsembleOp() = default;

  // From `at` (a node, or ~leaf) down to a leaf; returns ~leaf.
  template <class T>
  int64_t Walk(int64_t at, const T* row) const {
    while (at >= 0) {
      const TreeNode& t = nodes_[size_t(at)];
      const double v = double(Widen(row[t.feature]));
      bool go_true;
      if (std::isnan(v) && t.missing_true) {
        go_true = true;
      } else {
        switch (t.mode) {
          case Branch::kLeq: go_true = v <= t.split; break;
          case Branch::kLt: go_true = v < t.split; break;
          case Branch::kGte: go_true = v >= t.split; break;
          case Branch::kGt: go_true = v > t.split; break;
          case Branch::kEq: go_true = v == t.split; break;
          case Branch::kNeq: go_true = v != t.split; break;
          default: go_true = sets_[size_t(t.set)].count(v) > 0; break;
        }
      }
      at = go_true ? t.true_child : t.false_child;
    }
    return at;
  }

  Aggregate aggregate_ = Aggregate::kSum;
  int64_t targets_ = 1, max_feature_ = -1;
  std::vector<TreeNode> nodes_;
  std::vector<Leaf> leaves_;
  std::vector<std::unordered_set<double>> sets_;
  std::vector<int64_t> roots_;  // node indices, or ~leaf for a tree that is a leaf
};

}  // namespace

std::vector<OpDef> MlOps() {
  return {
      {kMlDomain, "LabelEncoder", Versions{1, 1}, "T1", "T2", {{"T1", kLabel1Types}, {"T2", kLabel1Types}},
       CreateLabelEncoder},
      {kMlDomain, "LabelEncoder", Versions{2, 3}, "T1", "T2", {{"T1", kLabel2Types}, {"T2", kLabel2Types}},
       CreateLabelEncoder},
      {kMlDomain, "LabelEncoder", Versions{4}, "T1", "T2", {{"T1", LabelTypes::set()}, {"T2", LabelTypes::set()}},
       CreateLabelEncoder},
      {kMlDomain, "Binarizer", Versions{1}, "T", "T", {{"T", BinarizerTypes::set()}}, MakeOp<BinarizerOp>},
      {kMlDomain, "ArrayFeatureExtractor", Versions{1}, "T I", "T", {{"T", FeatureTypes::set()}, {"I", kInt64}},
       MakeOp<ArrayFeatureExtractorOp>},
      {kMlDomain, "TreeEnsemble", Versions{5}, "T", "T", {{"T", TreeTypes::set()}}, TreeEnsembleOp::Create},
  };
}

}  // namespace onnx_mini
