#include "tracepipe/core/convert/ctf_writer.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "tracepipe/core/convert/event_layout.h"
#include "tracepipe/core/convert/out_file.h"
#include "tracepipe/core/convert/trace_env.h"

namespace tracepipe::convert {
namespace {

constexpr uint32_t kMagic = 0xC1FC1FC1;  // CTF 1.8 packet magic
// Packet header and context offsets (see the TSDL in metadata_text()).
constexpr size_t kOffUuid = 4, kOffStreamId = 20;
constexpr size_t kOffTsBegin = 24, kOffTsEnd = 32, kOffContentSize = 40, kOffPacketSize = 48,
                 kOffSeqNum = 56, kOffDiscarded = 64, kOffCpuId = 72;
constexpr size_t kEventsStart = 80;  // after the context, 8-aligned
constexpr size_t kPacketBytes = 1 << 20;
constexpr const char* kMetadataTmp = ".metadata.tmp";

constexpr std::array<std::string_view, 29> kKeywords = {
    "align",  "callsite", "const",     "char",           "clock",    "double",
    "enum",   "env",      "event",     "floating_point", "float",    "integer",
    "int",    "long",     "short",     "signed",         "stream",   "string",
    "struct", "trace",    "typealias", "typedef",        "unsigned", "variant",
    "void",   "_Bool",    "_Complex",  "_Imaginary",     "map"};

size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

std::string tsdl_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string int_type(uint32_t size, uint32_t align, bool is_signed, bool hex, bool text = false) {
  return fmt::format("integer {{ size = {}; align = {}; signed = {}; encoding = {}; base = {}; }}",
                     size * 8, align * 8, is_signed ? "true" : "false", text ? "UTF8" : "none",
                     hex ? 16 : 10);
}

struct CtfPlan {
  uint32_t ctf_id = 0;
  std::string name;  // SYSTEM:EVENT
  EventLayout layout;
  uint32_t prefix_fields = 0;  // fields [0, prefix_fields) are one block copied as it is
  uint32_t prefix_end = 0;     // bytes of that block
  std::string fields_tsdl;     // the members of the event's `fields` struct
  bool unknown = false;        // no format: raw bytes
};

// Natural alignment for the field when its kernel offset allows it, else 1.
uint32_t natural_align(const FieldLayout& f) {
  uint32_t a = 1;
  if (f.kind == FieldKind::integer)
    a = f.size;
  else if (f.kind == FieldKind::fixed_array)
    a = f.elem_size;
  return (f.offset % a == 0) ? a : 1;
}

CtfPlan make_plan(const EventFormat& fmt_, uint32_t ctf_id, uint32_t long_size) {
  CtfPlan p;
  p.ctf_id = ctf_id;
  p.name = fmt_.system + ":" + fmt_.name;
  p.layout = EventLayout::build(fmt_, long_size);
  const auto& fs = p.layout.fields;
  std::string& t = p.fields_tsdl;
  // The prefix: fixed fields whose CTF position (natural alignment from an
  // 8-aligned start, explicit padding for gaps) equals their kernel offset.
  size_t pos = 0;
  size_t i = 0;
  for (; i < fs.size(); ++i) {
    const FieldLayout& f = fs[i];
    if (f.dynamic || f.kind == FieldKind::tail_string || f.kind == FieldKind::tail_array) break;
    const uint32_t a = natural_align(f);
    if (f.offset < pos) break;  // overlapping or out of order: written one by one
    if (align_up(pos, a) != f.offset) {
      // A gap the alignment does not explain: explicit padding bytes.
      t += fmt::format("\t\t{} _tp_pad_{}[{}];\n", int_type(1, 1, false, true), f.offset,
                       f.offset - pos);
      pos = f.offset;
    }
    const std::string n = CtfWriter::tsdl_name(f.name);
    switch (f.kind) {
      case FieldKind::integer:
        t += fmt::format("\t\t{} {};\n", int_type(f.size, a, f.is_signed, f.hex), n);
        break;
      case FieldKind::fixed_string:
        t += fmt::format("\t\t{} {}[{}];\n", int_type(1, 1, false, false, true), n, f.size);
        break;
      case FieldKind::fixed_array:
        t += fmt::format("\t\t{} {}[{}];\n", int_type(f.elem_size, a, f.is_signed, f.hex), n,
                         f.size / f.elem_size);
        break;
      default:  // bytes
        t += fmt::format("\t\t{} {}[{}];\n", int_type(1, 1, false, true), n, f.size);
        break;
    }
    pos = f.offset + f.size;
  }
  p.prefix_fields = static_cast<uint32_t>(i);
  p.prefix_end = static_cast<uint32_t>(pos);
  // The rest, written one field at a time with natural alignment.
  for (; i < fs.size(); ++i) {
    const FieldLayout& f = fs[i];
    const std::string n = CtfWriter::tsdl_name(f.name);
    switch (f.kind) {
      case FieldKind::integer:
        t += fmt::format("\t\t{} {};\n", int_type(f.size, f.size, f.is_signed, f.hex), n);
        break;
      case FieldKind::fixed_string:
        t += fmt::format("\t\t{} {}[{}];\n", int_type(1, 1, false, false, true), n, f.size);
        break;
      case FieldKind::fixed_array:
        t += fmt::format("\t\t{} {}[{}];\n", int_type(f.elem_size, f.elem_size, f.is_signed, f.hex),
                         n, f.size / f.elem_size);
        break;
      case FieldKind::dynamic_string:
      case FieldKind::tail_string:
        t += fmt::format("\t\tstring {};\n", n);
        break;
      case FieldKind::dynamic_array:
      case FieldKind::tail_array: {
        const std::string len = CtfWriter::tsdl_name("_" + f.name + "_length");
        t += fmt::format("\t\t{} {};\n", int_type(4, 4, false, false), len);
        t += fmt::format("\t\t{} {}[{}];\n", int_type(f.elem_size, f.elem_size, f.is_signed, f.hex),
                         n, len);
        break;
      }
      case FieldKind::bytes:
        if (f.dynamic) {
          const std::string len = CtfWriter::tsdl_name("_" + f.name + "_length");
          t += fmt::format("\t\t{} {};\n", int_type(4, 4, false, false), len);
          t += fmt::format("\t\t{} {}[{}];\n", int_type(1, 1, false, true), n, len);
        } else {
          t += fmt::format("\t\t{} {}[{}];\n", int_type(1, 1, false, true), n, f.size);
        }
        break;
    }
  }
  return p;
}

struct CpuStream {
  uint32_t cpu = 0;
  std::vector<uint8_t> buf;
  size_t pos = 0;  // bytes used in buf (0: no packet open)
  uint64_t ts_begin = 0, ts_end = 0;
  uint64_t discarded = 0;  // running count of discarded events
  uint64_t seq = 0;        // packets written
  uint64_t records = 0;
  OutFile file;
  bool opened = false;
  // Streaming: the stream as at the end of the last chunk written whole,
  // which a failed write goes back to (a chunk is in the stream whole or
  // not at all).
  uint64_t chunk_bytes = 0, chunk_seq = 0, chunk_discarded = 0;
};

}  // namespace

std::string CtfWriter::tsdl_name(std::string_view name) {
  bool keyword = false;
  for (const auto k : kKeywords) keyword |= (k == name);
  std::string out;
  if (keyword || name.empty() || name[0] == '_') out += '_';
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  if (out[0] >= '0' && out[0] <= '9') out.insert(out.begin(), '_');
  return out;
}

struct CtfWriter::Impl {
  std::filesystem::path dir;
  const TraceDatReader* reader = nullptr;
  size_t buffer = 0;
  uint32_t long_size = 8;
  std::array<uint8_t, 16> uuid{};
  std::vector<CtfPlan*> plans;  // by event ID
  std::vector<uint8_t> built;
  std::deque<CtfPlan> store;                       // in ctf id order
  std::unordered_map<uint16_t, CtfPlan*> unknown;  // by event ID without a format
  std::vector<CpuStream> cpus;
  std::unordered_map<uint32_t, size_t> cpu_index;
  uint64_t short_records = 0, unknown_events = 0, bytes_out = 0;
  bool finished = false;
  bool streaming = false;       // WriterOptions::stream
  size_t metadata_classes = 0;  // event classes in the metadata on disk
  uint64_t metadata_bytes = 0;

