// Recovery of flight files: validation of the untrusted file, the per-CPU
// walk, and the trace.dat. The method is described in recover.h.
#include "tracepipe/core/recover/recover.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <system_error>

#include "tracepipe/buffers/cpu_buffer.h"
#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/core/flight/flight_file.h"
#include "tracepipe/core/tracedat/cpu_stat_text.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe::recover {

RecoverError::RecoverError(std::string part, uint64_t offset, const std::string& why,
                           const std::string& file)
    : std::runtime_error(fmt::format("{}: {} (at offset {}): {}", file, part, offset, why)),
      part_(std::move(part)),
      offset_(offset),
      why_(why) {}

uint64_t RecoveredTrace::records() const noexcept {
  uint64_t n = 0;
  for (const auto& c : cpus) n += c.records.size();
  return n;
}
uint64_t RecoveredTrace::uncommitted() const noexcept {
  uint64_t n = 0;
  for (const auto& c : cpus) n += c.uncommitted;
  return n;
}
uint64_t RecoveredTrace::cut_short() const noexcept {
  uint64_t n = 0;
  for (const auto& c : cpus) n += c.cut_short;
  return n;
}

namespace {

using buffers::detail::CpuBuffer;
namespace bd = buffers::detail;

// Reads of the untrusted file. Every offset is checked by the caller; these
// check again (cheap) so that no read is ever out of bounds.
class FileView {
 public:
  FileView(std::span<const std::byte> bytes, bool live) : b_(bytes), live_(live) {}
  uint64_t size() const noexcept { return b_.size(); }
  bool has(uint64_t off, uint64_t n) const noexcept {
    return off <= b_.size() && n <= b_.size() - off;
  }
  const std::byte* at(uint64_t off) const noexcept { return b_.data() + off; }
  // Live: the writers may store meanwhile; aligned atomic loads (the mapping
  // is page-aligned and every offset read this way is 4- or 8-aligned).
  uint32_t u32(uint64_t off, const char* part) const {
    need(off, 4, part);
    if (live_ && off % 4 == 0)
      return __atomic_load_n(reinterpret_cast<const uint32_t*>(at(off)), __ATOMIC_ACQUIRE);
    uint32_t v;
    std::memcpy(&v, at(off), 4);
    return v;
  }
  uint64_t u64(uint64_t off, const char* part) const {
    need(off, 8, part);
    if (live_ && off % 8 == 0)
      return __atomic_load_n(reinterpret_cast<const uint64_t*>(at(off)), __ATOMIC_ACQUIRE);
    uint64_t v;
    std::memcpy(&v, at(off), 8);
    return v;
  }
  void need(uint64_t off, uint64_t n, const char* part) const {
    if (!has(off, n))
      throw RecoverError(part, off, fmt::format("{} bytes needed, the file has {}", n, b_.size()));
  }
  bool live() const noexcept { return live_; }

