// Recurrent layers: RNN (1, 7, 14, 22), GRU (1, 3, 7, 14, 22), LSTM (1, 7,
// 14, 22). One op serves the three: they share the inputs' layout, the
// directions, sequence_lens, the activations and the outputs, and differ in
// the gates (1, 3 or 4 per step) and the cell update.
//
// Per direction, the input projection X·Wᵀ of every step is one GEMM (both
// biases folded in); each step then multiplies the state by Rᵀ and updates
// the gates. The fast path runs both GEMMs on oneDNN in float (16-bit inputs
// are widened to float once); the reference runs plain loops. Rows past their
// sequence length keep their state and write zeros to Y.
#include "ops/nn/rnn.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "absl/strings/ascii.h"
#include "ops/common.h"
#include "kernels/gemm/gemv.h"
#include "kernels/gemm/onednn.h"
#include "kernels/vec/sigmoid.h"
#include "kernels/vec/vec_math.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

std::atomic<bool> g_reference{false};

using RnnTypes = TypeList<float, double, Float16>;
using RnnTypes22 = TypeList<float, double, Float16, BFloat16>;

enum class Kind { kRnn, kGru, kLstm };

// Gates per step: RNN [i], GRU [z, r, h], LSTM [i, o, f, c].
int Gates(Kind k) { return k == Kind::kRnn ? 1 : k == Kind::kGru ? 3 : 4; }
// Activations per direction: RNN f; GRU f, g; LSTM f, g, h.
int ActivationCount(Kind k) { return k == Kind::kRnn ? 1 : k == Kind::kGru ? 2 : 3; }

struct Activation {
  enum Fn { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
            kSoftsign, kSoftplus };
  Fn fn = kTanh;
  float alpha = 0, beta = 0;

  template <class A>
  A operator()(A x) const {
    switch (fn) {
      case kRelu: return x > A(0) ? x : A(0);
      case kTanh: return std::tanh(x);
      case kSigmoid: return Sigmoid(x);
      case kAffine: return A(alpha) * x + A(beta);
      case kLeakyRelu: return x >= A(0) ? x : A(alpha) * x;
      case kThresholdedRelu: return x >= A(alpha) ? x : A(0);
      case kScaledTanh: return A(alpha) * std::tanh(A(beta) * x);
      case kHardSigmoid: return std::min(A(1), std::max(A(0), A(alpha) * x + A(beta)));
      case kElu: return x >= A(0) ? x : A(alpha) * (std::exp(x) - A(1));
      case kSoftsign: return x / (A(1) + std::abs(x));
      case kSoftplus: return std::log1p(std::exp(x));
    }
    return x;
  }
};

