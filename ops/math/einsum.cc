// Einsum (ops/math/einsum.h): parsing, the planned evaluation over transposes and
// batched matrix products, the reference loop, and the op.
#include "ops/math/einsum.h"

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "ops/common.h"
#include "kernels/gemm/onednn.h"
#include "ops/ops.h"
#include "runtime/checked.h"

namespace onnx_mini {

namespace {

constexpr int kLetters = 52;

int LetterLabel(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
std::string LabelName(int l) {
  if (l >= kLetters) return absl::StrCat("ellipsis dim ", l - kLetters);
  return absl::StrCat("label '", std::string(1, char(l < 26 ? 'A' + l : 'a' + l - 26)), "'");
}

// One side of "->": its letters and where the ellipsis is (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;  // the number of letters before "..."
};

absl::StatusOr<Term> ParseTerm(const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      t.letters.push_back(LetterLabel(c));
    } else if (c == '.' && s.compare(i, 3, "...") == 0 && t.ellipsis_at < 0) {
      t.ellipsis_at = int(t.letters.size());
      i += 2;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("the term '", s, "' has '", std::string(1, c),
                                                     "' where a letter or one '...' belongs"));
    }
  }
  return t;
}

// The numbers einsum computes in: float for the 16-bit floats and float,
// double for double, the integer itself (wrapping) for integers.
template <class T> struct Work { using type = typename Arith<T>::type; };

template <class A>
A MulAdd(A acc, A x, A y) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;
    return A(U(acc) + U(x) * U(y));
  } else {
    return acc + x * y;
  }
}

// A work tensor: values in row-major order over `labels` (each label once).
template <class W>
struct Operand {
  std::vector<int> labels;
  std::vector<W> data;
  MemoryReservation charge;  // data's bytes, against the session's budget
};

// An operand of `count` elements (zeros), its memory charged first.
template <class W>
absl::StatusOr<Operand<W>> NewOperand(std::vector<int> labels, int64_t count, const std::shared_ptr<MemoryBudget>& budget) {
  Operand<W> o{std::move(labels), {}, MemoryReservation(budget)};
  RETURN_IF_ERROR(o.charge.Grow(count, sizeof(W), "an intermediate operand"));
  o.data.assign(size_t(count), W(0));
  return o;
}

// The product of the sizes of `labels`, or an error when it overflows.
absl::StatusOr<int64_t> Volume(const EinsumProblem& p, const std::vector<int>& labels) {
  Shape dims;
  for (int l : labels) dims.push_back(p.sizes[size_t(l)]);
  const std::optional<int64_t> v = CheckedProduct(dims);
  if (!v || *v > (int64_t(1) << 40))
    return absl::ResourceExhaustedError(absl::StrCat("einsum: an intermediate of shape ", ShapeToString(dims),
                                                     " is too large"));
  return *v;
}

// Calls f(offset_a, ...) over every combination of `labels` (row-major, the
// last label fastest); `strides[j][k]` is operand j's stride for labels[k].
template <class F>
void ForEachCombination(const EinsumProblem& p, const std::vector<int>& labels,
                        const std::vector<std::vector<int64_t>>& strides, F f) {
  const size_t n = labels.size();
  for (int l : labels)
    if (p.sizes[size_t(l)] == 0) return;
  std::vector<int64_t> idx(n, 0), off(strides.size(), 0);
  while (true) {
    f(off);
    size_t k = n;
    while (k > 0) {
      --k;
      const int64_t size = p.sizes[size_t(labels[k])];
      for (size_t j = 0; j < strides.size(); ++j) off[j] += strides[j][k];
      if (++idx[k] < size) break;
      for (size_t j = 0; j < strides.size(); ++j) off[j] -= strides[j][k] * size;
      idx[k] = 0;
      if (k == 0) return;
    }
    if (n == 0) return;
  }
}