 private:
  std::span<const std::byte> b_;
  bool live_;
};

std::string cstr(const char* p, size_t cap) { return std::string(p, strnlen(p, cap)); }

#define FIELD_OFF(f) static_cast<uint64_t>(offsetof(flight::FileHeader, f))

// The header's bytes, once they prove to be a flight header this tracepipe
// reads: magic, byte order, version and checksum.
flight::FileHeader read_header_bytes(const FileView& v) {
  using flight::FileHeader;
  if (v.size() < sizeof(FileHeader))
    throw RecoverError("header", 0,
                       fmt::format("file of {} bytes is shorter than a flight header ({})",
                                   v.size(), sizeof(FileHeader)));
  FileHeader h;
  std::memcpy(&h, v.at(0), sizeof h);
  if (std::memcmp(h.magic, flight::kMagic, sizeof h.magic) != 0)
    throw RecoverError("header.magic", 0, "not a tracepipe flight file (magic is not TPFLIGHT)");
  if (h.endian != flight::kEndianMark)
    throw RecoverError("header.endian", FIELD_OFF(endian),
                       "written by a host of the other byte order");
  if (h.version != flight::kVersion)
    throw RecoverError(
        "header.version", FIELD_OFF(version),
        fmt::format("version {}, this tracepipe reads {}", h.version, flight::kVersion));
  const uint32_t crc = flight::crc32_bytes(&h, offsetof(FileHeader, header_crc));
  if (crc != h.header_crc)
    throw RecoverError(
        "header", FIELD_OFF(header_crc),
        fmt::format("checksum {:#010x} does not match the header ({:#010x}): damaged", h.header_crc,
                    crc));
  return h;
}

// The file's state (read live: the writer changes it), refused while it was
// still being created.
void read_file_state(const FileView& v, RecoveredTrace& out) {
  const uint32_t state = v.u32(FIELD_OFF(state), "header.state");
  if (state > static_cast<uint32_t>(flight::FileState::closed))
    throw RecoverError("header.state", FIELD_OFF(state), fmt::format("unknown state {}", state));
  out.state = static_cast<flight::FileState>(state);
  if (out.state == flight::FileState::creating)
    throw RecoverError("header.state", FIELD_OFF(state),
                       "the file was still being created (its process died during Instance "
                       "construction): no records");
}

// The header's size against the file's. A truncated file (shorter than the
// header says) yields what precedes the cut, unless strict or live.
void check_file_size(const FileView& v, const flight::FileHeader& h, RecoveredTrace& out,
                     const RecoverOptions& o) {
  const bool truncated = h.file_size > v.size() && !o.strict && !v.live();
  if (h.file_size != v.size() && !truncated)
    throw RecoverError(
        "header.file_size", FIELD_OFF(file_size),
        fmt::format("the header says {} bytes, the file has {} (truncated or extended)",
                    h.file_size, v.size()));
  if (truncated)
    out.warnings.push_back(
        fmt::format("truncated: the header says {} bytes, the file has {}; reading what precedes "
                    "byte {}",
                    h.file_size, v.size(), v.size()));
}

// The ring's geometry, which must be exactly what the writer's
// ring_memory_layout gives for it; returns that layout.
buffers::RingMemoryLayout check_geometry(const flight::FileHeader& h) {
  if (h.cpus == 0 || h.cpus > 65536)
    throw RecoverError("header.cpus", FIELD_OFF(cpus), fmt::format("{} CPUs", h.cpus));
  if (h.nr_subbufs < 3 || h.nr_subbufs > bd::kMaxPositions)
    throw RecoverError("header.nr_subbufs", FIELD_OFF(nr_subbufs),
                       fmt::format("{} sub-buffers", h.nr_subbufs));
  if (h.subbuf_size < bd::kMinSubbufSize || h.subbuf_size > bd::kMaxSubbufSize ||
      (h.subbuf_size & (h.subbuf_size - 1)) != 0)
    throw RecoverError("header.subbuf_size", FIELD_OFF(subbuf_size),
                       fmt::format("{} bytes", h.subbuf_size));
  if (h.cpu_state_size != sizeof(CpuBuffer))
    throw RecoverError("header.cpu_state_size", FIELD_OFF(cpu_state_size),
                       fmt::format("{} bytes, this tracepipe's CPU state is {}", h.cpu_state_size,
                                   sizeof(CpuBuffer)));
  if (h.ring_mode > flight::kModeDropNewest)
    throw RecoverError("header.ring_mode", FIELD_OFF(ring_mode),
                       fmt::format("unknown mode {}", h.ring_mode));
  buffers::RingBufferConfig rc;
  rc.cpus = h.cpus;
  rc.subbuf_size = h.subbuf_size;
  rc.size_per_cpu = (size_t{h.nr_subbufs} - 1) * h.subbuf_size;
  if (h.nr_spares > bd::kMaxSpares)
    throw RecoverError("header.nr_spares", FIELD_OFF(nr_spares),
                       fmt::format("{} spare sub-buffers", h.nr_spares));
  rc.spare_subbufs = h.nr_spares;
  const buffers::RingMemoryLayout l = buffers::ring_memory_layout(
      rc, h.ring_mode == flight::kModeOverwrite
              ? buffers::OverflowMode::overwrite
              : buffers::OverflowMode::drop_newest);  // valid by the checks above
  if (l.nr_subbufs != h.nr_subbufs || l.nr_spares != h.nr_spares ||
      l.cpu_state_offset != h.cpu_state_offset || l.positions_offset != h.positions_offset ||
      l.pages_offset != h.pages_offset || l.pages_per_cpu != h.pages_per_cpu ||
      l.slots_offset != h.slots_offset || l.spares_offset != h.spares_offset)
    throw RecoverError("header.ring layout", FIELD_OFF(cpu_state_offset),
                       "offsets differ from the layout of this geometry");
  return l;
}

// The metadata log and the ring (layout `l`) within the file the header
// describes; the metadata log also within the bytes there are.
void check_regions(const FileView& v, const flight::FileHeader& h,
                   const buffers::RingMemoryLayout& l) {
  const uint64_t fsize = h.file_size;
  const auto fits = [fsize](uint64_t off, uint64_t n) { return off <= fsize && n <= fsize - off; };
  if (h.meta_offset != flight::kHeaderBytes || h.meta_capacity > fsize ||
      !fits(h.meta_offset, h.meta_capacity))
    throw RecoverError("header.meta_offset", FIELD_OFF(meta_offset),
                       "metadata log outside the file");
  if (!v.has(h.meta_offset, h.meta_capacity))
    throw RecoverError(
        "header.meta_offset", FIELD_OFF(meta_offset),
        fmt::format("the file ends at byte {}, within its metadata log (bytes {} to {}): no event "
                    "formats to read records with",
                    v.size(), h.meta_offset, h.meta_offset + h.meta_capacity));
  if (h.ring_offset % 4096 != 0 || h.ring_offset < h.meta_offset + h.meta_capacity ||
      h.ring_size < l.total || !fits(h.ring_offset, h.ring_size))
    throw RecoverError("header.ring_offset", FIELD_OFF(ring_offset),
                       fmt::format("ring of {} bytes at {} does not fit the file of {} (needs {})",
                                   h.ring_size, h.ring_offset, fsize, l.total));
}

// What the header says of the writer (process, instance, clock) and its ring.
void copy_writer_info(const flight::FileHeader& h, RecoveredTrace& out) {
  out.pid = h.pid;
  out.comm = cstr(h.comm, sizeof h.comm);
  out.instance = cstr(h.instance, sizeof h.instance);
  out.clock = cstr(h.clock, sizeof h.clock);
  if (out.clock.empty() || !std::all_of(out.clock.begin(), out.clock.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '-';
      }))
    throw RecoverError("header.clock", FIELD_OFF(clock), "not a trace clock name");
  out.clock_in_ns = h.clock_in_ns != 0;
  out.created_realtime_ns = h.created_realtime_ns;
  out.subbuf_size = static_cast<uint32_t>(h.subbuf_size);
  out.nr_subbufs = h.nr_subbufs;
  out.overwrite = h.ring_mode == flight::kModeOverwrite;
  out.cpu_local = h.cpu_local != 0;
}

