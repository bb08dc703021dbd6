// The one JSON helper the tools need: escaping a string for a JSON literal.
#pragma once

#include <string>

#include "absl/strings/str_format.h"

namespace onnx_mini {

inline std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += absl::StrFormat("\\u%04x", int(c));
    else out += c;
  }
  return out;
}

}  // namespace onnx_mini
