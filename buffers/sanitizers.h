#pragma once
// Which sanitizer instruments this translation unit, for GCC and clang alike:
// GCC defines __SANITIZE_THREAD__ / __SANITIZE_ADDRESS__, clang only answers
// __has_feature. Code that ThreadSanitizer cannot follow (rseq critical
// sections, non-locked read-modify-writes) switches to plain atomics under
// TP_TSAN, so the sanitizer sees every synchronisation it checks.
#if defined(__SANITIZE_THREAD__)
#define TP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TP_TSAN 1
#endif
#endif
#ifndef TP_TSAN
#define TP_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_ASAN 1
#endif
#endif
#ifndef TP_ASAN
#define TP_ASAN 0
#endif