  // The metadata, written beside and renamed over the old one: a reader
  // never sees it half written. The temporary is a hidden file, which CTF
  // readers do not take for a data stream (babeltrace2 skips names starting
  // with '.'); one that cannot be written whole is removed.
  void write_metadata() {
    const std::string meta = metadata_text();
    const std::filesystem::path tmp = dir / kMetadataTmp;
    std::error_code ec;
    try {
      OutFile f(tmp);
      f.write(meta.data(), meta.size());
      f.close();
    } catch (...) {
      std::filesystem::remove(tmp, ec);
      throw;
    }
    std::filesystem::rename(tmp, dir / "metadata", ec);
    if (ec) {
      const std::error_code failed = ec;
      std::filesystem::remove(tmp, ec);
      throw ConvertOutputError((dir / "metadata").string() + ": rename failed: " + failed.message(),
                               failed.value());
    }
    metadata_classes = store.size();
    metadata_bytes = meta.size();
  }

  void set_reader(const TraceDatReader& r) {
    reader = &r;
    long_size = r.header_page().commit.size ? r.header_page().commit.size : 8;
  }

  std::vector<int32_t> cpu_slot;  // by CPU number (< 4096): index in cpus, -1 none

  CpuStream& stream(uint32_t cpu) {
    if (cpu < cpu_slot.size() && cpu_slot[cpu] >= 0) [[likely]]
      return cpus[static_cast<size_t>(cpu_slot[cpu])];
    const auto it = cpu_index.find(cpu);
    if (it != cpu_index.end()) return cpus[it->second];
    if (cpu < 4096) {
      if (cpu_slot.size() <= cpu) cpu_slot.resize(cpu + 1u, -1);
      cpu_slot[cpu] = static_cast<int32_t>(cpus.size());
    }
    cpu_index.emplace(cpu, cpus.size());
    CpuStream& s = cpus.emplace_back();
    s.cpu = cpu;
    return s;
  }

