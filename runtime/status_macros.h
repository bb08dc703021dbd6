// Early returns on error, for code that checks many statuses in a row.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ONNX_MINI_CONCAT_INNER(a, b) a##b
#define ONNX_MINI_CONCAT(a, b) ONNX_MINI_CONCAT_INNER(a, b)

// Returns the status from the enclosing function unless it is OK.
#define RETURN_IF_ERROR(expr)                           \
  do {                                                  \
    const ::absl::Status _onnx_mini_status = (expr);    \
    if (!_onnx_mini_status.ok()) return _onnx_mini_status; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, StatusOrExpr);` declares x from the value, or
// returns the error from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ONNX_MINI_ASSIGN_OR_RETURN_IMPL(ONNX_MINI_CONCAT(_onnx_mini_or_, __LINE__), lhs, expr)
#define ONNX_MINI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