// The strides of operand `shape` (labels `dims`) for each of `labels`: the sum
// over the dims with that label (a diagonal), 0 for a broadcast dim of 1.
std::vector<int64_t> LabelStrides(const Shape& shape, const std::vector<int>& dims, const std::vector<int>& labels,
                                  const EinsumProblem& p) {
  const std::vector<int64_t> strides = RowMajorStrides(shape);
  std::vector<int64_t> out(labels.size(), 0);
  for (size_t k = 0; k < labels.size(); ++k)
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] == labels[k] && !(shape[d] == 1 && p.sizes[size_t(labels[k])] != 1)) out[k] += strides[d];
  return out;
}

// Operand i reduced to the labels `keep` (in that order): diagonals taken,
// the operand's other real labels (`own`) summed. A broadcast dim (1 where
// the label is larger elsewhere) is not one of the operand's labels: the
// operand is constant along it, and nothing is expanded.
template <class T, class W>
absl::StatusOr<Operand<W>> Reduce(const EinsumProblem& p, const Tensor& t, const std::vector<int>& dims,
                                  const std::vector<int>& own, const std::vector<int>& keep,
                                  const std::shared_ptr<MemoryBudget>& budget) {
  std::vector<int> all = keep;
  for (int l : own)
    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
  ASSIGN_OR_RETURN(const int64_t size, Volume(p, keep));
  ASSIGN_OR_RETURN(Operand<W> o, NewOperand<W>(keep, size, budget));
  const std::vector<int64_t> in = LabelStrides(t.shape(), dims, all, p);
  std::vector<int64_t> out(all.size(), 0);
  const std::vector<int64_t> ks = RowMajorStrides([&] {
    Shape s;
    for (int l : keep) s.push_back(p.sizes[size_t(l)]);
    return s;
  }());
  for (size_t k = 0; k < keep.size(); ++k) out[k] = ks[k];
  const T* src = t.data<T>();
  ForEachCombination(p, all, {in, out}, [&](const std::vector<int64_t>& off) {
    W& acc = o.data[size_t(off[1])];
    acc = MulAdd<W>(acc, W(Widen(src[off[0]])), W(1));
  });
  return o;
}

