#pragma once
// Which sanitizer instruments this translation unit, for GCC and clang alike:
// GCC defines __SANITIZE_THREAD__ / __SANITIZE_ADDRESS__, clang only answers
// __has_feature. Code that ThreadSanitizer cannot follow (rseq critical
// sections, non-locked read-modify-writes) switches to plain atomics under
// TRACEPIPE_TSAN, so the sanitizer sees every synchronisation it checks.
#if defined(__SANITIZE_THREAD__)
#define TRACEPIPE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRACEPIPE_TSAN 1
#endif
#endif
#ifndef TRACEPIPE_TSAN
#define TRACEPIPE_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TRACEPIPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRACEPIPE_ASAN 1
#endif
#endif
#ifndef TRACEPIPE_ASAN
#define TRACEPIPE_ASAN 0
#endif