  CtfPlan* plan_for(std::span<const std::byte> payload) {
    uint16_t id = 0;
    if (payload.size() >= 2) std::memcpy(&id, payload.data(), 2);
    if (id < plans.size() && plans[id]) [[likely]]
      return plans[id];
    if (id >= built.size()) {
      built.resize(id + 1u, 0);
      plans.resize(id + 1u, nullptr);
    }
    if (!built[id]) {
      built[id] = 1;
      if (const EventFormat* f = reader->format(id)) {
        store.push_back(make_plan(*f, static_cast<uint32_t>(store.size()), long_size));
        plans[id] = &store.back();
        return plans[id];
      }
    }
    auto& u = unknown[id];
    if (!u) {
      CtfPlan p;
      p.ctf_id = static_cast<uint32_t>(store.size());
      p.name = fmt::format("ftrace:unknown_{}", id);
      p.unknown = true;
      p.fields_tsdl = fmt::format("\t\t{} raw_length;\n\t\t{} raw[raw_length];\n",
                                  int_type(4, 4, false, false), int_type(1, 1, false, true));
      store.push_back(std::move(p));
      u = &store.back();
    }
    return u;
  }

  uint8_t* room(CpuStream& s, size_t n) {
    if (s.buf.size() < s.pos + n) s.buf.resize(std::max(s.buf.size() * 2, s.pos + n));
    return s.buf.data() + s.pos;
  }
  void pad_to(CpuStream& s, size_t a) {
    const size_t p = align_up(s.pos, a);
    if (p != s.pos) {
      std::memset(room(s, p - s.pos), 0, p - s.pos);
      s.pos = p;
    }
  }
  void put(CpuStream& s, const void* p, size_t n) {
    if (n == 0) return;  // p may be null (an empty span)
    std::memcpy(room(s, n), p, n);
    s.pos += n;
  }
  template <typename T>
  void put_num(CpuStream& s, T v) {
    put(s, &v, sizeof v);
  }
  template <typename T>
  void patch(CpuStream& s, size_t at, T v) {
    std::memcpy(s.buf.data() + at, &v, sizeof v);
  }