// `o` with its labels reordered to `order` (a permutation of them).
template <class W>
absl::StatusOr<Operand<W>> Permute(const EinsumProblem& p, Operand<W>&& o, const std::vector<int>& order,
                                   const std::shared_ptr<MemoryBudget>& budget) {
  if (order == o.labels) return std::move(o);
  Shape shape;
  for (int l : o.labels) shape.push_back(p.sizes[size_t(l)]);
  const std::vector<int64_t> s = RowMajorStrides(shape);
  std::vector<int64_t> in(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    in[k] = s[size_t(std::find(o.labels.begin(), o.labels.end(), order[k]) - o.labels.begin())];
  ASSIGN_OR_RETURN(Operand<W> r, NewOperand<W>(order, int64_t(o.data.size()), budget));
  int64_t i = 0;
  ForEachCombination(p, order, {in}, [&](const std::vector<int64_t>& off) { r.data[size_t(i++)] = o.data[size_t(off[0])]; });
  return r;
}

// C[b] = A[b] (M x K) x B[b] (K x N), on oneDNN for float, a plain loop otherwise.
template <class W>
void BatchedMatMul(const W* a, const W* b, W* c, int64_t batch, int64_t M, int64_t K, int64_t N, int threads) {
  if constexpr (std::is_same_v<W, float>) {
    if (OneDnnMatMul(DType::kFloat, a, b, c, batch, batch, batch, M, K, N, false, false, threads)) return;
  }
  ParallelFor(threads, batch * M, WorkPerIndex{double(K) * double(N) / 4},
              [&](int64_t t_begin, int64_t t_end) { for (int64_t t = t_begin; t < t_end; ++t) {
    const int64_t bi = t / M, m = t % M;
    W* row = c + t * N;
    std::fill(row, row + N, W(0));
    for (int64_t k = 0; k < K; ++k) {
      const W x = a[(bi * M + m) * K + k];
      const W* brow = b + (bi * K + k) * N;
      for (int64_t n = 0; n < N; ++n) row[n] = MulAdd<W>(row[n], x, brow[n]);
    }
  }});
}

bool Contains(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

template <class T>
absl::Status Planned(const EinsumProblem& p, const std::vector<const Tensor*>& operands, Tensor& out, int threads,
                     const std::shared_ptr<MemoryBudget>& budget) {
  using W = typename Work<T>::type;
  const EinsumLabels& L = p.labels;
  const size_t count = operands.size();
  // Each operand's own labels: once each, without its broadcast dims.
  std::vector<std::vector<int>> own(count);
  for (size_t i = 0; i < count; ++i)
    for (size_t d = 0; d < L.inputs[i].size(); ++d) {
      const int l = L.inputs[i][d];
      if (!Contains(own[i], l) && operands[i]->dim(int64_t(d)) == p.sizes[size_t(l)]) own[i].push_back(l);
    }
  // Labels needed after operand i: in the output or in a later operand.
  auto needed_after = [&](size_t i) {
    std::vector<int> need = L.output;
    for (size_t j = i + 1; j < count; ++j)
      for (int l : own[j])
        if (!Contains(need, l)) need.push_back(l);
    return need;
  };
  // Each operand keeps the labels that the output or another operand has.
  auto kept = [&](size_t i) {
    std::vector<int> keep;
    for (int l : own[i]) {
      bool other = Contains(L.output, l);
      for (size_t j = 0; j < count && !other; ++j) other = j != i && Contains(own[j], l);
      if (other) keep.push_back(l);
    }
    return keep;
  };
  ASSIGN_OR_RETURN(Operand<W> acc, (Reduce<T, W>(p, *operands[0], L.inputs[0], own[0], kept(0), budget)));
  for (size_t i = 1; i < count; ++i) {
    ASSIGN_OR_RETURN(Operand<W> next, (Reduce<T, W>(p, *operands[i], L.inputs[i], own[i], kept(i), budget)));
    const std::vector<int> need = needed_after(i);
    std::vector<int> batch, m, k, n;
    for (int l : acc.labels) {
      if (!Contains(next.labels, l)) m.push_back(l);
      else if (Contains(need, l)) batch.push_back(l);
      else k.push_back(l);
    }
    for (int l : next.labels)
      if (!Contains(acc.labels, l)) n.push_back(l);
    auto join = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
      a.insert(a.end(), b.begin(), b.end());
      a.insert(a.end(), c.begin(), c.end());
      return a;
    };
    ASSIGN_OR_RETURN(const Operand<W> a, Permute(p, std::move(acc), join(batch, m, k), budget));
    ASSIGN_OR_RETURN(const Operand<W> b, Permute(p, std::move(next), join(batch, k, n), budget));
    ASSIGN_OR_RETURN(const int64_t B, Volume(p, batch));
    ASSIGN_OR_RETURN(const int64_t M, Volume(p, m));
    ASSIGN_OR_RETURN(const int64_t K, Volume(p, k));
    ASSIGN_OR_RETURN(const int64_t N, Volume(p, n));
    ASSIGN_OR_RETURN(const int64_t total, Volume(p, join(batch, m, n)));
    ASSIGN_OR_RETURN(Operand<W> c, NewOperand<W>(join(batch, m, n), total, budget));
    if (total > 0 && K > 0) BatchedMatMul(a.data.data(), b.data.data(), c.data.data(), B, M, K, N, threads);
    acc = std::move(c);
  }
  // Every remaining label is an output label; a label summed only now (one operand) was summed by Reduce.
  ASSIGN_OR_RETURN(const Operand<W> r, Permute(p, std::move(acc), L.output, budget));
  T* dst = out.data<T>();
  for (size_t i = 0; i < r.data.size(); ++i) dst[i] = Narrow<T>(typename Arith<T>::type(r.data[i]));
  return absl::OkStatus();
}

template <class T>
absl::Status Reference(const EinsumProblem& p, const std::vector<const Tensor*>& operands, Tensor& out) {
  // Accumulate in double for floats, wrapping in the type for integers.
  using A = std::conditional_t<std::is_integral_v<T>, T, double>;
  const EinsumLabels& L = p.labels;
  std::vector<int> all = L.output;
  for (const std::vector<int>& in : L.inputs)
    for (int l : in)
      if (!Contains(all, l)) all.push_back(l);
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < operands.size(); ++i) strides.push_back(LabelStrides(operands[i]->shape(), L.inputs[i], all, p));
  std::vector<int64_t> out_strides(all.size(), 0);
  const std::vector<int64_t> os = RowMajorStrides(p.output_shape);
  for (size_t k = 0; k < L.output.size(); ++k) out_strides[k] = os[k];
  strides.push_back(out_strides);
  std::vector<A> acc(size_t(out.size()), A(0));
  ForEachCombination(p, all, strides, [&](const std::vector<int64_t>& off) {
    A prod = A(1);
    for (size_t i = 0; i < operands.size(); ++i) prod = MulAdd<A>(A(0), prod, A(Widen(operands[i]->data<T>()[off[i]])));
    acc[size_t(off.back())] = MulAdd<A>(acc[size_t(off.back())], prod, A(1));
  });
  T* dst = out.data<T>();
  for (size_t i = 0; i < acc.size(); ++i) dst[i] = Narrow<T>(typename Arith<T>::type(acc[i]));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EinsumLabels> ParseEinsum(const std::string& equation, const std::vector<int64_t>& ranks) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    ASSIGN_OR_RETURN(Term t, ParseTerm(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return absl::InvalidArgumentError(absl::StrCat("the equation has ", terms.size(), " operand terms for ",
                                                   ranks.size(), " inputs"));
  // The ellipsis dims of each operand, right-aligned to the longest.
  int64_t ellipsis = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t letters = int64_t(terms[i].letters.size());
    if (terms[i].ellipsis_at < 0 ? ranks[i] != letters : ranks[i] < letters)
      return absl::InvalidArgumentError(absl::StrCat("term ", i, " has ", letters, " letters",
                                                     terms[i].ellipsis_at < 0 ? "" : " and '...'", " for an input of rank ",
                                                     ranks[i]));
    if (terms[i].ellipsis_at >= 0) ellipsis = std::max(ellipsis, ranks[i] - letters);
  }
  EinsumLabels out;
  out.count = kLetters + int(ellipsis);
  std::vector<int> uses(size_t(kLetters), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> dims = terms[i].letters;
    for (int l : dims) ++uses[size_t(l)];
    if (terms[i].ellipsis_at >= 0) {
      const int64_t e = ranks[i] - int64_t(dims.size());
      std::vector<int> ell;
      for (int64_t j = 0; j < e; ++j) ell.push_back(kLetters + int(ellipsis - e + j));
      dims.insert(dims.begin() + terms[i].ellipsis_at, ell.begin(), ell.end());
    }
    out.inputs.push_back(std::move(dims));
  }
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dims, then the letters used once, sorted.
    for (int j = 0; j < int(ellipsis); ++j) out.output.push_back(kLetters + j);
    for (int l = 0; l < kLetters; ++l)
      if (uses[size_t(l)] == 1) out.output.push_back(l);
    return out;
  }
  ASSIGN_OR_RETURN(const Term rhs, ParseTerm(eq.substr(arrow + 2)));
  for (size_t k = 0; k <= rhs.letters.size(); ++k) {
    if (int(k) == rhs.ellipsis_at)
      for (int j = 0; j < int(ellipsis); ++j) out.output.push_back(kLetters + j);
    if (k == rhs.letters.size()) break;
    const int l = rhs.letters[k];
    if (uses[size_t(l)] == 0 || Contains(out.output, l))
      return absl::InvalidArgumentError(absl::StrCat("output ", LabelName(l),
                                                     uses[size_t(l)] == 0 ? " is in no input" : " is repeated"));
    out.output.push_back(l);
  }
  return out;
}