flight::FileHeader read_header(const FileView& v, RecoveredTrace& out, const RecoverOptions& o) {
  const flight::FileHeader h = read_header_bytes(v);
  out.version = h.version;
  read_file_state(v, out);
  if (h.header_bytes != flight::kHeaderBytes)
    throw RecoverError("header.header_bytes", FIELD_OFF(header_bytes),
                       fmt::format("{} (expected {})", h.header_bytes, flight::kHeaderBytes));
  check_file_size(v, h, out, o);
  check_regions(v, h, check_geometry(h));
  copy_writer_info(h, out);
  return h;
}

void damage(RecoveredTrace& out, const RecoverOptions& o, std::string part, uint64_t off,
            const std::string& why) {
  if (o.strict) throw RecoverError(std::move(part), off, why);
  out.warnings.push_back(fmt::format("{} (at offset {}): {}", part, off, why));
}

void read_meta(const FileView& v, const flight::FileHeader& h, RecoveredTrace& out,
               const RecoverOptions& o) {
  uint64_t used = v.u64(FIELD_OFF(meta_used), "header.meta_used");
  if (used > h.meta_capacity) {
    damage(out, o, "header.meta_used", FIELD_OFF(meta_used),
           fmt::format("{} bytes used of a {}-byte metadata log", used, h.meta_capacity));
    used = h.meta_capacity;
  }
  std::map<uint32_t, size_t> by_id;
  uint64_t at = 0;
  while (at < used) {
    const uint64_t off = h.meta_offset + at;
    if (used - at < sizeof(flight::MetaEntry)) {
      damage(out, o, "metadata log", off, "entry head cut off");
      return;
    }
    flight::MetaEntry e;
    std::memcpy(&e, v.at(off), sizeof e);
    const uint64_t padded = (uint64_t{e.len} + 7) / 8 * 8;
    if (padded > used - at - sizeof e) {
      damage(out, o, "metadata log", off,
             fmt::format("entry of {} bytes runs past the log's end", e.len));
      return;
    }
    const std::byte* body = v.at(off + sizeof e);
    uint32_t crc = flight::crc32_bytes(&e.kind, sizeof e.kind);
    crc = flight::crc32_bytes(&e.len, sizeof e.len, crc);
    crc = flight::crc32_bytes(body, e.len, crc);
    at += sizeof e + padded;
    if (crc != e.crc) {
      damage(out, o, "metadata log", off, "entry checksum does not match: skipped");
      continue;
    }
    const std::string_view text(reinterpret_cast<const char*>(body), e.len);
    if (e.kind == static_cast<uint32_t>(flight::MetaKind::format)) {
      const size_t nul = text.find('\0');
      if (nul == std::string_view::npos) {
        damage(out, o, "metadata log", off, "format entry without a system name");
        continue;
      }
      try {
        EventFormat f = parse_event_format(text.substr(nul + 1), text.substr(0, nul));
        if (auto it = by_id.find(f.id); it != by_id.end())
          out.formats[it->second] = std::move(f);
        else {
          by_id.emplace(f.id, out.formats.size());
          out.formats.push_back(std::move(f));
        }
      } catch (const std::exception& ex) {
        damage(out, o, "metadata log", off,
               fmt::format("event format does not parse: {}", ex.what()));
      }
    } else if (e.kind == static_cast<uint32_t>(flight::MetaKind::cmdline)) {
      if (e.len < 4) {
        damage(out, o, "metadata log", off, "cmdline entry shorter than a pid");
        continue;
      }
      int32_t pid;
      std::memcpy(&pid, body, 4);
      std::string comm(text.substr(4, 16));
      for (char& ch : comm)  // saved_cmdlines is "pid comm" lines
        if (static_cast<unsigned char>(ch) < ' ') ch = '_';
      out.cmdlines.emplace_back(pid, std::move(comm));
    } else {
      damage(out, o, "metadata log", off, fmt::format("unknown entry kind {}", e.kind));
    }
  }
}