// Parses one activation name (case-insensitively, as exporters vary) and takes
// its alpha and beta from the lists in order: the values are consumed only by
// the functions that have them; missing ones take the ONNX op's default.
absl::StatusOr<Activation> ParseActivation(const Node& node, const std::string& name, const std::vector<float>& alphas,
                                           size_t& next_alpha, const std::vector<float>& betas, size_t& next_beta) {
  struct Known {
    const char* name;
    Activation::Fn fn;
    bool has_alpha, has_beta;
    float alpha, beta;
  };
  static const Known kKnown[] = {
      {"relu", Activation::kRelu, false, false, 0, 0},
      {"tanh", Activation::kTanh, false, false, 0, 0},
      {"sigmoid", Activation::kSigmoid, false, false, 0, 0},
      {"affine", Activation::kAffine, true, true, 1, 0},
      {"leakyrelu", Activation::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", Activation::kThresholdedRelu, true, false, 1, 0},
      {"scaledtanh", Activation::kScaledTanh, true, true, 1, 1},
      {"hardsigmoid", Activation::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", Activation::kElu, true, false, 1, 0},
      {"softsign", Activation::kSoftsign, false, false, 0, 0},
      {"softplus", Activation::kSoftplus, false, false, 0, 0},
  };
  const std::string lower = absl::AsciiStrToLower(name);
  for (const Known& k : kKnown) {
    if (lower != k.name) continue;
    Activation a;
    a.fn = k.fn;
    a.alpha = k.alpha;
    a.beta = k.beta;
    if (k.has_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (k.has_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    return a;
  }
  return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": activation '", name, "' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus"));
}

struct RnnAttributes {
  Kind kind = Kind::kRnn;
  int64_t dirs = 1;
  bool reverse = false;  // with dirs == 1
  int64_t hidden_size = -1;  // -1: from R
  int64_t layout = 0;
  bool has_clip = false;
  float clip = 0;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  std::vector<Activation> activations;  // ActivationCount per direction
};

// The geometry, once every shape is known.
struct RnnPlan : OpPlan {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
};

// C[M, N] = A[M, K] · B[N, K]ᵀ: for float on the fast path our GEMV for a
// few rows (a step's recurrent product: a oneDNN call cost silero VAD's
// 64-wide LSTM more than its arithmetic), oneDNN for more, else loops.
// `b_kn`: B already transposed to [K, N] (the op's prepared copy), or null;
// with few rows the GEMV reads it a row of B at a time, where B[N, K] costs a
// horizontal sum per column.
template <class A>
void GemmBT(const A* a, const A* b, A* c, int64_t M, int64_t K, int64_t N, bool fast, int threads,
            const A* b_kn = nullptr) {
  if constexpr (std::is_same_v<A, float>) {
    if (fast && M >= 1 && M <= kGemvMaxRows && K > 0 && N > 0) {
      if (b_kn) GemvF32(a, b_kn, nullptr, c, M, K, N, /*trans_b=*/false, threads);
      else GemvF32(a, b, nullptr, c, M, K, N, /*trans_b=*/true, threads);
      return;
    }
    if (fast && OneDnnMatMul(DType::kFloat, a, b, c, 1, 1, 1, M, K, N, false, true, threads)) return;
  }
  (void)fast;
  (void)threads;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      A acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += a[m * K + k] * b[n * K + k];
      c[m * N + n] = acc;
    }
}

// One row of LSTM's state update with the default activations: pre holds
// the gates' pre-activations (i, o, f, c: 4h), c the cell state (updated),
// tanh_c h scratch floats, out the new hidden state.
template <class A>
void VecGates(A* pre, A* c, A* tanh_c, A* out, int64_t h) {
  if constexpr (std::is_same_v<A, float>) {
    VecSigmoid(pre, pre, 3 * h);
    VecTanh(pre + 3 * h, pre + 3 * h, h);
    for (int64_t j = 0; j < h; ++j) c[j] = pre[2 * h + j] * c[j] + pre[j] * pre[3 * h + j];
    VecTanh(c, tanh_c, h);
    for (int64_t j = 0; j < h; ++j) out[j] = pre[h + j] * tanh_c[j];
  }
}

// Direction d of a prepared transposed weight (`per_dir` elements each), or
// null when there is none of type A.
template <class A>
const A* Transposed(const Tensor& t, int64_t d, int64_t per_dir) {
  if constexpr (std::is_same_v<A, float>) {
    if (t.defined() && t.size() > 0) return t.data<float>() + d * per_dir;
  }
  return nullptr;
}

// An input in the compute type A: the tensor itself, or a widened copy.
template <class T, class A>
const A* AsCompute(const Tensor* t, std::vector<A>& copy) {
  if (t == nullptr) return nullptr;
  if constexpr (std::is_same_v<T, A>) {
    return t->data<T>();
  } else {
    copy.resize(size_t(t->size()));
    const T* p = t->data<T>();
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = A(Widen(p[i]));
    return copy.data();
  }
}

class RnnOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    RnnAttributes a;
    a.kind = node.op_type == "GRU" ? Kind::kGru : node.op_type == "LSTM" ? Kind::kLstm : Kind::kRnn;
    const std::string direction = node.attr_string("direction", "forward");
    if (direction == "bidirectional") a.dirs = 2;
    else if (direction == "reverse") a.reverse = true;
    else if (direction != "forward")
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": direction '", direction, "' is not forward, reverse or bidirectional"));
    if (const Attribute* h = node.attr("hidden_size")) {
      if (h->i <= 0) return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": hidden_size ", h->i, " is not positive"));
      a.hidden_size = h->i;
    }
    a.layout = node.attr_int("layout", 0);
    if (a.layout != 0 && a.layout != 1)
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": layout ", a.layout, " is not 0 or 1"));
    if (const Attribute* c = node.attr("clip")) {
      if (!(c->f > 0)) return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": clip ", c->f, " is not positive"));
      a.has_clip = true;
      a.clip = c->f;
    }
    a.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
    a.input_forget = node.attr_int("input_forget", 0) != 0;
    // Activations: the defaults, one set per direction; one set given for a
    // bidirectional node serves both directions.
    const int count = ActivationCount(a.kind);
    std::vector<std::string> names;
    if (const Attribute* acts = node.attr("activations")) names = acts->strings;
    if (names.empty()) {
      for (int64_t d = 0; d < a.dirs; ++d) {
        if (a.kind == Kind::kRnn) names.push_back("Tanh");
        else if (a.kind == Kind::kGru) names.insert(names.end(), {"Sigmoid", "Tanh"});
        else names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
      }
    }
    if (int64_t(names.size()) != count * a.dirs && !(a.dirs == 2 && int64_t(names.size()) == count))
      return absl::InvalidArgumentError(absl::StrCat(node.Describe(), ": ", names.size(), " activations given, ",
                                                     node.op_type, " needs ", count, " per direction (", a.dirs,
                                                     a.dirs == 1 ? " direction)" : " directions)"));
    std::vector<float> alphas, betas;
    if (const Attribute* al = node.attr("activation_alpha")) alphas = al->floats;
    if (const Attribute* be = node.attr("activation_beta")) betas = be->floats;
    size_t next_alpha = 0, next_beta = 0;
    for (const std::string& n : names) {
      ASSIGN_OR_RETURN(Activation act, ParseActivation(node, n, alphas, next_alpha, betas, next_beta));
      a.activations.push_back(act);
    }
    if (int64_t(a.activations.size()) < count * a.dirs) {
      const std::vector<Activation> forward = a.activations;
      a.activations.insert(a.activations.end(), forward.begin(), forward.end());
    }
    return std::unique_ptr<Op>(new RnnOp(a));
  }

  absl::Status Infer(InferContext& ctx) const override {
    const int64_t G = Gates(a_.kind);
    const DType t = ctx.input(0).dtype;
    ValueType y, yh;
    y.dtype = yh.dtype = t;
    const auto set_outputs = [&] {
      ctx.set_output(0, y);
      for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, yh);
    };
    std::vector<std::optional<Shape>> shapes(8);
    bool known = true;
    for (size_t i = 0; i < ctx.num_inputs() && i < shapes.size(); ++i) {
      if (!ctx.has_input(i)) continue;
      shapes[i] = ctx.input(i).concrete_shape();
      if (!shapes[i]) known = false;
    }
    if (!known) {
      set_outputs();  // shapes follow at run time
      return absl::OkStatus();
    }
    const Shape& x = *shapes[0];
    const Shape& w = *shapes[1];
    const Shape& r = *shapes[2];
    if (x.size() != 3 || w.size() != 3 || r.size() != 3)
      return ctx.Error(absl::StrCat("X, W and R must be 3-D, got X ", ShapeToString(x), ", W ", ShapeToString(w),
                                    ", R ", ShapeToString(r)));
    const int64_t seq = x[a_.layout ? 1 : 0], batch = x[a_.layout ? 0 : 1], input = x[2];
    const int64_t hidden = r[2];
    // Real hidden sizes are small; a huge one (R can be empty) must not overflow the shapes below.
    if (hidden > (int64_t(1) << 40)) return ctx.Error(absl::StrCat("hidden size ", hidden, " of R ", ShapeToString(r), " is too large"));
    if (a_.hidden_size >= 0 && a_.hidden_size != hidden)
      return ctx.Error(absl::StrCat("hidden_size ", a_.hidden_size, " differs from R ", ShapeToString(r)));
    const auto expect = [&](size_t i, const char* name, const Shape& want) -> absl::Status {
      if (shapes[i] && *shapes[i] != want)
        return ctx.Error(absl::StrCat(name, " has shape ", ShapeToString(*shapes[i]), ", expected ",
                                      ShapeToString(want), " (", a_.dirs, " direction(s), hidden ", hidden,
                                      ", input ", input, ", batch ", batch, ", layout ", a_.layout, ")"));
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(expect(1, "W", {a_.dirs, G * hidden, input}));
    RETURN_IF_ERROR(expect(2, "R", {a_.dirs, G * hidden, hidden}));
    RETURN_IF_ERROR(expect(3, "B", {a_.dirs, 2 * G * hidden}));
    RETURN_IF_ERROR(expect(4, "sequence_lens", {batch}));
    const Shape state = a_.layout ? Shape{batch, a_.dirs, hidden} : Shape{a_.dirs, batch, hidden};
    RETURN_IF_ERROR(expect(5, "initial_h", state));
    if (a_.kind == Kind::kLstm) {
      RETURN_IF_ERROR(expect(6, "initial_c", state));
      RETURN_IF_ERROR(expect(7, "P", {a_.dirs, 3 * hidden}));
    }
    y = ValueType::Of(t, a_.layout ? Shape{batch, seq, a_.dirs, hidden} : Shape{seq, a_.dirs, batch, hidden});
    yh = ValueType::Of(t, state);
    set_outputs();
    auto plan = std::make_shared<RnnPlan>();
    plan->seq = seq;
    plan->batch = batch;
    plan->input = input;
    plan->hidden = hidden;
    ctx.set_plan(std::move(plan));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const RnnPlan& p = ctx.plan<RnnPlan>();
    std::vector<int32_t> lens(size_t(p.batch), int32_t(p.seq));
    if (ctx.num_inputs() > 4 && ctx.input(4) != nullptr) {
      const int32_t* l = ctx.input(4)->data<int32_t>();
      for (int64_t b = 0; b < p.batch; ++b) {
        if (l[b] < 0 || l[b] > p.seq)
          return ctx.Error(absl::StrCat("sequence_lens[", b, "] = ", l[b], " is outside [0, ", p.seq, "]"));
        lens[size_t(b)] = l[b];
      }
    }
    if (p.batch == 0 || p.hidden == 0) return absl::OkStatus();  // every output is empty
    const bool fast = !g_reference.load(std::memory_order_relaxed);
    absl::Status status;
    RETURN_IF_ERROR(Dispatch<RnnTypes22>(ctx, ctx.input(0)->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      status = Run<T, A>(ctx, p, lens, fast);
    }));
    return status;
  }

 private:
  explicit RnnOp(RnnAttributes a) : a_(std::move(a)) {}

 public:
  // Constant float W and R transposed once per direction to [in, gates]
  // (WT, RT): the steps' few-row products read them row by row.
  absl::Status Prepare(PrepareContext& ctx) override {
    for (size_t i : {size_t(1), size_t(2)}) {
      const Tensor* w = ctx.num_inputs() > i ? ctx.constant(i) : nullptr;
      if (!w || w->dtype() != DType::kFloat || w->rank() != 3 || w->size() == 0) continue;
      const int64_t dirs = w->dim(0), rows = w->dim(1), cols = w->dim(2);
      absl::StatusOr<Tensor> t = Tensor::MakeUninitialized(DType::kFloat, {dirs, cols, rows}, ctx.budget());
      if (!t.ok()) continue;  // out of budget: the plain layout serves
      const float* from = w->data<float>();
      float* to = t->data<float>();
      for (int64_t d = 0; d < dirs; ++d)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) to[(d * cols + c) * rows + r] = from[(d * rows + r) * cols + c];
      (i == 1 ? w_kn_ : r_kn_) = *std::move(t);
    }
    return absl::OkStatus();
  }

 private:

  // Runs every direction with T the storage type and A the compute type.
  template <class T, class A>
  absl::Status Run(KernelContext& ctx, const RnnPlan& p, const std::vector<int32_t>& lens, bool fast) const {
    const int64_t S = p.seq, Bt = p.batch, I = p.input, H = p.hidden, D = a_.dirs, G = Gates(a_.kind);
    const auto in = [&](size_t i) { return i < ctx.num_inputs() ? ctx.input(i) : nullptr; };
    std::vector<A> cx, cw, cr, cb, ch, cc, cp;
    MemoryReservation widened;  // the copies AsCompute makes, against the session's budget
    if constexpr (!std::is_same_v<T, A>) {
      int64_t count = 0;
      for (size_t i : {0, 1, 2, 3, 5, 6, 7})
        if (in(i)) count += in(i)->size();
      ASSIGN_OR_RETURN(widened, ctx.Reserve(count, sizeof(A), "the inputs widened to the compute type"));
    }
    const A* X = AsCompute<T, A>(in(0), cx);
    const A* W = AsCompute<T, A>(in(1), cw);
    const A* R = AsCompute<T, A>(in(2), cr);
    const A* Bias = AsCompute<T, A>(in(3), cb);
    const A* H0 = AsCompute<T, A>(in(5), ch);
    const A* C0 = AsCompute<T, A>(in(6), cc);
    const A* P = AsCompute<T, A>(in(7), cp);
    T* Y = ctx.output_requested(0) ? ctx.output(0).data<T>() : nullptr;
    T* YH = ctx.num_outputs() > 1 && ctx.output_requested(1) ? ctx.output(1).data<T>() : nullptr;
    T* YC = ctx.num_outputs() > 2 && ctx.output_requested(2) ? ctx.output(2).data<T>() : nullptr;
    constexpr DType kA = DTypeOf<A>::value;
    // Scratch: the projection of every step, the state, the step's gates.
    ASSIGN_OR_RETURN(Tensor xw_t, ctx.NewTensor(kA, {S, Bt, G * H}));
    ASSIGN_OR_RETURN(Tensor state_t, ctx.NewTensor(kA, {4, Bt, H}));
    ASSIGN_OR_RETURN(Tensor hr_t, ctx.NewTensor(kA, {Bt, G * H}));
    A* xw = xw_t.data<A>();
    A* h = state_t.data<A>();
    A* c = h + Bt * H;
    A* rh = c + Bt * H;    // GRU: r ⊙ H_prev
    A* hnew = rh + Bt * H; // GRU: (r ⊙ H_prev)·Rhᵀ
    A* hr = hr_t.data<A>();
    const bool gru_split = a_.kind == Kind::kGru && !a_.linear_before_reset;
    // The steps' products, the projection and the gate loop each split by the
    // pool's size rule (OneDnnMatMulThreads, ThreadsForWork): nothing to decide here.
    const int step_threads = ctx.threads(), projection_threads = ctx.threads();
    const A clip = A(a_.clip);
    const auto clipped = [&](A v) { return a_.has_clip ? std::min(clip, std::max(-clip, v)) : v; };
    const auto state_at = [&](int64_t d, int64_t b) { return a_.layout ? (b * D + d) * H : (d * Bt + b) * H; };
    // LSTM with the default activations, no clip, peepholes or coupled
    // gates: the activations vectorized over each row (libm per element cost
    // silero VAD's 64-wide LSTM as much as its products).
    const Activation* acts = a_.activations.data();
    bool vec_lstm = std::is_same_v<A, float> && fast && a_.kind == Kind::kLstm && !a_.has_clip && !P &&
                    !a_.input_forget && VecMathVectorized();
    for (int64_t k = 0; vec_lstm && k < D * 3; ++k)
      vec_lstm = acts[k].fn == (k % 3 == 0 ? Activation::kSigmoid : Activation::kTanh);

    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = d == 1 || a_.reverse;
      const A* Wd = W + d * G * H * I;
      const A* Rd = R + d * G * H * H;
      const A* Wb = Bias ? Bias + d * 2 * G * H : nullptr;
      const A* Rb = Bias ? Wb + G * H : nullptr;
      const A* Pd = P ? P + d * 3 * H : nullptr;
      const Activation* act = &a_.activations[size_t(d * ActivationCount(a_.kind))];
      // xw rows follow X's rows: (t, b) for layout 0, (b, t) for layout 1.
      GemmBT<A>(X, Wd, xw, S * Bt, I, G * H, fast, projection_threads, Transposed<A>(w_kn_, d, G * H * I));
      if (Wb)
        for (int64_t row = 0; row < S * Bt; ++row)
          for (int64_t j = 0; j < G * H; ++j) {
            // GRU's Rbh stays inside the reset product when linear_before_reset.
            const bool rb_inside = a_.kind == Kind::kGru && a_.linear_before_reset && j >= 2 * H;
            xw[row * G * H + j] += Wb[j] + (rb_inside ? A(0) : Rb[j]);
          }
      for (int64_t b = 0; b < Bt; ++b)
        for (int64_t j = 0; j < H; ++j) {
          h[b * H + j] = H0 ? H0[state_at(d, b) + j] : A(0);
          c[b * H + j] = C0 ? C0[state_at(d, b) + j] : A(0);
        }
      for (int64_t step = 0; step < S; ++step) {
        RETURN_IF_ERROR(ctx.CheckCancelled());  // a long sequence is a loop of its own
        const int64_t t = reverse ? S - 1 - step : step;
        // The recurrent product for every gate (GRU without
        // linear_before_reset: z and r only; h waits for r).
        const int64_t n = gru_split ? 2 * H : G * H;
        GemmBT<A>(h, Rd, hr, Bt, H, n, fast, step_threads, gru_split ? nullptr : Transposed<A>(r_kn_, d, G * H * H));
        if (gru_split) {
          ParallelFor(step_threads, Bt, WorkPerIndex{4.0 * double(H)},
                      [&](int64_t b_begin, int64_t b_end) { for (int64_t b = b_begin; b < b_end; ++b) {
            const A* g = xw + (a_.layout ? b * S + t : t * Bt + b) * G * H;
            for (int64_t j = 0; j < H; ++j) {
              const A r = act[0](clipped(g[H + j] + hr[b * n + H + j]));
              rh[b * H + j] = r * h[b * H + j];
            }
          }});
          GemmBT<A>(rh, Rd + 2 * H * H, hnew, Bt, H, H, fast, step_threads);
        }
        ParallelFor(step_threads, Bt, WorkPerIndex{4.0 * double(G * H)},
                    [&](int64_t b_begin, int64_t b_end) { for (int64_t b = b_begin; b < b_end; ++b) {
          const bool active = t < lens[size_t(b)];
          const A* g = xw + (a_.layout ? b * S + t : t * Bt + b) * G * H;
          const A* q = hr + b * n;
          A* hb = h + b * H;
          A* cb_ = c + b * H;
          if (active && vec_lstm) {
            // The gates' pre-activations in place of q (i, o, f, c), then the
            // vector sigmoid and tanh over whole rows; tanh(c) in rh (GRU's).
            A* pre = hr + b * n;
            A* tanh_c = rh + b * H;
            for (int64_t j = 0; j < G * H; ++j) pre[j] += g[j];
            VecGates(pre, cb_, tanh_c, hb, H);
          } else if (active) {
            for (int64_t j = 0; j < H; ++j) {
              if (a_.kind == Kind::kRnn) {
                hb[j] = act[0](clipped(g[j] + q[j]));
              } else if (a_.kind == Kind::kGru) {
                const A z = act[0](clipped(g[j] + q[j]));
                A pre;
                if (gru_split) {
                  pre = g[2 * H + j] + hnew[b * H + j];
                } else {
                  const A r = act[0](clipped(g[H + j] + q[H + j]));
                  pre = g[2 * H + j] + r * (q[2 * H + j] + (Rb ? Rb[2 * H + j] : A(0)));
                }
                const A hh = act[1](clipped(pre));
                hb[j] = (A(1) - z) * hh + z * hb[j];
              } else {
                const A cprev = cb_[j];
                const A i = act[0](clipped(g[j] + q[j] + (Pd ? Pd[j] * cprev : A(0))));
                const A f = a_.input_forget ? A(1) - i
                                            : act[0](clipped(g[2 * H + j] + q[2 * H + j] + (Pd ? Pd[2 * H + j] * cprev : A(0))));
                const A cc_ = act[1](clipped(g[3 * H + j] + q[3 * H + j]));
                const A cnew = f * cprev + i * cc_;
                const A o = act[0](clipped(g[H + j] + q[H + j] + (Pd ? Pd[H + j] * cnew : A(0))));
                cb_[j] = cnew;
                hb[j] = o * act[2](cnew);
              }
            }
          }
          if (Y) {
            T* yrow = Y + (a_.layout ? ((b * S + t) * D + d) * H : ((t * D + d) * Bt + b) * H);
            for (int64_t j = 0; j < H; ++j) yrow[j] = active ? Narrow<T>(hb[j]) : Narrow<T>(A(0));
          }
        }});
      }
      for (int64_t b = 0; b < Bt; ++b)
        for (int64_t j = 0; j < H; ++j) {
          if (YH) YH[state_at(d, b) + j] = Narrow<T>(h[b * H + j]);
          if (YC) YC[state_at(d, b) + j] = Narrow<T>(c[b * H + j]);
        }
    }
    return absl::OkStatus();
  }

  RnnAttributes a_;
  Tensor w_kn_, r_kn_;  // set by Prepare (constant float W, R transposed), read-only after
};

}  // namespace

