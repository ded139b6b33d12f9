#pragma once
// Helpers shared by the sideband tests: a test event that carries the name
// its writer had, buffer drains, record decoding, a trace.dat export.
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/sideband/sideband.h"
#include "tracepipe/core/sideband/sideband_state.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tp_sideband_test {

/// A regular event: a sequence number and the comm tracepipe's write path
/// had for its writer when it was written (ThreadContext::comm, the COMM
/// filter field).
using Seen = tracepipe::EventDecl<"sbtest", "seen", tracepipe::Int<"seq", uint32_t>,
                                  tracepipe::Chars<"comm", 16>>;

/// Emits Seen with the calling thread's cached comm.
inline tracepipe::EmitResult emit_seen(tracepipe::Instance& inst, uint32_t seq) {
  tracepipe::ThreadContext* ctx = tracepipe::thread_context();
  return Seen::emit(inst, seq, ctx != nullptr ? ctx->comm_view() : std::string_view{});
}

struct Rec {
  uint64_t ts = 0;
  uint32_t cpu = 0;
  std::vector<std::byte> bytes;

  uint16_t type() const { return at<uint16_t>(0); }
  int32_t common_pid() const { return at<int32_t>(4); }
  template <class T>
  T at(size_t off) const {
    T v{};
    if (off + sizeof v <= bytes.size()) std::memcpy(&v, bytes.data() + off, sizeof v);
    return v;
  }
  std::string chars(size_t off, size_t n) const {
    if (off + n > bytes.size()) return {};
    const char* p = reinterpret_cast<const char*>(bytes.data() + off);
    return std::string(p, strnlen(p, n));
  }
  /// A __data_loc string at `off`.
  std::string str(size_t off) const {
    const uint32_t w = at<uint32_t>(off);
    const size_t o = w & 0xffff, n = w >> 16;
    if (o + n > bytes.size() || n == 0) return {};
    return std::string(reinterpret_cast<const char*>(bytes.data() + o), n - 1);
  }
  std::span<const std::byte> span() const { return bytes; }
};

/// Every record of every CPU, merged by time stamp, not consumed.
inline std::vector<Rec> snapshot(const tracepipe::Instance& inst) {
  std::vector<Rec> out;
  auto m = tracepipe::buffers::merged_iterator(inst.ring());
  while (auto r = m.next()) out.push_back({r->ts, r->cpu, {r->payload.begin(), r->payload.end()}});
  return out;
}

/// Records of one event type.
inline std::vector<Rec> of_type(const std::vector<Rec>& recs, const tracepipe::EventDesc& d) {
  std::vector<Rec> out;
  for (const Rec& r : recs)
    if (r.type() == d.id()) out.push_back(r);
  return out;
}

inline tracepipe::InstanceOptions small_options(
    uint64_t kb = 1024, tracepipe::BufferMode mode = tracepipe::BufferMode::overwrite,
    uint32_t cpus = 0) {
  tracepipe::InstanceOptions o;
  o.buffer_size_kb = kb;
  o.mode = mode;
  o.cpus = cpus;
  return o;
}

/// The calling thread's kernel name.
inline std::string kernel_comm() {
  char b[17] = {};
  prctl(PR_GET_NAME, b, 0, 0, 0);
  return b;
}

/// Restores the calling thread's kernel name (and tracepipe's cache) on exit.
struct KeepName {
  std::string name = kernel_comm();
  ~KeepName() {
    prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
    tracepipe::refresh_thread_comm();
  }
};

/// Writes the instance's buffer (not consumed) to a trace.dat: every enabled
/// event's format, per-CPU records in buffer order, the given cmdlines.
inline void export_tracedat(const tracepipe::Instance& inst, const std::filesystem::path& path,
                            const std::vector<tracepipe::Cmdline>& cmdlines) {
  tracepipe::TraceDatWriter w(
      {.cpus = inst.cpus(), .page_size = 4096, .clock = std::string(inst.clock().name)});
  for (const tracepipe::EventDesc* d : inst.registry().events())
    if (inst.enabled(*d)) w.add_format(d->format());
  for (const tracepipe::Cmdline& c : cmdlines) w.set_cmdline(c.pid, c.comm);
  for (uint32_t cpu = 0; cpu < inst.cpus(); ++cpu) {
    tracepipe::buffers::Iterator it(inst.ring(), cpu);
    while (auto r = it.next()) w.add_record(cpu, r->ts, r->payload);
  }
  w.write(path);
}

/// A temp file removed at scope exit.
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("tp_sb_" + std::to_string(::getpid()) + "_" + name)) {}
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

}  // namespace tp_sideband_test