absl::StatusOr<EinsumProblem> ResolveEinsum(const EinsumLabels& labels, const std::vector<Shape>& shapes) {
  EinsumProblem p;
  p.labels = labels;
  p.sizes.assign(size_t(labels.count), -1);
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      const int l = labels.inputs[i][d];
      int64_t& size = p.sizes[size_t(l)];
      const int64_t v = shapes[i][d];
      // Ellipsis dims broadcast (1 against n); letters must agree.
      if (size < 0 || (l >= kLetters && size == 1)) size = v;
      else if (v != size && !(l >= kLetters && v == 1))
        return absl::InvalidArgumentError(
            absl::StrCat(LabelName(l), " has size ", size, " and ", v, " in different places"));
    }
  for (int l : labels.output) p.output_shape.push_back(p.sizes[size_t(l)]);
  return p;
}

using EinsumTypes = NumericTypes;

absl::Status EinsumPlanned(const EinsumProblem& problem, const std::vector<const Tensor*>& operands, Tensor& out,
                           int threads, const std::shared_ptr<MemoryBudget>& budget) {
  absl::Status status = absl::InternalError("einsum: no case for " + LowerName(out.dtype()));
  VisitTypes<EinsumTypes>(out.dtype(), [&](auto tag) {
    status = Planned<typename decltype(tag)::type>(problem, operands, out, threads, budget);
  });
  return status;
}