// True if the records from `off` to `end` (a sub-buffer's page at `page`)
// chain like the ring's: each committed header's stride matches its length,
// each uncommitted one has a valid stride, and the walk ends exactly at an
// END word, at `end`, or at zero bytes to the sub-buffer's end.
// `min_ts`: the stamp of the last record before the gap (stamps never go
// back on one CPU, the ring's I5).
bool chain_ok(const FileView& v, uint64_t page, uint64_t off, uint64_t end, uint64_t S,
              uint64_t min_ts) {
  const auto rest_zero = [&](uint64_t from) {
    for (uint64_t o = from; o < S; o += 4)
      if (v.u32(page + o, "record") != 0) return false;
    return true;
  };
  while (off < end) {
    if (off + 8 > S) return false;
    const uint32_t word = v.u32(page + off, "record");
    const uint32_t stash = v.u32(page + off + 4, "record");
    const uint32_t kind = bd::word_kind(word);
    if (kind == bd::kKindEnd) return word == bd::make_word(bd::kKindEnd, 0) && rest_zero(off + 4);
    if (off + bd::kHeaderSize <= S && (word != 0 || stash != 0)) {
      const uint64_t ts = v.u64(page + off + 8, "record");
      if (ts < min_ts) return false;
      min_ts = ts;
    }
    uint64_t stride = stash;
    if (kind == bd::kKindNone) {
      if (stash == 0) return rest_zero(off);
    } else if (bd::stride_for(bd::word_len(word)) != stash) {
      return false;
    }
    if (stride < bd::kHeaderSize || stride % bd::kRecordAlign != 0 || stride > S - off)
      return false;
    off += stride;
  }
  return off == end;
}

struct Subbuf {
  uint64_t age;  // sub-buffers behind the tail's (0: the tail's own)
  uint64_t idx;
  uint64_t word;
};

// One CPU's walk: where its parts lie, and what it found.
struct CpuWalk {
  const FileView& v;
  const flight::FileHeader& h;
  uint32_t c;
  RecoveredTrace& out;
  const RecoverOptions& o;
  RecoveredCpu rc;
  uint64_t S = 0, P = 0, nslots = 0;
  uint64_t cb_off = 0, pw_base = 0, slot_base = 0;
  uint64_t tail_off = 0, tail_seq = 0;
  std::vector<bool> slot_used{};
  bool cut_by_end = false;  // a sub-buffer lay past the end of a truncated file

  uint64_t page_of(uint64_t slot) const {
    return h.ring_offset + h.pages_offset + uint64_t{c} * h.pages_per_cpu + slot * S;
  }

