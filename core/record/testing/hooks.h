#pragma once
// Test hook of the recorder thread (core/record/recorder.cc). Not installed;
// the library loads it only when built with TRACEPIPE_TEST_HOOKS (CMake
// option, on with the tests).
#include <atomic>
#include <functional>

namespace tracepipe::record {

/// Called on the recorder thread at the start of every pass (a test blocks
/// in it to stall the consumer). Process-wide; nullptr (the default):
/// nothing. The caller keeps the function alive until it stores nullptr
/// and the recorder stopped.
extern std::atomic<const std::function<void()>*> pass_test_hook;

}  // namespace tracepipe::record