  void open_packet(CpuStream& s, uint64_t ts) {
    if (s.buf.size() < kPacketBytes) s.buf.resize(kPacketBytes);
    std::memset(s.buf.data(), 0, kEventsStart);
    patch(s, 0, kMagic);
    std::memcpy(s.buf.data() + kOffUuid, uuid.data(), uuid.size());
    patch(s, kOffStreamId, uint32_t{0});
    patch(s, kOffCpuId, s.cpu);
    patch(s, kOffDiscarded, s.discarded);
    s.pos = kEventsStart;
    s.ts_begin = s.ts_end = ts;
  }

  void close_packet(CpuStream& s) {
    if (s.pos == 0) return;
    patch(s, kOffTsBegin, s.ts_begin);
    patch(s, kOffTsEnd, s.ts_end);
    // An empty packet's content ends with its context: a reader would
    // take the padding up to kEventsStart for the start of an event.
    const size_t content = s.pos == kEventsStart ? kOffCpuId + 4 : s.pos;
    patch(s, kOffContentSize, static_cast<uint64_t>(content) * 8);
    patch(s, kOffPacketSize, static_cast<uint64_t>(s.pos) * 8);
    patch(s, kOffSeqNum, s.seq);
    const size_t n = s.pos;
    s.pos = 0;  // written or given up: a packet that fails is not written again
    // Streaming: the metadata names the packet's event classes before the
    // packet is in the stream, so the directory stays readable whichever
    // of the two writes fails.
    try {
      if (streaming && store.size() != metadata_classes) write_metadata();
      if (!s.opened) {
        s.file = OutFile(dir / fmt::format("channel0_{}", s.cpu));
        s.opened = true;
      }
      s.file.write(s.buf.data(), n);  // on failure the stream ends with its last whole packet
    } catch (...) {
      if (streaming) {  // the chunk's packets written before this one go too
        if (s.opened) (void)s.file.truncate(s.chunk_bytes);
        s.seq = s.chunk_seq;
        s.discarded = s.chunk_discarded;
      }
      throw;
    }
    ++s.seq;
  }

  // Streaming: the CPU's chunk is in the stream; a later failure goes back to here.
  void end_chunk(CpuStream& s) {
    close_packet(s);
    s.chunk_bytes = s.opened ? s.file.size() : 0;
    s.chunk_seq = s.seq;
    s.chunk_discarded = s.discarded;
  }

  void write_event(CpuStream& s, const CtfPlan& p, const TraceRecord& rec) {
    const auto payload = rec.payload;
    const size_t bound = 32 + p.prefix_end + payload.size() + 16 * p.layout.fields.size();
    if (s.pos != 0 && s.pos + bound > kPacketBytes) close_packet(s);
    if (s.pos == 0) open_packet(s, rec.ts);
    pad_to(s, 8);
    uint8_t* h = room(s, 16 + p.prefix_end);
    std::memcpy(h, &p.ctf_id, 4);
    std::memset(h + 4, 0, 4);
    std::memcpy(h + 8, &rec.ts, 8);
    s.pos += 16;
    s.ts_end = rec.ts;
    if (p.unknown) {
      ++unknown_events;
      put_num(s, static_cast<uint32_t>(payload.size()));
      put(s, payload.data(), payload.size());
      return;
    }
    // The fixed prefix as it is in the record.
    const size_t have = std::min<size_t>(p.prefix_end, payload.size());
    std::memcpy(h + 16, payload.data(), have);
    if (have < p.prefix_end) {
      std::memset(h + 16 + have, 0, p.prefix_end - have);
      ++short_records;
    }
    s.pos += p.prefix_end;
    const auto& fs = p.layout.fields;
    for (size_t i = p.prefix_fields; i < fs.size(); ++i) write_field(s, fs[i], payload);
  }

