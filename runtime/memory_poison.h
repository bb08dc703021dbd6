// Pooled-memory poisoning, a debug aid (on in builds with -DONNX_MINI_POISON=ON,
// which -DONNX_MINI_SANITIZE=ON implies): every block Storage::Allocate hands
// out uninitialized (zero false, new or reused from the pool) is filled with
// kPoisonByte, so an output element no kernel wrote reads as an implausible
// value: float 1.3e36, double 3e286, half 61280, bfloat16 1.3e36, int32
// 2071690107, a bool byte of 123. Without it, a reused pooled block that
// another budget (another session) owned last is zeroed, one that its own
// session owned last is handed back as it is (runtime/tensor.cc).
#pragma once

#include <cstdint>

namespace onnx_mini {

constexpr uint8_t kPoisonByte = 0x7B;
bool PoisonUninitialized();
void SetPoisonUninitialized(bool on);  // for tests: the build's default otherwise

}  // namespace onnx_mini
