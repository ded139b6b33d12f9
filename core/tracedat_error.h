#pragma once
// The one error type of the trace.dat reader and writer.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tracepipe {

/// A malformed, truncated or unsupported trace.dat. what() reads
/// "trace.dat: <section> at offset <N> (0x<hex>): <reason>", where the
/// offset is in bytes from the start of the file. Sections are named after
/// trace-cmd's: "file header", "header_page", "header_event",
/// "ftrace formats", "event formats", "kallsyms", "printk", "cmdlines",
/// "options", "flyrecord", "cpu N data", "cpu N decompressed data" (offset
/// within that CPU's decompressed data), "section <id>"; a named
/// instance's data is "buffer 'NAME' flyrecord", "buffer 'NAME' cpu N
/// data" (and "... decompressed data").
class TraceDatError : public std::runtime_error {
 public:
  TraceDatError(std::string section, uint64_t offset, const std::string& reason);
  const std::string& section() const noexcept { return section_; }
  uint64_t offset() const noexcept { return offset_; }

 private:
  std::string section_;
  uint64_t offset_;
};

}  // namespace tracepipe
