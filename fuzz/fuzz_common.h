// Shared by the fuzz targets.
#pragma once

#include <google/protobuf/stubs/logging.h>

namespace onnx_mini {

// Protobuf logs every malformed string it parses; fuzzing makes millions.
inline void QuietProtobuf() {
  static const bool once = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)once;
}

}  // namespace onnx_mini
