// Which sanitizer a build has: GCC says so with a macro, clang with a
// feature. ONNX_MINI_ASAN and ONNX_MINI_TSAN are defined (as 1) in those builds.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ONNX_MINI_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNX_MINI_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define ONNX_MINI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ONNX_MINI_TSAN 1
#endif
#endif
