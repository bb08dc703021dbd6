// Cast among the numeric element types, including the float8, float4 and
// packed integer types, with the ONNX saturation and rounding rules; and
// between them and strings.
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "ops/common.h"
#include "runtime/element.h"
#include "ops/ops.h"

namespace onnx_mini {
namespace {

// Every type Cast converts between besides strings: numbers, bool, the
// float8 and packed types (not complex numbers).
using CastTypes = Join<Join<NumericTypes, TypeList<bool, Float8E8M0>>, Join<Float8Types, PackedTypes>>;

// ---- Strings ----
//
// Numbers print as NumPy's astype(str) does, which onnx's reference uses:
// integers in decimal, bool as True/False, floats as the shortest decimal
// that reads back to the same value of their type, positional from 1e-4 to
// 1e16 ("0.1", "100.0", "-0.0") and scientific outside ("1e-05", "1.5e+16");
// NaN and the infinities as the spec's literals "NaN", "INF", "-INF".
// Strings parse as decimal or scientific numbers (leading and trailing ASCII
// spaces and a leading '+' allowed; NaN, INF, +INF, -INF and Infinity in any
// case); to an integer type, a non-integer number converts as that float
// would ("100.5" -> 100), and bool also takes True/False in any case. Text
// that is not a number is an error naming the element. std::to_chars and
// std::from_chars never depend on the process locale.

// Python's repr of a float from its shortest scientific form "d.ddde±x".
std::string PythonFloatText(std::string_view sci) {
  std::string out;
  if (sci[0] == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char ch : sci.substr(0, e))
    if (ch != '.') digits += ch;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int exp = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exp);
  if (exp >= -4 && exp < 16) {
    if (exp < 0) return out + "0." + std::string(size_t(-exp - 1), '0') + digits;
    if (digits.size() <= size_t(exp) + 1) return out + digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    return out + digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const std::string e10 = std::to_string(std::abs(exp));
  return out + (exp < 0 ? "e-" : "e+") + (e10.size() < 2 ? "0" : "") + e10;
}

template <class T>
std::string NumberText(const T* data, DType dtype, int64_t i) {
  char buf[64];
  if constexpr (std::is_same_v<T, bool>) {
    return data[i] ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, data[i]).ptr);
  } else if constexpr (kIsPacked<T>) {
    if (dtype != DType::kFloat4E2M1) return std::to_string(LoadInt(data, dtype, i));
  }
  const double v = LoadDouble(data, dtype, i);
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const char* end = std::to_chars(buf, buf + sizeof buf, data[i], std::chars_format::scientific).ptr;
    return PythonFloatText(std::string_view(buf, size_t(end - buf)));
  } else {
    // The narrow floats: the fewest digits that round back to the same value.
    for (int digits = 1;; ++digits) {
      const char* end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, digits - 1).ptr;
      double back = 0;
      std::from_chars(buf, end, back);
      T round[1] = {};
      StoreDouble(round, dtype, 0, back, CastOptions{});
      if (LoadDouble(round, dtype, 0) == v || digits >= 17) return PythonFloatText(std::string_view(buf, size_t(end - buf)));
    }
  }
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// The whole of `text` as a V (int64_t, uint64_t, float, double or long double).
template <class V>
bool ParseAll(std::string_view text, V& v) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// A string's number as a double (INF, NaN and out-of-range magnitudes included).
bool ParseDouble(std::string_view t, double& v) {
  if (ParseAll(t, v)) return true;
  long double wide = 0;  // beyond double's range: infinity or zero, as the cast would give
  if (!ParseAll(t, wide)) return false;
  v = double(wide);
  return true;
}

template <class D>
bool ParseNumber(std::string_view t, D* dst, DType to, int64_t i) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  if constexpr (std::is_same_v<D, bool>) {
    if (EqualsIgnoringCase(t, "true") || EqualsIgnoringCase(t, "false")) {
      dst[i] = EqualsIgnoringCase(t, "true");
      return true;
    }
  }
  if (t.size() > 1 && t[0] == '+' && t[1] != '-' && t[1] != '+') t.remove_prefix(1);
  if constexpr (std::is_same_v<D, uint64_t>) {
    uint64_t u;
    if (ParseAll(t, u)) return dst[i] = u, true;
  } else if constexpr (std::is_integral_v<D> || kIsPacked<D>) {
    int64_t n;
    if (ParseAll(t, n)) return StoreInt(dst, to, i, n), true;
  } else if constexpr (std::is_same_v<D, float>) {
    float f;
    if (ParseAll(t, f)) return dst[i] = f, true;  // rounded once, from the text
  }
  double v;
  if (!ParseDouble(t, v)) return false;
  StoreDouble(dst, to, i, v, CastOptions{});
  return true;
}