  void write_field(CpuStream& s, const FieldLayout& f, std::span<const std::byte> payload) {
    const FieldView v = field_bytes(f, payload);
    if (!v.present) ++short_records;
    switch (f.kind) {
      case FieldKind::integer:
      case FieldKind::fixed_string:
      case FieldKind::fixed_array: {
        pad_to(s, f.kind == FieldKind::integer       ? f.size
                  : f.kind == FieldKind::fixed_array ? f.elem_size
                                                     : 1);
        uint8_t* d = room(s, f.size);
        if (v.present)
          std::memcpy(d, v.data.data(), f.size);
        else
          std::memset(d, 0, f.size);
        s.pos += f.size;
        return;
      }
      case FieldKind::dynamic_string:
      case FieldKind::tail_string: {
        const std::string_view text = v.present ? as_text(v) : std::string_view();
        put(s, text.data(), text.size());
        put_num(s, uint8_t{0});
        return;
      }
      case FieldKind::dynamic_array:
      case FieldKind::tail_array: {
        const uint32_t n = v.present ? static_cast<uint32_t>(v.data.size() / f.elem_size) : 0;
        pad_to(s, 4);
        put_num(s, n);
        pad_to(s, f.elem_size);
        put(s, v.data.data(), static_cast<size_t>(n) * f.elem_size);
        return;
      }
      case FieldKind::bytes:
        if (f.dynamic) {
          const uint32_t n = v.present ? static_cast<uint32_t>(v.data.size()) : 0;
          pad_to(s, 4);
          put_num(s, n);
          put(s, v.data.data(), n);
        } else {
          uint8_t* d = room(s, f.size);
          if (v.present)
            std::memcpy(d, v.data.data(), f.size);
          else
            std::memset(d, 0, f.size);
          s.pos += f.size;
        }
        return;
    }
  }

  std::string metadata_text() const {
    const TraceEnv env = TraceEnv::of(*reader, buffer);
    std::string clock = CtfWriter::tsdl_name(env.clock);
    if (!clock.empty() && clock[0] == '_') clock = "clock" + clock;
    std::string uu;
    for (size_t i = 0; i < uuid.size(); ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) uu += '-';
      uu += fmt::format("{:02x}", uuid[i]);
    }
    std::string m = "/* CTF 1.8 */\n\n";
    m += "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n";
    m += "typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n";
    m += "typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n\n";
    m += fmt::format(
        "trace {{\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"{}\";\n\tbyte_order = le;\n"
        "\tpacket.header := struct {{\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t "
        "stream_id;\n\t}};\n}};\n\n",
        uu);
    m += "env {\n\tdomain = \"kernel\";\n\ttracer_name = \"perf\";\n";
    m += fmt::format("\tsysname = {};\n", tsdl_quoted(env.sysname.empty() ? "Linux" : env.sysname));
    if (!env.hostname.empty()) {
      m += fmt::format("\thostname = {};\n\thost = {};\n", tsdl_quoted(env.hostname),
                       tsdl_quoted(env.hostname));
    }
    if (!env.release.empty()) m += fmt::format("\trelease = {};\n", tsdl_quoted(env.release));
    if (!env.version.empty()) m += fmt::format("\tversion = {};\n", tsdl_quoted(env.version));
    if (!env.machine.empty()) m += fmt::format("\tmachine = {};\n", tsdl_quoted(env.machine));
    m += fmt::format(
        "\ttrace_clock = {};\n\ttrace_buffer = {};\n\ttracer_converter = \"tracepipe "
        "convert\";\n}};\n\n",
        tsdl_quoted(env.clock),
        tsdl_quoted(reader->buffers().empty() ? "" : reader->buffers()[buffer].name));
    m += fmt::format(
        "clock {{\n\tname = {};\n\tdescription = {};\n\tfreq = 1000000000;\n\tprecision = 1;\n"
        "\toffset_s = 0;\n\toffset = 0;\n\tabsolute = FALSE;\n}};\n\n",
        clock,
        tsdl_quoted(env.ns_clock ? "ftrace trace clock " + env.clock
                                 : "ftrace trace clock " + env.clock + " (counts, shown as ns)"));
    m += fmt::format(
        "typealias integer {{ size = 64; align = 64; signed = false; map = clock.{}.value; }} := "
        "uint64_clock_t;\n\n",
        clock);
    m +=
        "stream {\n\tid = 0;\n\tpacket.context := struct {\n"
        "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
        "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
        "\t\tuint64_t events_discarded;\n\t\tuint32_t cpu_id;\n\t};\n"
        "\tevent.header := struct {\n\t\tuint32_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n};\n\n";
    for (const CtfPlan& p : store) {
      m += fmt::format(
          "event {{\n\tname = {};\n\tid = {};\n\tstream_id = 0;\n\tfields := struct "
          "{{\n{}\t}};\n}};\n\n",
          tsdl_quoted(p.name), p.ctf_id, p.fields_tsdl);
    }
    return m;
  }
};

