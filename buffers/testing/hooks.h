#pragma once
// Test hooks of the ring buffer's slow path (buffers/ring_buffer.cc). Not
// installed; the library loads them only when built with TRACEPIPE_TEST_HOOKS
// (CMake option, on with the tests), so a production build carries no load.
#include <atomic>
#include <cstdint>

#include "tracepipe/buffers/cpu_buffer.h"

namespace tracepipe::buffers::detail {

/// Called in recycle_overwrite's swap between taking a spare and the CAS
/// that moves the position to PREPARING (ring_buffer.h, "Set aside", step
/// (X2)), to force the races there. nullptr (the default): nothing.
using SwapTestHook = void (*)(CpuBuffer& cb, uint64_t idx);
extern std::atomic<SwapTestHook> swap_test_hook;
/// Called in recycle_overwrite right after it took its hold, before its
/// walk ("Takeover", (T1)), to stall a recycler there.
extern std::atomic<SwapTestHook> recycle_test_hook;

}  // namespace tracepipe::buffers::detail