  // The tail word and the writers' counters.
  void read_state() {
    const std::string tail_part = fmt::format("cpu {} tail word", c);
    v.need(cb_off, sizeof(CpuBuffer), tail_part.c_str());
    const uint64_t pos =
        v.u64(cb_off + offsetof(CpuBuffer, tail) + offsetof(bd::TailWord, pos), tail_part.c_str());
    const auto counter = [&](size_t field) { return v.u64(cb_off + field, "cpu counters"); };
    rc.counters.overrun = counter(offsetof(CpuBuffer, overrun));
    rc.counters.commit_overrun = counter(offsetof(CpuBuffer, commit_overrun));
    rc.counters.lost_set_aside = counter(offsetof(CpuBuffer, lost_set_aside));
    rc.counters.set_aside = counter(offsetof(CpuBuffer, set_aside));
    rc.counters.lost_full = counter(offsetof(CpuBuffer, lost_full));
    rc.counters.lost_paused = counter(offsetof(CpuBuffer, lost_paused));
    rc.counters.lost_too_big = counter(offsetof(CpuBuffer, lost_too_big));
    rc.counters.lost_busy = counter(offsetof(CpuBuffer, lost_busy));
    rc.counters.reclaimed = counter(offsetof(CpuBuffer, reclaimed));
    rc.counters.discarded = counter(offsetof(CpuBuffer, padded)) + rc.counters.reclaimed;
    rc.counters.read = counter(offsetof(CpuBuffer, read));
    rc.counters.subbuf_switches = counter(offsetof(CpuBuffer, switches));
    tail_off = bd::tail_off(pos) & ~bd::kPausedBit;
    const uint64_t tail_idx = bd::tail_idx(pos);
    if (tail_idx >= P || tail_off > S)
      throw RecoverError(tail_part, cb_off,
                         fmt::format("tail at sub-buffer {} offset {} is outside {} x {} bytes",
                                     tail_idx, tail_off, P, S));
    tail_seq =
        bd::tail_lap(pos) * P + tail_idx;  // sequence numbers: lap * P + idx, modulo 2^20 * P
  }

  // The LIVE positions, oldest first.
  std::vector<Subbuf> live_subbufs() {
    const uint64_t wrap = (bd::kLapMask + 1) * P;
    std::vector<Subbuf> live;
    for (uint64_t idx = 0; idx < P; ++idx) {
      const uint64_t w = v.u64(pw_base + idx * 8, "position word");
      const auto phase = static_cast<uint32_t>(bd::pw_phase(w));
      if (phase > static_cast<uint32_t>(bd::Phase::preparing)) {
        damage(out, o, fmt::format("cpu {} position word {}", c, idx), pw_base + idx * 8,
               fmt::format("unknown phase {}", phase));
        ++rc.damaged;
        continue;
      }
      if (bd::pw_phase(w) != bd::Phase::live)
        continue;  // FREE: empty; PREPARING: counted as overrun
      const uint64_t seq = bd::pw_lap(w) * P + idx;
      const uint64_t age = (tail_seq + wrap - seq) % wrap;
      if (age >= P) {
        // The one a switching writer claimed just before it died (or before
        // its tail CAS): empty; anything else is inconsistent, unless the
        // writers run (live) and the tail moved on since it was read.
        if (v.live()) {
          if (age != wrap - 1) ++rc.raced;
          continue;
        }
        if (age != wrap - 1)
          damage(out, o, fmt::format("cpu {} position word {}", c, idx), pw_base + idx * 8,
                 fmt::format("LIVE sub-buffer of lap {} is {} sub-buffers from the tail",
                             bd::pw_lap(w), age));
        continue;
      }
      live.push_back({age, idx, w});
    }
    std::sort(live.begin(), live.end(),
              [](const Subbuf& a, const Subbuf& b) { return a.age > b.age; });
    return live;
  }

  // An uncommitted reservation at `off` (kind none): steps over it, or says
  // where the walk stops. Returns the next offset, or nullopt to stop.
  std::optional<uint64_t> step_over_uncommitted(const Subbuf& sb, uint64_t page, uint64_t off,
                                                uint64_t limit, size_t first_record) {
    // Not committed: a reservation whose writer died (or, live, is still
    // writing) between (C) and (E). Its stride, stored at (D), steps over it.
    const uint32_t stride = off + 8 <= S ? v.u32(page + off + 4, "record") : 0;
    if (stride >= bd::kHeaderSize && stride % bd::kRecordAlign == 0 && stride <= limit - off) {
      ++rc.uncommitted;
      return off + stride;
    }
    // No stride: the end of what was reserved (a switch whose END word was
    // never written), or a writer stopped between (C) and (D) (dead, or
    // preempted for a lap while the others went around). Its record was
    // never written, so it is zero; the next non-zero word is the next
    // header if the walk from there is consistent to the end.
    const uint64_t end = sb.age == 0 ? tail_off : S;
    uint64_t q = off + 8;
    while (q + 8 <= end && v.u64(page + q, "record") == 0) q += 8;
    if (q + 8 <= end &&
        chain_ok(v, page, q, end, S, rc.records.size() > first_record ? rc.records.back().ts : 0)) {
      ++rc.uncommitted;
      return q;
    }
    if (q >= end && sb.age == 0 && off < tail_off)
      ++rc.uncommitted;  // reserved to the tail, never stamped
    const std::byte* p = v.at(page + off);
    const uint64_t scan_from = sb.age == 0 ? tail_off : off;
    if (q < end ? true : std::any_of(v.at(page + scan_from), p + (S - off), [](std::byte b) {
          return b != std::byte{0};
        }))
      ++rc.cut_short;
    return std::nullopt;
  }

