#pragma once
// The one error type of the trace.dat reader and writer.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tracepipe {

/// A malformed, truncated or unsupported trace.dat. what() reads
/// "<file>: <section> at offset <N> (0x<hex>): <reason>", where <file> is
/// the path a reader was opened from (TraceDatReader::open), or
/// "trace.dat" for bytes parsed from memory, and the offset is in bytes
/// from the start of the file. Sections are named after trace-cmd's: "file
/// header", "header_page", "header_event", "ftrace formats", "event
/// formats", "kallsyms", "printk", "cmdlines", "options", "flyrecord", "cpu
/// N data", "cpu N decompressed data" (offset within that CPU's
/// decompressed data), "section <id>"; a named instance's data is "buffer
/// 'NAME' flyrecord", "buffer 'NAME' cpu N data" (and "... decompressed
/// data").
class TraceDatError : public std::runtime_error {
 public:
  TraceDatError(std::string section, uint64_t offset, std::string reason,
                std::string file = "trace.dat");
  const std::string& section() const noexcept { return section_; }
  uint64_t offset() const noexcept { return offset_; }
  const std::string& reason() const noexcept { return reason_; }
  /// The file named at the start of what().
  const std::string& file() const noexcept { return file_; }
  /// what() without the leading "<file>: ".
  std::string detail() const;
  /// The same error, naming `file` instead.
  TraceDatError with_file(std::string file) const {
    return TraceDatError(section_, offset_, reason_, std::move(file));
  }

 private:
  std::string section_;
  uint64_t offset_;
  std::string reason_;
  std::string file_;
};

}  // namespace tracepipe
