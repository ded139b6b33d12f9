// Fuzz target: flight file recovery (core/recover/recover.h) on untrusted bytes.
//
// Property: for any input, recover_bytes either returns a trace or throws
// RecoverError; a trace then becomes a trace.dat. Nothing else may happen:
// no other exception, no crash, no out-of-bounds read (ASan), no hang. Each
// input runs twice: as is, and with its header checksum made valid, so that
// mutations reach the geometry, the metadata log and the per-CPU walk
// instead of stopping at the checksum.
//
// The recovery source is compiled into this file so that it carries the
// fuzzer's instrumentation (the libraries linked next to it do not).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tracepipe/core/recover/recover.cc"

namespace {

void run(const std::vector<std::byte>& bytes) {
  using namespace tracepipe;
  try {
    const recover::RecoveredTrace t = recover::recover_bytes(bytes);
    uint64_t n = 0;
    for (const auto& c : t.cpus) n += c.records.size();
    if (n < 4096) (void)recover::trace_dat_bytes(t);
  } catch (const recover::RecoverError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(size);
  if (size != 0) std::memcpy(bytes.data(), data, size);
  run(bytes);
  using tracepipe::flight::FileHeader;
  if (size >= sizeof(FileHeader)) {
    const uint32_t crc =
        tracepipe::flight::crc32_bytes(bytes.data(), offsetof(FileHeader, header_crc));
    std::memcpy(bytes.data() + offsetof(FileHeader, header_crc), &crc, sizeof crc);
    run(bytes);
  }
  return 0;
}
