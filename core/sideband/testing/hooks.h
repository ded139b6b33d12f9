#pragma once
// Test hooks and counters of the sideband (core/sideband/sideband.cc). Not
// installed; the rename hook is called only when the library is built with
// TRACEPIPE_TEST_HOOKS (CMake option, on with the tests).
#include <cstdint>
#include <functional>

namespace tracepipe {

/// Calls of the core hooks so far (sideband_hooks.h), for tests that need to
/// know whether the core's hooks are wired.
uint64_t sideband_hook_calls_for_testing() noexcept;

/// Points of set_thread_name() where the rename test hook runs (signals are
/// blocked at every point except `entered`).
enum class RenameStep : uint8_t {
  entered,  ///< before anything (signals not blocked yet)
  locked,   ///< signals blocked, lock held, nothing changed
  renamed,  ///< the kernel name and the cached comm changed; record not written
  written,  ///< the record was written; lock still held
};
/// Installs a test hook for set_thread_name (process-wide; nullptr removes).
void set_rename_hook_for_testing(std::function<void(RenameStep, int32_t tid)> hook);

}  // namespace tracepipe