CtfWriter::CtfWriter(const std::filesystem::path& dir, WriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->dir = dir;
  impl_->streaming = options.stream;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConvertOutputError(dir.string() + ": cannot create the directory: " + ec.message());
  if (!std::filesystem::is_directory(dir, ec))
    throw ConvertOutputError(dir.string() + ": not a directory (CTF output is a directory)");
  // A previous conversion's streams would be read with this metadata: remove them.
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n == "metadata" || n == "metadata.tmp" || n == kMetadataTmp || n.rfind("channel0_", 0) == 0)
      std::filesystem::remove(e.path(), ec);
  }
  std::random_device rd;
  for (size_t i = 0; i < impl_->uuid.size(); i += 4) {
    const uint32_t r = rd();
    std::memcpy(impl_->uuid.data() + i, &r, 4);
  }
  impl_->uuid[6] = static_cast<uint8_t>((impl_->uuid[6] & 0x0f) | 0x40);  // RFC 4122 version 4
  impl_->uuid[8] = static_cast<uint8_t>((impl_->uuid[8] & 0x3f) | 0x80);
}

CtfWriter::~CtfWriter() = default;

void CtfWriter::begin(const TraceDatReader& reader, size_t buffer, uint64_t,
                      const std::vector<uint32_t>& cpus) {
  Impl& m = *impl_;
  m.set_reader(reader);
  m.buffer = buffer;
  for (uint32_t c : cpus) m.stream(c);
  if (m.streaming) m.write_metadata();  // a readable (empty) trace from the start
}

void CtfWriter::reload(const TraceDatReader& reader) {
  Impl& m = *impl_;
  m.set_reader(reader);
  for (size_t id = 0; id < m.built.size(); ++id)
    if (m.plans[id] == nullptr) m.built[id] = 0;  // no format until now: look again
}

void CtfWriter::record(const TraceRecord& rec) {
  Impl& m = *impl_;
  CpuStream& s = m.stream(rec.cpu);
  if (rec.lost_before != 0) [[unlikely]] {
    // A loss before the stream's first record: an empty packet first, so
    // that readers see the count grow between two packets (they cannot
    // tell what a first packet's count says).
    if (s.seq == 0 && s.pos == 0) m.open_packet(s, rec.ts);
    m.close_packet(s);
    s.discarded += rec.lost_before > 0 ? static_cast<uint64_t>(rec.lost_before) : 1;
  }
  m.write_event(s, *m.plan_for(rec.payload), rec);
  ++s.records;
}

void CtfWriter::end_chunk(uint32_t cpu) {
  Impl& m = *impl_;
  if (!m.streaming) return;
  m.end_chunk(m.stream(cpu));
  if (m.store.size() != m.metadata_classes) m.write_metadata();
}

void CtfWriter::finish(ConvertStats& stats) {
  Impl& m = *impl_;
  if (m.finished) return;
  m.finished = true;
  uint64_t bytes = 0;
  for (CpuStream& s : m.cpus) {
    m.close_packet(s);
    if (s.opened) {
      s.file.close();
      bytes += s.file.size();
    }
  }
  m.write_metadata();
  stats.bytes_out = bytes + m.metadata_bytes;
  stats.unknown_events = m.unknown_events;
  stats.short_records = m.short_records;
}

}  // namespace tracepipe::convert
