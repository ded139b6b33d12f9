#pragma once
// Inputs for the convert tests: a tracepipe recording of declared events,
// a recovered flight file, damaged and lossy copies.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace tp_convert_test {

/// A scratch directory removed at scope end.
struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& name);
  ~Scratch();
  std::filesystem::path operator/(const std::string& n) const { return dir / n; }
};

/// Writes a trace.dat of `count` records of declared events (integers of
/// every size and sign, a char[16], a __data_loc string), with the
/// sideband (tracepipe:task_comm...), from this thread. Returns the path.
std::filesystem::path record_declared(const Scratch& s, uint32_t count);

/// A child process records `count` events into a flight file and exits
/// without cleanup; the file is recovered into a trace.dat (path returned).
std::filesystem::path recover_flight(const Scratch& s, uint32_t count);

/// Byte offset in `dat` of page `page` of the CPU at position `cpu_index`
/// (uncompressed files).
uint64_t page_offset(const std::filesystem::path& dat, size_t cpu_index, size_t page);

/// Position in cpu_data() of the CPU with the most data.
size_t busiest_cpu(const std::filesystem::path& dat);

/// Overwrites 8 bytes at `offset` of `file`.
void poke_u64(const std::filesystem::path& file, uint64_t offset, uint64_t value);
uint64_t peek_u64(const std::filesystem::path& file, uint64_t offset);

}  // namespace tp_convert_test
