// Loss functions, forward (inference) semantics: NegativeLogLikelihoodLoss
// (12, 13, 22) and SoftmaxCrossEntropyLoss (12, 13). Their gradients are
// training-only and not part of the runtime.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {
namespace {

enum class Reduction { kNone, kSum, kMean };

// The input viewed as (N, C, D): D the product of the spatial dims d1..dk.
struct LossPlan : OpPlan {
  int64_t n = 0, c = 0, d = 0;
};

// Input 0 is (N, C, d1, ..., dk): log-probabilities (NLL) or scores (SCE);
// input 1 the targets (N, d1, ..., dk), each a class in [0, C) or
// ignore_index; input 2 the optional per-class weights (C). Output 0 is the
// per-sample loss -logp[n, target, d] * weight[target] (0 where ignored), or
// its sum, or its mean weighted by the targets' weights; SCE's optional output
// 1 is log(softmax(scores)) along C.
template <bool kSoftmax>
class LossOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const std::string r = node.attr_string("reduction", "mean");
    Reduction reduction;
    if (r == "none") reduction = Reduction::kNone;
    else if (r == "sum") reduction = Reduction::kSum;
    else if (r == "mean") reduction = Reduction::kMean;
    else
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": reduction '", r, "' is not one of none, sum, mean"));
    const bool has_ignore = node.attr("ignore_index") != nullptr;
    return std::unique_ptr<Op>(new LossOp(reduction, has_ignore, node.attr_int("ignore_index", 0)));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const ValueType& x = ctx.input(0);
    const ValueType& target = ctx.input(1);
    ValueType loss;
    loss.dtype = x.dtype;
    if (reduction_ != Reduction::kNone) loss.dims.emplace();  // a scalar
    else if (target.dims) loss.dims = target.dims;
    if (x.dims) {
      const int64_t rank = x.rank();
      if (rank < 2) return ctx.Error(absl::StrCat("input ", x.ToString(), " must be (N, C, d1, ..., dk)"));
      const std::vector<Dim>& xd = *x.dims;
      if (target.dims) {
        const std::vector<Dim>& td = *target.dims;
        bool match = int64_t(td.size()) == rank - 1;
        for (size_t k = 0; match && k < td.size(); ++k) {
          const Dim& want = xd[k == 0 ? 0 : k + 1];
          match = !(td[k].known() && want.known() && td[k].value != want.value);
        }
        if (!match)
          return ctx.Error(absl::StrCat("target ", target.ToString(), " must be (N, d1, ..., dk) of input ",
                                        x.ToString()));
        if (reduction_ == Reduction::kNone) {
          // The input's dims where the target's are unknown.
          for (size_t k = 0; k < td.size(); ++k)
            if (!(*loss.dims)[k].known()) (*loss.dims)[k] = xd[k == 0 ? 0 : k + 1];
        }
      } else if (reduction_ == Reduction::kNone) {
        loss.dims.emplace();
        for (int64_t k = 0; k < rank; ++k)
          if (k != 1) loss.dims->push_back(xd[size_t(k)]);
      }
      if (ctx.has_input(2) && ctx.input(2).dims) {
        const std::vector<Dim>& wd = *ctx.input(2).dims;
        if (wd.size() != 1 || (wd[0].known() && xd[1].known() && wd[0].value != xd[1].value))
          return ctx.Error(absl::StrCat("weight ", ctx.input(2).ToString(), " must be (C) of input ", x.ToString()));
      }
      if (std::optional<Shape> shape = x.concrete_shape()) {
        auto plan = std::make_shared<LossPlan>();
        plan->n = (*shape)[0];
        plan->c = (*shape)[1];
        // Overflows only when N or C is 0; with N = 0 there is nothing to
        // compute, and with C = 0 a target of N * D elements would not fit.
        plan->d = CheckedProduct(*shape, 2, shape->size()).value_or(0);
        ctx.set_plan(std::move(plan));
      }
    }
    ctx.set_output(0, loss);
    if (kSoftmax) ctx.set_output(1, x);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    const Tensor& target = *ctx.input(1);
    const Tensor* weight = ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    const LossPlan& plan = ctx.plan<LossPlan>();
    const int64_t n = plan.n, c = plan.c, d = plan.d;
    // The targets are data: each is a class or ignore_index, checked before use.
    const std::vector<int64_t> classes = IndexValues(target);
    for (size_t i = 0; i < classes.size(); ++i) {
      const int64_t t = classes[i];
      if ((has_ignore_ && t == ignore_index_) || (t >= 0 && t < c)) continue;
      return ctx.Error(absl::StrCat("target ", t, " at flat index ", i, " is outside [0, ", c, ")",
                                    has_ignore_ ? absl::StrCat(" and is not ignore_index ", ignore_index_) : ""));
    }
    Tensor& out = ctx.output(0);
    Tensor* log_prob = kSoftmax && ctx.num_outputs() > 1 && ctx.output_requested(1) ? &ctx.output(1) : nullptr;
    return Dispatch<FloatTypes>(ctx, x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = typename Arith<T>::type;
      const T* px = x.data<T>();
      const T* pw = weight ? weight->data<T>() : nullptr;
      T* pl = out.data<T>();
      double total = 0, weights = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t e = 0; e < d; ++e) {
          const auto at = [&](int64_t k) { return (i * c + k) * d + e; };
          // SCE: log(softmax) along C, as max + log(sum(exp(x - max))) is subtracted.
          double lse = 0;
          if constexpr (kSoftmax) {
            double max = -std::numeric_limits<double>::infinity();
            for (int64_t k = 0; k < c; ++k) max = std::max(max, double(Widen(px[at(k)])));
            double sum = 0;
            for (int64_t k = 0; k < c; ++k) sum += std::exp(double(Widen(px[at(k)])) - max);
            lse = max + std::log(sum);
            if (log_prob)
              for (int64_t k = 0; k < c; ++k) log_prob->data<T>()[at(k)] = Narrow<T>(A(double(Widen(px[at(k)])) - lse));
          }
          const int64_t t = classes[size_t(i * d + e)];
          double l = 0, w = 0;
          if (!(has_ignore_ && t == ignore_index_)) {
            w = pw ? double(Widen(pw[t])) : 1.0;
            l = -(double(Widen(px[at(t)])) - lse) * w;
          }
          if (reduction_ == Reduction::kNone) pl[i * d + e] = Narrow<T>(A(l));
          total += l;
          weights += w;
        }
      // The mean of nothing (every sample ignored, or none) is 0/0: NaN, as the reference gives.
      if (reduction_ == Reduction::kSum) pl[0] = Narrow<T>(A(total));
      if (reduction_ == Reduction::kMean) pl[0] = Narrow<T>(A(total / weights));
    });
  }

 private:
  LossOp(Reduction reduction, bool has_ignore, int64_t ignore_index)
      : reduction_(reduction), has_ignore_(has_ignore), ignore_index_(ignore_index) {}
  Reduction reduction_;
  bool has_ignore_;
  int64_t ignore_index_;
};

}  // namespace

std::vector<OpDef> LossOps() {
  const std::vector<TypeConstraint> types = {{"T", kFloatTypes}, {"Tind", kIndexTypes}};
  return {
      {kOnnxDomain, "NegativeLogLikelihoodLoss", Versions{12}, "T Tind T?", "T", types, LossOp<false>::Create},
      {kOnnxDomain, "SoftmaxCrossEntropyLoss", Versions{12}, "T Tind T?", "T T?", types, LossOp<true>::Create},
  };
}

}  // namespace onnx_mini
