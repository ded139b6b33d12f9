#pragma once
// What the real readers see in a converted trace, as comparable records:
// trace-cmd report -R -t (the reference), babeltrace2 (CTF) and
// protoc --decode=perfetto.protos.Trace with Perfetto's own schema.
//
// A record: CPU, time stamp (ns), pid, event name and every event field
// (common fields excepted, as -R prints them) as text: integers in decimal
// (trace-cmd's hex for unsigned longs and pointers converted), strings as
// they are, arrays as trace-cmd prints them ("ARRAY[04, 00, ...]", bytes)
// or, from babeltrace2's arrays and Perfetto's repeated fields, "LIST:"
// followed by the element values, compared byte for byte.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace tp_convert_test {

struct Rec {
  uint32_t cpu = 0;
  uint64_t ts = 0;
  int64_t pid = -1;  ///< -1 when the reader does not show it
  std::string event;
  std::vector<std::pair<std::string, std::string>> fields;
};

/// trace-cmd report -R -t of `dat`, fields split with the file's formats.
std::vector<Rec> tracecmd_records(const std::filesystem::path& dat,
                                  const std::filesystem::path& scratch);
/// babeltrace2 --clock-cycles of a CTF directory. `lost` receives the
/// discarded-events notices babeltrace2 printed (per CPU: count, summed).
std::vector<Rec> babeltrace_records(const std::filesystem::path& dir,
                                    const std::filesystem::path& scratch,
                                    std::vector<std::pair<uint32_t, uint64_t>>* lost = nullptr);
/// skip() when babeltrace2 is not installed.
void babeltrace_or_skip();
/// Perfetto's schema, or skip() when it is absent.
std::filesystem::path perfetto_proto_or_skip();
/// protoc --decode=perfetto.protos.Trace of a Perfetto trace. `lost_bundles`
/// receives the CPUs of bundles flagged lost_events, `overrun` the
/// END_OF_TRACE overrun per CPU, `threads` the process_tree threads (tid, name).
struct PerfettoExtras {
  std::vector<uint32_t> lost_bundles;
  std::vector<std::pair<uint32_t, uint64_t>> overrun;
  std::vector<std::pair<int64_t, std::string>> threads;
  std::vector<int64_t> thread_tgids;  ///< tgid of each thread entry (-1 when absent)
  std::vector<std::string> clocks;    ///< ftrace_clock of each bundle
  uint64_t packets = 0;
};
std::vector<Rec> protoc_records(const std::filesystem::path& trace,
                                const std::filesystem::path& scratch,
                                PerfettoExtras* extras = nullptr);

/// Compares per CPU, in order: same count, time stamps, events, fields (and
/// pid where both show it). Returns "" or the first difference described.
/// `stale_empty` (babeltrace2 only): babeltrace2 2.0 (Debian 12 has 2.0.4)
/// sometimes shows an empty CTF string as the same field's value in an
/// earlier event (a reader bug, fixed upstream after 2.0: "String fields
/// display the value of a previous event, despite their length being set to
/// zero"); with it, a field trace-cmd prints empty is counted there instead
/// of compared. The CTF bytes hold the empty string (a NUL), which the
/// Perfetto path, read by protoc, checks for the same records.
std::string compare(const std::vector<Rec>& expected, const std::vector<Rec>& actual,
                    uint64_t* stale_empty = nullptr);

}  // namespace tp_convert_test