void SetRnnReferenceKernel(bool on) { g_reference.store(on, std::memory_order_relaxed); }

std::vector<OpDef> RecurrentOps() {
  // 22 adds bfloat16; the other versions differ in attributes only (1's
  // output_sequence: Y is computed whenever it is requested; 14's layout).
  const std::vector<TypeConstraint> t = {{"T", RnnTypes::set()}, {"T1", {DType::kInt32}}};
  const std::vector<TypeConstraint> t22 = {{"T", RnnTypes22::set()}, {"T1", {DType::kInt32}}};
  return {
      {kOnnxDomain, "RNN", Versions{1, 21}, "T T T T? T1? T?", "T? T?", t, RnnOp::Create},
      {kOnnxDomain, "RNN", Versions{22}, "T T T T? T1? T?", "T? T?", t22, RnnOp::Create},
      {kOnnxDomain, "GRU", Versions{1, 21}, "T T T T? T1? T?", "T? T?", t, RnnOp::Create},
      {kOnnxDomain, "GRU", Versions{22}, "T T T T? T1? T?", "T? T?", t22, RnnOp::Create},
      {kOnnxDomain, "LSTM", Versions{1, 21}, "T T T T? T1? T? T? T?", "T? T? T?", t, RnnOp::Create},
      {kOnnxDomain, "LSTM", Versions{22}, "T T T T? T1? T? T? T?", "T? T? T?", t22, RnnOp::Create},
  };
}

}  // namespace onnx_mini
