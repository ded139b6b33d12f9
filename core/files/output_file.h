#pragma once
// Writing a whole buffer at a file offset, retrying short writes and EINTR:
// what the trace.dat writers and the recorder need when they patch a header
// or append a page run in place. Thread-safety: a free function, no state.
#include <cstddef>
#include <cstdint>
#include <span>

namespace tracepipe {

/// pwrite(2) of all of `bytes` at `offset`: 0, or the errno of the write that
/// failed (EIO when the kernel wrote nothing without an error). No allocation.
int pwrite_all(int fd, std::span<const std::byte> bytes, uint64_t offset) noexcept;

}  // namespace tracepipe
