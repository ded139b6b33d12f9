#pragma once
// Helpers shared by the replay tests: kernel format texts, a builder of small
// synthetic trace.dat files, the comparison key of a record, temp paths.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace replay_test {

// The kernel's formats (Linux 6.18, shared/data/kernel/formats), with short print fmts.
inline constexpr std::string_view kSchedSwitch =
    "name: sched_switch\nID: 372\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"prev_comm=%s prev_pid=%d next_comm=%s next_pid=%d\", REC->prev_comm, "
    "REC->prev_pid, "
    "REC->next_comm, REC->next_pid\n";

inline constexpr std::string_view kSchedWaking =
    "name: sched_waking\nID: 375\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, "
    "REC->target_cpu\n";

inline constexpr std::string_view kKmalloc =
    "name: kmalloc\nID: 658\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;\n"
    "\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"call_site=%lx ptr=%p bytes_req=%zu bytes_alloc=%zu node=%d\", REC->call_site, "
    "REC->ptr, "
    "REC->bytes_req, REC->bytes_alloc, REC->node\n";

/// REPLAYED and KEPT of the row `name` of replay's table (printed with
/// --no-timing: the last four columns are REPLAYED KEPT DISCARDED LOST);
/// nullopt if there is no such row.
inline std::optional<std::pair<uint64_t, uint64_t>> replayed_kept(const std::string& table,
                                                                  const std::string& name) {
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) != 0) continue;
    std::vector<std::string> tok;
    std::istringstream ls(line);
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.size() < 5) return std::nullopt;
    return std::pair{std::stoull(tok[tok.size() - 4]), std::stoull(tok[tok.size() - 3])};
  }
  return std::nullopt;
}

/// A unique path in the temp directory (removed by the destructor).
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& stem) {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           (stem + "_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".dat");
  }
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

template <typename T>
void put(std::vector<std::byte>& rec, size_t off, T v) {
  std::memcpy(rec.data() + off, &v, sizeof v);
}

inline std::vector<std::byte> sched_switch(int32_t pid, const char* prev_comm, int32_t prev_pid,
                                           const char* next_comm, int32_t next_pid) {
  std::vector<std::byte> r(64);
  put(r, 0, uint16_t{372});
  put(r, 4, pid);
  std::memcpy(r.data() + 8, prev_comm, std::min<size_t>(15, std::strlen(prev_comm)));
  put(r, 24, prev_pid);
  put(r, 28, int32_t{120});
  std::memcpy(r.data() + 40, next_comm, std::min<size_t>(15, std::strlen(next_comm)));
  put(r, 56, next_pid);
  put(r, 60, int32_t{120});
  return r;
}

inline std::vector<std::byte> kmalloc(int32_t pid, uint64_t seq, uint64_t bytes_req) {
  std::vector<std::byte> r(56);
  put(r, 0, uint16_t{658});
  put(r, 4, pid);
  put(r, 8, uint64_t{0xffffffff81000000ull} + seq);  // call_site carries a sequence number
  put(r, 16, uint64_t{0xffff888100000000ull} + seq * 64);
  put(r, 24, bytes_req);
  put(r, 32, bytes_req * 2);
  put(r, 40, uint64_t{0xcc0});
  put(r, 48, int32_t{-1});
  return r;
}

inline std::vector<std::byte> sched_waking(int32_t pid, const char* comm, int32_t target_pid,
                                           int32_t target_cpu) {
  std::vector<std::byte> r(40);
  put(r, 0, uint16_t{375});
  put(r, 4, pid);
  std::memcpy(r.data() + 8, comm, std::min<size_t>(15, std::strlen(comm)));
  put(r, 24, target_pid);
  put(r, 28, int32_t{120});
  put(r, 32, target_cpu);
  return r;
}

/// A writer with the three formats above declared.
inline tracepipe::TraceDatWriter make_writer(uint32_t cpus) {
  tracepipe::TraceDatWriter w({.cpus = cpus});
  for (auto [text, sys] : {std::pair{kSchedSwitch, "sched"}, std::pair{kSchedWaking, "sched"},
                           std::pair{kKmalloc, "kmem"}})
    w.add_format(tracepipe::parse_event_format(text, sys));
  return w;
}

/// The comparison key of one record: CPU, event and every field's bytes
/// except common_flags (may differ between two copies of one kernel event);
/// char[N] strings up to their NUL; __data_loc contents included.
inline std::string record_key(const tracepipe::TraceRecord& r, const tracepipe::EventFormat& f) {
  std::string key = std::to_string(r.cpu) + "/" + std::to_string(f.id) + ":";
  auto bytes = [&](uint32_t off, uint32_t size) {
    if (off + size <= r.payload.size())
      key.append(reinterpret_cast<const char*>(r.payload.data()) + off, size);
    key += '|';
  };
  for (const tracepipe::FormatField& x : f.common_fields)
    if (x.name != "common_flags") bytes(x.offset, x.size);
  for (const tracepipe::FormatField& x : f.fields) {
    if (x.is_string() && !x.is_dynamic() && x.offset + x.size <= r.payload.size()) {
      const char* s = reinterpret_cast<const char*>(r.payload.data()) + x.offset;
      key.append(s, strnlen(s, x.size));
      key += '|';
      continue;
    }
    bytes(x.offset, x.size);
    if (x.is_dynamic() && x.size == 4 && x.offset + 4 <= r.payload.size()) {
      uint32_t item;
      std::memcpy(&item, r.payload.data() + x.offset, 4);
      uint32_t loc = item & 0xffff;
      if (x.is_rel_loc()) loc += x.offset + 4;
      bytes(loc, item >> 16);
    }
  }
  return key;
}

/// The records of a file as a multiset of keys.
struct FileKeys {
  std::map<std::string, long> keys;
  size_t records = 0;
};
inline FileKeys keys_of(const std::filesystem::path& p) {
  const auto r = tracepipe::TraceDatReader::open(p);
  FileKeys out;
  auto c = r.records();
  while (auto rec = c.next()) {
    ++out.records;
    const tracepipe::EventFormat* f = r.format(*rec->event_id());
    ++out.keys[f != nullptr ? record_key(*rec, *f) : std::string("?")];
  }
  return out;
}

}  // namespace replay_test