  // Copies the committed records of one sub-buffer (buffers/cpu_buffer.h:
  // walk_subbuf). Returns where it found the sub-buffer inconsistent, if it did.
  std::optional<std::pair<uint64_t, std::string>> walk(const Subbuf& sb, uint64_t page,
                                                       uint64_t read_off, size_t first_record) {
    const uint64_t limit = sb.age == 0 ? tail_off : S;
    uint64_t off = read_off;
    while (off < limit && off + 4 <= S) {
      const uint32_t word = v.u32(page + off, "record");
      const uint32_t kind = bd::word_kind(word);
      if (kind == bd::kKindEnd) break;
      if (kind == bd::kKindNone) {
        const std::optional<uint64_t> next =
            step_over_uncommitted(sb, page, off, limit, first_record);
        if (!next) break;
        off = *next;
        continue;
      }
      const uint64_t len = bd::word_len(word);
      const uint64_t stride = bd::stride_for(len);
      if (stride > S - off)
        return std::pair{
            page + off, fmt::format("record of {} bytes runs past the {}-byte sub-buffer", len, S)};
      const uint32_t stash = v.u32(page + off + 4, "record");
      if (stash != stride)
        return std::pair{
            page + off,
            fmt::format("record header stride {} does not match its length {}", stash, len)};
      if (kind == bd::kKindData) {
        const uint64_t ts = v.u64(page + off + 8, "record");
        RecoveredRecord r{ts, rc.data.size(), static_cast<uint32_t>(len)};
        const std::byte* p = v.at(page + off + bd::kHeaderSize);
        rc.data.insert(rc.data.end(), p, p + len);
        rc.records.push_back(r);
      }
      off += stride;
    }
    return std::nullopt;
  }

  // Reads every LIVE sub-buffer, oldest first. Which sub-buffer of memory
  // each position uses: its slot word (a swap may have given it a spare:
  // buffers/ring_buffer.h, "Set aside"; a LIVE position's slot is stable).
  void read_subbufs(const std::vector<Subbuf>& live) {
    for (const Subbuf& sb : live) {
      const uint32_t slot = v.u32(slot_base + sb.idx * 4, "slot word");
      if (slot >= nslots || slot_used[slot]) {
        damage(out, o, fmt::format("cpu {} slot word {}", c, sb.idx), slot_base + sb.idx * 4,
               slot >= nslots ? fmt::format("sub-buffer {} of {}", slot, nslots)
                              : fmt::format("sub-buffer {} used by two positions", slot));
        ++rc.damaged;
        continue;
      }
      slot_used[slot] = true;
      const uint64_t page = page_of(slot);
      if (!v.has(page, S)) {  // only in a truncated file (the header's size was checked)
        cut_by_end = true;
        continue;
      }
      const uint64_t read_off = bd::pw_read_off(sb.word);
      const size_t first_record = rc.records.size();
      const size_t first_byte = rc.data.size();
      if (read_off > S || read_off % bd::kRecordAlign != 0) {
        damage(out, o, fmt::format("cpu {} position word {}", c, sb.idx), pw_base + sb.idx * 8,
               fmt::format("read offset {} in a {}-byte sub-buffer", read_off, S));
        ++rc.damaged;
        continue;
      }
      ++rc.subbufs;
      const auto bad = walk(sb, page, read_off, first_record);
      if (v.live()) {
        // Seqlock check: the copies above came before this load (fence), so
        // if the word is unchanged nobody began to zero the sub-buffer. A
        // walk that found it inconsistent is checked the same way first: a
        // writer that recycled it meanwhile zeroed what the walk read (a
        // header, then its stride), which is a race, not damage.
        std::atomic_thread_fence(std::memory_order_acquire);
        const uint64_t now = v.u64(pw_base + sb.idx * 8, "position word");
        if (bd::pw_phase(now) != bd::Phase::live || bd::pw_lap(now) != bd::pw_lap(sb.word)) {
          ++rc.raced;
          rc.records.resize(first_record);
          rc.data.resize(first_byte);
          continue;
        }
      }
      if (bad) {
        damage(out, o, fmt::format("cpu {} sub-buffer {}", c, sb.idx), bad->first, bad->second);
        ++rc.damaged;
        rc.records.resize(first_record);
        rc.data.resize(first_byte);
      }
    }
  }