absl::Status CastStrings(const KernelContext& ctx, const Tensor& in, Tensor& out) {
  if (in.dtype() == DType::kString) {
    const std::string* src = in.data<std::string>();
    absl::Status bad = absl::OkStatus();
    RETURN_IF_ERROR(Dispatch<CastTypes>(ctx, out.dtype(), [&](auto tag) {
      using D = typename decltype(tag)::type;
      D* dst = out.data<D>();
      for (int64_t i = 0; i < in.size() && bad.ok(); ++i) {
        if (!ParseNumber(src[i], dst, out.dtype(), i)) {
          const std::string shown = src[i].size() > 40 ? src[i].substr(0, 40) + "..." : src[i];
          bad = ctx.Error(absl::StrCat("element ", i, " '", shown, "' is not a number"));
        }
      }
    }));
    return bad;
  }
  std::string* dst = out.data<std::string>();
  return Dispatch<CastTypes>(ctx, in.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t i = 0; i < in.size(); ++i) dst[i] = NumberText(in.data<S>(), in.dtype(), i);
  });
}

// Cast to the type `to` (Cast), or to the element type of input 1 (CastLike).
class CastOp : public Op {
 public:
  static absl::StatusOr<std::unique_ptr<Op>> Create(const Node& node) {
    CastOptions options;
    options.saturate = node.attr_int("saturate", 1) != 0;
    const std::string mode = node.attr_string("round_mode", "up");
    if (mode != "up" && mode != "down" && mode != "nearest")
      return absl::InvalidArgumentError(
          absl::StrCat(node.Describe(), ": round_mode '", mode, "' is not up, down or nearest"));
    options.e8m0 = mode == "down" ? E8M0Rounding::kDown : mode == "nearest" ? E8M0Rounding::kNearest : E8M0Rounding::kUp;
    DType to = DType::kUndefined;
    if (node.op_type == "Cast") {
      const Attribute* attr = node.attr("to");
      if (attr == nullptr) return absl::InvalidArgumentError(node.Describe() + ": attribute 'to' is required");
      if (attr->type == AttrType::kString) {  // Cast-1 to 5 name the type: "FLOAT"
        for (int32_t code = 1; code <= kMaxDTypeCode; ++code)
          if (attr->s == Name(DType(code))) to = DType(code);
        if (to == DType::kUndefined)
          return absl::InvalidArgumentError(
              absl::StrCat(node.Describe(), ": attribute 'to' = '", attr->s, "' is not an element type"));
        return std::unique_ptr<Op>(new CastOp(options, to));
      }
      if (!IsValidDType(int32_t(attr->i)))
        return absl::InvalidArgumentError(
            absl::StrCat(node.Describe(), ": attribute 'to' = ", attr->i, " is not an element type"));
      to = DType(attr->i);
    }
    return std::unique_ptr<Op>(new CastOp(options, to));
  }

  absl::Status Infer(InferContext& ctx) const override {
    ValueType out = ctx.input(0);
    out.dtype = to_ != DType::kUndefined ? to_ : ctx.input(1).dtype;
    ctx.set_output(0, out);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = *ctx.input(0);
    Tensor& out = ctx.output(0);
    const DType from = in.dtype(), to = out.dtype();
    if (from == to) {
      CopyElements(in, out);
      return absl::OkStatus();
    }
    if (from == DType::kString || to == DType::kString) return CastStrings(ctx, in, out);
    const bool integer_path = IsIntegerLike(from) && IsIntegerLike(to);
    const int64_t n = in.size();
    // Packed outputs share bytes between neighbours, so they are written serially.
    const bool parallel = !Info(to).packed() && n > (1 << 16);
    absl::Status inner = absl::OkStatus();
    const absl::Status outer = Dispatch<CastTypes>(ctx, from, [&](auto src_tag) {
      using S = typename decltype(src_tag)::type;
      inner = Dispatch<CastTypes>(ctx, to, [&](auto dst_tag) {
        using D = typename decltype(dst_tag)::type;
        const S* src = in.data<S>();
        D* dst = out.data<D>();
        constexpr bool kIntegers = (std::is_integral_v<S> || kIsPacked<S>) && (std::is_integral_v<D> || kIsPacked<D>);
        if constexpr (kIntegers) {
          if (integer_path) {
            ParallelFor(parallel ? ctx.threads() : 1, n, WorkPerIndex{1}, [&](int64_t i_begin, int64_t i_end) {
              for (int64_t i = i_begin; i < i_end; ++i)
                StoreInt(dst, to, i, LoadInt(src, from, i));
            });
            return;
          }
        }
        {
          ParallelFor(parallel ? ctx.threads() : 1, n, WorkPerIndex{1}, [&](int64_t i_begin, int64_t i_end) {
            for (int64_t i = i_begin; i < i_end; ++i)
              StoreDouble(dst, to, i, LoadDouble(src, from, i), options_);
          });
        }
      });
    });
    return outer.ok() ? inner : outer;
  }

 private:
  CastOp(CastOptions options, DType to) : options_(options), to_(to) {}
  CastOptions options_;
  DType to_;  // kUndefined for CastLike
};

}  // namespace

std::vector<OpDef> CastOps() {
  // Versions 6 to 25 add types (float8 with `saturate` in 19, 4-bit in 21,
  // float8e8m0 with `round_mode` in 24, 2-bit in 25); one kernel handles all.
  const TypeSet types = CastTypes::set() | TypeSet{DType::kString};
  return {
      {"", "Cast", 1, 0, "T1", "T2", {{"T1", types}, {"T2", types}}, CastOp::Create},
      {"", "CastLike", 15, 0, "T1 T2", "T2", {{"T1", types}, {"T2", types}}, CastOp::Create},
  };
}

}  // namespace onnx_mini
