#pragma once
// The error a conversion's output raises, declared apart so that the
// installed <tracepipe/core/convert/converter.h> carries it (a library user
// catches it by type) while the writers' internal headers use it too.
#include <stdexcept>
#include <string>

namespace tracepipe::convert {

/// The output of a conversion (or of a recording written as Perfetto or
/// CTF) cannot be created or written: disk full, no such directory,
/// permission, a CTF directory that is a file. what(): "<path>:
/// <operation>: <strerror>", and from convert() also " (the partial output
/// was removed)": convert() removes what it created before it throws, so
/// no half-written output is left. The input is never at fault (a damaged
/// input is a TraceDatError). Thrown by convert(), convert_records() (from
/// the sink) and the Perfetto and CTF writers; never by the reader.
class ConvertOutputError : public std::runtime_error {
 public:
  explicit ConvertOutputError(const std::string& what, int err = 0)
      : std::runtime_error(what), err_(err) {}
  /// The errno of the operation that failed (ENOSPC, ENOENT, EACCES, ...;
  /// 0 when none applies, e.g. a CTF output path that is not a directory).
  int code() const noexcept { return err_; }

 private:
  int err_ = 0;
};

}  // namespace tracepipe::convert