  // Set-aside memory (ASIDE spare words): sub-buffers swapped out of the
  // ring with a pending record (buffers/ring_buffer.h, "Set aside"). Their
  // records are never shown (they left the ring's order), but the ring
  // counts the ones committed there as lost_set_aside only when it reclaims
  // the memory (R), which a dead process never did: count them here, from
  // where the reclaim would have resumed, by cause (committed:
  // lost_set_aside; still reserved: uncommitted). A spare word TAKEN at the
  // crash (a swap or a reclaim in progress) tells no offset to count from:
  // nothing counted. Read live, a spare word naming a slot the positions
  // used is a race, not damage: the positions were read first, and a swap
  // since then set that sub-buffer aside.
  void count_set_aside() {
    const uint64_t sw_base = h.ring_offset + h.spares_offset + uint64_t{c} * h.nr_spares * 8;
    for (uint64_t i = 0; i < h.nr_spares; ++i) {
      const uint64_t w = v.u64(sw_base + i * 8, "spare word");
      if (bd::sw_state(w) != bd::SpareState::aside) continue;
      const uint64_t slot = bd::sw_slot(w);
      const uint64_t from = bd::sw_from(w);
      if (v.live() && slot < nslots && slot_used[slot]) {
        ++rc.raced;
        continue;
      }
      if (slot >= nslots || slot_used[slot] || from > S || from % bd::kRecordAlign != 0) {
        damage(out, o, fmt::format("cpu {} spare word {}", c, i), sw_base + i * 8,
               slot >= nslots ? fmt::format("sub-buffer {} of {}", slot, nslots)
               : slot_used[slot]
                   ? fmt::format("set-aside sub-buffer {} is also a LIVE position's", slot)
                   : fmt::format("resume offset {} in a {}-byte sub-buffer", from, S));
        ++rc.damaged;
        continue;
      }
      const uint64_t page = page_of(slot);
      if (!v.has(page, S)) {
        cut_by_end = true;
        continue;
      }
      uint64_t lost = 0, pending = 0;
      for (uint64_t off = from; off + 4 <= S;) {
        const uint32_t word = v.u32(page + off, "record");
        const uint32_t kind = bd::word_kind(word);
        if (kind == bd::kKindEnd) break;
        uint64_t stride;
        if (kind == bd::kKindNone) {
          stride = off + 8 <= S ? v.u32(page + off + 4, "record") : 0;
          if (stride < bd::kHeaderSize || stride % bd::kRecordAlign != 0)
            break;  // end of what was reserved
          ++pending;
        } else {
          stride = bd::stride_for(bd::word_len(word));
          if (kind == bd::kKindData) ++lost;
        }
        if (stride > S - off) break;
        off += stride;
      }
      if (v.live()) {  // the ring may have reclaimed it meanwhile (counted by then, or zeroed)
        std::atomic_thread_fence(std::memory_order_acquire);
        if (v.u64(sw_base + i * 8, "spare word") != w) {
          ++rc.raced;
          continue;
        }
      }
      rc.counters.lost_set_aside += lost;
      rc.uncommitted += pending;
    }
  }
};

void read_cpu(const FileView& v, const flight::FileHeader& h, uint32_t c, RecoveredTrace& out,
              const RecoverOptions& o) {
  CpuWalk w{v, h, c, out, o, {}};
  w.rc.cpu = c;
  w.S = h.subbuf_size;
  w.P = h.nr_subbufs;
  w.nslots = w.P + h.nr_spares;
  w.slot_used.assign(w.nslots, false);
  w.cb_off = h.ring_offset + h.cpu_state_offset + uint64_t{c} * sizeof(CpuBuffer);
  w.pw_base = h.ring_offset + h.positions_offset + uint64_t{c} * w.P * 8;
  w.slot_base = h.ring_offset + h.slots_offset + uint64_t{c} * w.P * 4;
  w.read_state();
  w.read_subbufs(w.live_subbufs());
  w.count_set_aside();
  if (w.cut_by_end)
    out.warnings.push_back(fmt::format(
        "cpu {}: sub-buffers past the end of the truncated file ({} bytes) not read", c, v.size()));
  RecoveredCpu& rc = w.rc;
  for (const RecoveredRecord& r : rc.records) {
    if (rc.counters.entries == 0 || r.ts < rc.counters.oldest_ts) rc.counters.oldest_ts = r.ts;
    if (r.ts > rc.counters.newest_ts) rc.counters.newest_ts = r.ts;
    ++rc.counters.entries;
    rc.counters.bytes += r.size;
  }
  out.cpus.push_back(std::move(rc));
}

}  // namespace

