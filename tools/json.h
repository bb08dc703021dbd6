// The JSON the tools need: escaping a string for a JSON literal, and a small
// reader (onnx-decode's genai_config.json). Standard library only: onnx-decode
// is built against the C API alone.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "../runtime/json_escape.h"  // relative: onnx-decode sees only the C API's include path

namespace onnx_mini {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in file order; the last of equal keys wins in Find

  // The member `key` of an object, or nullptr.
  const JsonValue* Find(const std::string& key) const {
    const JsonValue* found = nullptr;
    for (const auto& [k, v] : object)
      if (k == key) found = &v;
    return kind == kObject ? found : nullptr;
  }
};

namespace json_internal {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool Parse(JsonValue* out, std::string* error) {
    if (!Value(out, 0) || (Space(), pos_ != s_.size() && Fail("trailing characters"))) {
      *error = error_ + " at byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool Fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void Space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool Literal(const char* word) {
    const std::string w = word;
    if (s_.compare(pos_, w.size(), w) != 0) return Fail("unexpected characters");
    pos_ += w.size();
    return true;
  }
  bool Hex4(unsigned* code) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    *code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return Fail("bad \\u escape");
      *code = *code * 16 + unsigned(d);
    }
    return true;
  }
  static void Utf8(unsigned c, std::string* out) {
    if (c < 0x80) {
      *out += char(c);
    } else if (c < 0x800) {
      *out += char(0xC0 | (c >> 6));
      *out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      *out += char(0xE0 | (c >> 12));
      *out += char(0x80 | ((c >> 6) & 0x3F));
      *out += char(0x80 | (c & 0x3F));
    } else {
      *out += char(0xF0 | (c >> 18));
      *out += char(0x80 | ((c >> 12) & 0x3F));
      *out += char(0x80 | ((c >> 6) & 0x3F));
      *out += char(0x80 | (c & 0x3F));
    }
  }
  bool String(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= s_.size()) return Fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in a string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= s_.size()) return Fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': *out += e; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          unsigned code = 0;
          if (!Hex4(&code)) return false;
          if (code >= 0xD800 && code < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            unsigned low = 0;
            if (!Hex4(&low)) return false;
            if (low < 0xDC00 || low >= 0xE000) return Fail("bad surrogate pair");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          Utf8(code, out);
          break;
        }
        default: return Fail("bad escape");
      }
    }
  }
  bool Number(JsonValue* out) {
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > d;
    };
    if (!digits()) return Fail("bad number");
    if (pos_ < s_.size() && s_[pos_] == '.' && (++pos_, !digits())) return Fail("bad number");
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return Fail("bad number");
    }
    out->kind = JsonValue::kNumber;
    out->number = std::strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
    return true;
  }
  bool Value(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    Space();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') {
      out->kind = JsonValue::kObject;
      ++pos_;
      Space();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      while (true) {
        Space();
        if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a key");
        std::string key;
        if (!String(&key)) return false;
        Space();
        if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected ':'");
        ++pos_;
        JsonValue v;
        if (!Value(&v, depth + 1)) return false;
        out->object.emplace_back(std::move(key), std::move(v));
        Space();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
        return Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      out->kind = JsonValue::kArray;
      ++pos_;
      Space();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      while (true) {
        JsonValue v;
        if (!Value(&v, depth + 1)) return false;
        out->array.push_back(std::move(v));
        Space();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
        return Fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out->kind = JsonValue::kString;
      return String(&out->string);
    }
    if (c == 't') return out->kind = JsonValue::kBool, out->boolean = true, Literal("true");
    if (c == 'f') return out->kind = JsonValue::kBool, out->boolean = false, Literal("false");
    if (c == 'n') return out->kind = JsonValue::kNull, Literal("null");
    if (c == '-' || (c >= '0' && c <= '9')) return Number(out);
    return Fail("unexpected character");
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace json_internal

// Parses `text` into `out`; false with `error` (what and the byte offset)
// when it is not one JSON value.
inline bool ParseJson(const std::string& text, JsonValue* out, std::string* error) {
  *out = JsonValue();
  return json_internal::Parser(text).Parse(out, error);
}

}  // namespace onnx_mini
