// Recurrent layers (ops/nn/rnn.cc): RNN, GRU, LSTM.
#pragma once

namespace onnx_mini {

// Tests only: true makes every recurrent node run the plain reference
// kernel (loop GEMMs) instead of the fast path (oneDNN GEMMs for float and
// the 16-bit types, which compute in float). Process-wide; default false.
void SetRnnReferenceKernel(bool on);

}  // namespace onnx_mini
