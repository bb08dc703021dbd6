#include "runtime/symbolic_dim.h"

#include <cctype>
#include <map>
#include <optional>
#include <string>

namespace onnx_mini {
namespace {

constexpr int64_t kLimit = int64_t(1) << 60;  // far from overflow

// constant + sum of coefficient * symbol.
struct Linear {
  int64_t constant = 0;
  std::map<std::string, int64_t> terms;
};

bool IsName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::optional<int64_t> Number(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "a + 2*b - 1" as terms; a symbol of another form is one term.
Linear Read(const Dim& d) {
  Linear l;
  if (d.known()) {
    l.constant = d.value;
    return l;
  }
  const std::string& s = d.symbol;
  Linear parsed;
  bool ok = true;
  size_t pos = 0;
  int sign = 1;
  std::string first = Trim(s);
  if (!first.empty() && first[0] == '-') {
    sign = -1;
    pos = s.find('-') + 1;
  }
  while (ok) {
    size_t next = s.find_first_of("+-", pos);
    const std::string token = Trim(s.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    int64_t coeff = 1;
    std::string name = token;
    if (size_t star = token.find('*'); star != std::string::npos) {
      std::optional<int64_t> k = Number(Trim(token.substr(0, star)));
      name = Trim(token.substr(star + 1));
      ok = k.has_value();
      coeff = k.value_or(0);
    }
    if (!ok) break;
    // Each number is < 10^18 and a sum stays within kLimit: no overflow.
    const auto add = [&](int64_t& to, int64_t v) {
      to += sign * v;
      ok = to <= kLimit && to >= -kLimit;
    };
    if (std::optional<int64_t> n = Number(name); n && name == token) add(parsed.constant, *n);
    else if (IsName(name)) add(parsed.terms[name], coeff);
    else ok = false;
    if (!ok) break;
    if (next == std::string::npos) break;
    sign = s[next] == '+' ? 1 : -1;
    pos = next + 1;
  }
  // Only a sum with a symbol in it: a dim_param of digits alone ("2", "2 + 3")
  // is a name the run gives any size, not a known value.
  bool named = false;
  for (const auto& [name, k] : parsed.terms) named = named || k != 0;
  if (ok && named) return parsed;
  l.terms[s] = 1;
  return l;
}

Dim Write(const Linear& l) {
  std::string s;
  for (const auto& [name, k] : l.terms) {
    if (k == 0) continue;
    if (k < 0) return Dim{};  // may be negative at some run
    if (!s.empty()) s += " + ";
    if (k != 1) s += std::to_string(k) + "*";
    s += name;
  }
  if (l.constant < 0) return Dim{};
  if (s.empty()) return Dim::Known(l.constant);
  if (l.constant > 0) s += " + " + std::to_string(l.constant);
  return Dim{-1, s};
}

Dim Combine(const Dim& a, const Dim& b, int64_t sign) {
  if (!a.known() && a.symbol.empty()) return Dim{};
  if (!b.known() && b.symbol.empty()) return Dim{};
  if (a.value > kLimit || b.value > kLimit) return Dim{};
  Linear x = Read(a), y = Read(b);
  x.constant += sign * y.constant;
  if (x.constant > kLimit || x.constant < -kLimit) return Dim{};
  for (const auto& [name, k] : y.terms) {
    x.terms[name] += sign * k;
    if (x.terms[name] > kLimit || x.terms[name] < -kLimit) return Dim{};
  }
  return Write(x);
}

}  // namespace

Dim AddDims(const Dim& a, const Dim& b) { return Combine(a, b, 1); }
Dim SubtractDims(const Dim& a, const Dim& b) { return Combine(a, b, -1); }

}  // namespace onnx_mini