absl::Status EinsumReference(const EinsumProblem& problem, const std::vector<const Tensor*>& operands, Tensor& out) {
  absl::Status status = absl::InternalError("einsum: no case for " + LowerName(out.dtype()));
  VisitTypes<EinsumTypes>(out.dtype(), [&](auto tag) {
    status = Reference<typename decltype(tag)::type>(problem, operands, out);
  });
  return status;
}

namespace {

struct EinsumPlan : OpPlan {
  EinsumProblem problem;
};

class EinsumOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    const Attribute* eq = node.attr("equation");
    if (eq == nullptr || eq->type != AttrType::kString)
      return absl::InvalidArgumentError(node.Describe() + ": attribute 'equation' is required");
    return std::unique_ptr<Op>(new EinsumOp(eq->s));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out;
    out.dtype = ctx.input(0).dtype;
    std::vector<int64_t> ranks;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.input(i).dims) {
        ctx.set_output(0, out);
        return absl::OkStatus();
      }
      ranks.push_back(ctx.input(i).rank());
    }
    absl::StatusOr<EinsumLabels> labels = ParseEinsum(equation_, ranks);
    if (!labels.ok()) return ctx.Error(absl::StrCat("equation '", equation_, "': ", labels.status().message()));
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const std::optional<Shape> s = ctx.input(i).concrete_shape();
      if (!s) {
        out.dims = std::vector<Dim>(labels->output.size());
        ctx.set_output(0, out);
        return absl::OkStatus();
      }
      shapes.push_back(*s);
    }
    absl::StatusOr<EinsumProblem> problem = ResolveEinsum(*labels, shapes);
    if (!problem.ok()) return ctx.Error(absl::StrCat("equation '", equation_, "': ", problem.status().message()));
    out = ValueType::Of(out.dtype, problem->output_shape);
    auto plan = std::make_shared<EinsumPlan>();
    plan->problem = *std::move(problem);
    ctx.set_plan(std::move(plan));
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> operands;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) operands.push_back(ctx.input(i));
    const absl::Status s =
        EinsumPlanned(ctx.plan<EinsumPlan>().problem, operands, ctx.output(0), ctx.threads(), ctx.budget());
    if (s.ok()) return s;
    return absl::Status(s.code(), absl::StrCat(ctx.node().Describe(), ": ", s.message()));
  }

 private:
  explicit EinsumOp(std::string equation) : equation_(std::move(equation)) {}
  std::string equation_;
};

}  // namespace

std::vector<OpDef> EinsumOps() {
  return {{"", "Einsum", 12, 0, "T*", "T", {{"T", kNumericTypes}}, EinsumOp::Create}};
}

}  // namespace onnx_mini
