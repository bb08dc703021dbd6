// Escaping a string for a JSON string literal: the profiling trace and the
// tools' JSON. Standard library only (tools/json.h includes it, and
// onnx-decode is built against the C API alone).
#pragma once

#include <cstdio>
#include <string>

namespace onnx_mini {

inline void AppendJsonEscaped(std::string& out, const std::string& s) {
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", int(c));
      out += buf;
    } else {
      out += c;
    }
  }
}

inline std::string JsonEscape(const std::string& s) {
  std::string out;
  AppendJsonEscaped(out, s);
  return out;
}

}  // namespace onnx_mini
