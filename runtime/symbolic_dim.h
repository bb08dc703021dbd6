// Arithmetic on dims known only by their symbols, for shapes exporters
// compute at run time (past_len + seq_len, Range(past_len, total_len)).
// A symbol is read as a sum of terms ("past_sequence_length + sequence_length",
// "2*n + 1": what onnxruntime's symbolic inference also reads a dim_param as);
// one it cannot read so is a term of its own. Results are written back in one
// form (terms by name, the constant last), so two ways to the same sum give
// the same symbol.
#pragma once

#include "runtime/graph.h"

namespace onnx_mini {

// a + b and a - b. Known when both are; a symbol when the result is a sum of
// symbols with positive multiples (and a constant >= 0), which is >= 0 at
// every run; unknown otherwise (a - b may be negative).
Dim AddDims(const Dim& a, const Dim& b);
Dim SubtractDims(const Dim& a, const Dim& b);

}  // namespace onnx_mini