RecoveredTrace recover_bytes(std::span<const std::byte> file, const RecoverOptions& options) {
  const FileView v(file, options.live);
  RecoveredTrace out;
  const flight::FileHeader h = read_header(v, out, options);
  read_meta(v, h, out, options);
  out.cpus.reserve(h.cpus);
  for (uint32_t c = 0; c < h.cpus; ++c) {
    if (h.file_size == v.size()) {
      read_cpu(v, h, c, out, options);
      continue;
    }
    try {  // truncated: a CPU whose state lies past the cut has nothing to read
      read_cpu(v, h, c, out, options);
    } catch (const RecoverError& e) {
      out.warnings.push_back(
          fmt::format("cpu {}: not read, its {} lies past the end of the truncated file "
                      "(offset {}, the file has {} bytes)",
                      c, e.part(), e.offset(), v.size()));
      RecoveredCpu empty;
      empty.cpu = c;
      out.cpus.push_back(std::move(empty));
    }
  }
  return out;
}

RecoveredTrace recover_file(const std::filesystem::path& path, const RecoverOptions& options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "cannot open " + path.string());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = errno;
    ::close(fd);
    throw std::system_error(e != 0 ? e : EINVAL, std::generic_category(),
                            path.string() + " is not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw RecoverError("header", 0, "the file is empty", path.string());
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int e = errno;
  ::close(fd);
  if (m == MAP_FAILED)
    throw std::system_error(e, std::generic_category(), "cannot map " + path.string());
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{m, size};
  // A file truncated after fstat would raise SIGBUS on access; the header's
  // file_size is checked against st_size before anything past the header is
  // read (a shorter file is read only below its size), and flight files are
  // never truncated by their writer.
  try {
    return recover_bytes({static_cast<const std::byte*>(m), size}, options);
  } catch (const RecoverError& e) {
    throw RecoverError(e, path.string());
  }
}

std::vector<std::filesystem::path> find_flight_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == flight::kSuffix) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

TraceDatWriter make_writer(const RecoveredTrace& t) {
  TraceDatWriterConfig cfg;
  cfg.cpus = static_cast<uint32_t>(t.cpus.size());
  cfg.page_size = t.subbuf_size > 4096 ? t.subbuf_size : 4096;
  cfg.clock = t.clock;
  TraceDatWriter w(cfg);
  for (const EventFormat& f : t.formats) {
    try {
      w.add_format(f);
    } catch (const std::invalid_argument&) {
      // a second format with one ID (cannot come from one writer): the first wins
    }
  }
  for (const auto& [pid, comm] : t.cmdlines) w.set_cmdline(pid, comm);
  std::vector<std::string> stats;
  for (const RecoveredCpu& c : t.cpus) {
    if (c.counters.overrun > 0) w.add_lost(c.cpu, c.counters.overrun);
    for (const RecoveredRecord& r : c.records) {
      if (r.size < 2 || r.size > w.max_payload()) continue;
      w.add_record(c.cpu, r.ts, c.payload(r));
    }
    // The writers' counters at the crash, as `trace-cmd report --stat`
    // shows a recording's: a drop-newest ring's drops are marked on no page,
    // so this is the only place the file says what was lost. "now" is the
    // newest recovered stamp: the file holds no later time.
    // (The counters' entries, bytes and stamps are the recovered records'.)
    stats.push_back(
        cpu_stat_text(c.cpu, cpu_stat_lines(c.counters, c.counters.newest_ts), t.clock_in_ns));
  }
  w.set_cpu_stats(std::move(stats));
  return w;
}

}  // namespace

void write_trace_dat(const RecoveredTrace& trace, const std::filesystem::path& path) {
  make_writer(trace).write(path);
}

std::vector<std::byte> trace_dat_bytes(const RecoveredTrace& trace) {
  return make_writer(trace).to_bytes();
}

}  // namespace tracepipe::recover
