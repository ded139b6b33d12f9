#pragma once
// Event schema in the kernel's `format` file syntax.
//
// Every ftrace event the kernel exports has a text file
// /sys/kernel/tracing/events/<system>/<event>/format:
//
//   name: sched_switch
//   ID: 372
//   format:
//   \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;      <- common fields
//   ...                                                                   (every event)
//   <blank line>
//   \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;             <- event fields
//   ...
//   <blank line>
//   print fmt: "prev_comm=%s ...", REC->prev_comm, ...
//
// tracepipe reads these files (kernel events, trace.dat headers) and prints
// its own C++-declared events in exactly the same syntax, so trace-cmd and
// libtraceevent can decode tracepipe's records.
//
// Representation (mirrors the kernel's struct ftrace_event_field):
//   * `name` is the bare identifier ("prev_comm");
//   * `type` is the C type with any array dimension attached to it
//     ("char[16]", "unsigned long[]"), as the kernel stores it; the format
//     text puts the dimension after the name ("char prev_comm[16]");
//   * dynamic fields keep their marker in the type: "__data_loc char[]",
//     "__rel_loc u8[]" (a 4-byte word: low 16 bits offset, high 16 bits
//     length; see FormatField::is_dynamic()).
//
// Invariant: for any text T the kernel produced,
//   to_format_text(parse_event_format(T, sys)) == T.
// (tests/core/events/event_format_test.cc checks it for every captured file.)
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tracepipe {

/// One `field:` line of a format file. Offsets and sizes in bytes from the
/// start of the record payload (the payload starts at common_type).
struct FormatField {
  std::string type;  ///< C type, array dimension included: "char[16]", "__data_loc char[]"
  std::string name;  ///< identifier only: "prev_comm"
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;

  /// True for "__data_loc ..." and "__rel_loc ..." fields (4-byte
  /// offset/length word pointing at variable-length data in the record).
  bool is_dynamic() const noexcept;
  /// True for "__rel_loc ..." (offset counted from the end of the word).
  bool is_rel_loc() const noexcept;
  /// True if the type carries an array dimension ("char[16]", "u32[]"),
  /// including dynamic arrays.
  bool is_array() const noexcept;
  /// Declared element count of a fixed array ("char[16]" -> 16); nullopt for
  /// scalars, "[]" and dynamic fields, or a dimension that is not a number.
  std::optional<uint32_t> array_length() const noexcept;
  /// Element type without the array dimension and dynamic marker:
  /// "char[16]" -> "char", "__data_loc char[]" -> "char", "u64" -> "u64".
  std::string element_type() const;
  /// True for strings stored in the record: a fixed or dynamic array whose
  /// type mentions "char" ("char[16]", "__data_loc char[]"). Pointer types
  /// ("const char *") are not: their bytes are an address, not the text.
  /// Mirrors kernel/trace/trace_events_filter.c: filter_assign_type.
  bool is_string() const noexcept;

  friend bool operator==(const FormatField&, const FormatField&) = default;
};

/// One event's schema: the content of events/<system>/<name>/format.
struct EventFormat {
  std::string system;                      ///< "sched"; not part of the format text itself
  std::string name;                        ///< "sched_switch"
  uint32_t id = 0;                         ///< the value stored in each record's common_type
  std::vector<FormatField> common_fields;  ///< before the blank line
  std::vector<FormatField> fields;         ///< event-specific fields
  /// Raw text after "print fmt: " (without the final newline). May hold
  /// newlines: the kernel prints a "\n" of the format string's source as a
  /// real newline inside the quotes (ext4_fc_stats, ext4_getfsmap_*).
  std::string print_fmt;

  /// The field named `name`, searching event fields first, then common
  /// fields; nullptr if absent. The pointer is valid while *this is unchanged.
  const FormatField* find_field(std::string_view name) const noexcept;
  /// Minimum payload size in bytes: max(offset + size) over all fields.
  uint32_t fixed_size() const noexcept;

  friend bool operator==(const EventFormat&, const EventFormat&) = default;
};

/// Raised on malformed format text. what() reads
/// "<system>/<name or ?>: format line <N>: <reason>: '<line text>'".
class FormatError : public std::runtime_error {
 public:
  FormatError(std::string message, uint32_t line)
      : std::runtime_error(std::move(message)), line_(line) {}
  /// 1-based line number of the offending line (0 = whole text, e.g. a
  /// missing "ID:" line).
  uint32_t line() const noexcept { return line_; }

 private:
  uint32_t line_;
};

/// Parses a kernel `format` file. `system` is stored in the result (the file
/// does not name it). Accepts the kernel's exact output and reasonable
/// variations (spaces instead of tabs, CRLF, missing `signed:`). The print
/// fmt ends at the first newline outside a string or character literal, so a
/// quoted string may span lines (the newline is kept in print_fmt, as
/// libtraceevent keeps it); a literal left open at the end of the text is
/// not multi-line and ends at its own line. Requires
/// `name:`, `ID:`, `format:`; fields must fit in 32 bits (offset + size).
/// Throws FormatError naming the line on anything else. Never reads outside
/// `text`. Mirrors kernel/trace/trace_events.c: f_show (the printer this
/// parser inverts) and libtraceevent's event_read_fields.
EventFormat parse_event_format(std::string_view text, std::string_view system);

/// Parses one `field:` line ("\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;").
/// Also accepts header_page's "field: u64 timestamp;" (a space after the colon).
/// Throws FormatError(line = `line_no`) on malformed input.
FormatField parse_format_field(std::string_view line, uint32_t line_no = 0);

/// Prints the kernel's exact format-file syntax (ends with "\n").
/// Mirrors kernel/trace/trace_events.c: f_show.
std::string to_format_text(const EventFormat& format);

/// Prints one field line as f_show does, with the leading tab and final "\n".
std::string to_format_field_line(const FormatField& field);

/// The four common fields every kernel event starts with (64-bit layout):
/// unsigned short common_type @0, unsigned char common_flags @2,
/// unsigned char common_preempt_count @3, int common_pid @4.
/// Mirrors kernel/trace/trace_events.c: trace_define_common_fields.
const std::vector<FormatField>& kernel_common_fields();

}  // namespace tracepipe
