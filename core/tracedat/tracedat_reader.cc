#include "tracepipe/core/tracedat/tracedat_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <unordered_set>

#include "tracepipe/core/tracedat/tracedat_cursor.h"
#include "tracepipe/core/tracedat/tracedat_decompress.h"

namespace tracepipe {

TraceDatError::TraceDatError(std::string section, uint64_t offset, std::string reason,
                             std::string file)
    : std::runtime_error(
          fmt::format("{}: {} at offset {} (0x{:x}): {}", file, section, offset, offset, reason)),
      section_(std::move(section)),
      offset_(offset),
      reason_(std::move(reason)),
      file_(std::move(file)) {}

std::string TraceDatError::detail() const {
  return fmt::format("{} at offset {} (0x{:x}): {}", section_, offset_, offset_, reason_);
}

std::optional<uint16_t> TraceRecord::event_id() const noexcept {
  if (payload.size() < 2) return std::nullopt;
  uint16_t id;
  std::memcpy(&id, payload.data(), 2);
  return id;
}

using detail::ByteCursor;

// Parses the headers of a file into a TraceDatReader. Mirrors trace-cmd
// lib/trace-cmd/trace-input.c: read_headers_v6 / read_headers_v7,
// init_data_v6, handle_options.
class TraceDatParser {
 public:
  explicit TraceDatParser(TraceDatReader& r) : r_(r), file_(r.file_.bytes()) {}

  void parse() {
    ByteCursor c(file_, 0, "file header");
    c.expect(std::string_view("\x17\x08\x44tracing", 10),
             "the trace.dat magic (\\x17\\x08\\x44tracing)");
    const uint64_t vpos = c.pos();
    const std::string_view vs = c.cstr();
    uint32_t version = 0;
    const auto [p, ec] = std::from_chars(vs.data(), vs.data() + vs.size(), version);
    if (ec != std::errc{} || p != vs.data() + vs.size())
      c.fail(vpos, "version is not a decimal number");
    if (version < 6 || version > 7)
      c.fail(vpos, fmt::format("version {} is not supported (only 6 and 7)", version));
    r_.version_ = version;
    const uint64_t epos = c.pos();
    const uint8_t endian = c.u8();
    if (endian == 1) c.fail(epos, "big-endian files are not supported");
    if (endian != 0) c.fail(epos, fmt::format("invalid endianness flag {}", endian));
    const uint64_t lpos = c.pos();
    r_.user_long_size_ = c.u8();
    if (r_.user_long_size_ != 4 && r_.user_long_size_ != 8)
      c.fail(lpos, fmt::format("long size {} is neither 4 nor 8", r_.user_long_size_));
    const uint64_t ppos = c.pos();
    r_.page_size_ = c.u32();
    if (r_.page_size_ < 64 || r_.page_size_ > (1u << 27) ||
        (r_.page_size_ & (r_.page_size_ - 1)) != 0)
      c.fail(ppos, fmt::format("page size {} is not a power of two in [64, 2^27]", r_.page_size_));
    if (version == 6)
      parse_v6(c);
    else
      parse_v7(c);
    r_.index_formats();
  }

 private:
  // ---------------------------------------------------------------- shared sections

  void read_header_info(ByteCursor& c) {
    c.set_section("header_page");
    c.expect(std::string_view("header_page\0", 12), "\"header_page\"");
    const uint64_t hp_at = c.pos() + 8;
    r_.header_page_text_ = c.text(c.u64());
    parse_header_page(hp_at);
    c.set_section("header_event");
    c.expect(std::string_view("header_event\0", 13), "\"header_event\"");
    r_.header_event_text_ = c.text(c.u64());
  }

  void parse_header_page(uint64_t at) {
    ByteCursor err(file_, at, "header_page");
    std::string_view text = r_.header_page_text_;
    HeaderPageInfo info;
    bool ts = false, commit = false, data = false;
    uint32_t line_no = 0;
    while (!text.empty()) {
      const auto nl = text.find('\n');
      const std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      FormatField f;
      try {
        f = parse_format_field(line, line_no);
      } catch (const FormatError& e) {
        err.fail(at, e.what());
      }
      if (f.name == "timestamp")
        info.timestamp = f, ts = true;
      else if (f.name == "commit")
        info.commit = f, commit = true;
      else if (f.name == "overwrite")
        info.overwrite = f;
      else if (f.name == "data")
        info.data = f, data = true;
    }
    if (!ts || !commit || !data)
      err.fail(at, "header_page lacks the timestamp, commit or data field");
    if (info.timestamp.offset != 0 || info.timestamp.size != 8)
      err.fail(at, "header_page timestamp must be a u64 at offset 0");
    if (info.commit.offset != 8 || (info.commit.size != 4 && info.commit.size != 8))
      err.fail(at, "header_page commit must be a 4- or 8-byte long at offset 8");
    if (info.data.offset != 8 + info.commit.size)
      err.fail(at,
               fmt::format("header_page data offset {} does not follow commit", info.data.offset));
    info.layout = kpage::PageLayout{r_.page_size_, info.commit.size};
    if (info.layout.header_size() >= r_.page_size_)
      err.fail(at, "page header is larger than the page");
    r_.header_page_ = info;
  }

  void read_format_list(ByteCursor& c, std::string_view system, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t size = c.u64();
      const uint64_t at = c.pos();
      const std::string_view text = c.text(size);
      try {
        r_.formats_.push_back(parse_event_format(text, system));
      } catch (const FormatError& e) {
        // One bad format must not cost the whole file (libtraceevent warns
        // and goes on): its records then print as an unknown type.
        r_.warnings_.push_back(fmt::format("{} at offset {} (0x{:x}): {}; format skipped",
                                           c.section(), at, at, e.what()));
      }
    }
  }

  void read_ftrace_formats(ByteCursor& c) {
    c.set_section("ftrace formats");
    read_format_list(c, "ftrace", c.u32());
  }

  void read_event_formats(ByteCursor& c) {
    c.set_section("event formats");
    const uint32_t systems = c.u32();
    for (uint32_t s = 0; s < systems; ++s) {
      const std::string system(c.cstr());
      read_format_list(c, system, c.u32());
    }
  }

  void read_kallsyms(ByteCursor& c) {
    c.set_section("kallsyms");
    r_.kallsyms_ = c.text(c.u32());
  }

  void read_printk(ByteCursor& c) {
    c.set_section("printk");
    r_.printk_ = c.text(c.u32());
  }

  void read_cmdlines(ByteCursor& c) {
    c.set_section("cmdlines");
    const uint64_t at = c.pos() + 8;
    r_.cmdlines_text_ = c.text(c.u64());
    std::string_view text = r_.cmdlines_text_;
    while (!text.empty()) {
      const auto nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
      if (line.empty()) continue;
      const auto sp = line.find(' ');
      int32_t pid = 0;
      const auto [p, ec] =
          std::from_chars(line.data(), line.data() + std::min(sp, line.size()), pid);
      if (ec != std::errc{} || sp == std::string_view::npos || p != line.data() + sp)
        c.fail(at + static_cast<uint64_t>(line.data() - r_.cmdlines_text_.data()),
               "cmdline is not '<pid> <comm>'");
      r_.cmdlines_.insert_or_assign(pid, std::string(line.substr(sp + 1)));
    }
  }

  // Options as a sequence of (u16 id, u32 size, data) ending with id 0.
  // v6: the DONE marker has no size. v7: DONE has size 8 and holds the
  // offset of the next OPTIONS section (returned).
  uint64_t read_options(ByteCursor& c, bool v7) {
    c.set_section("options");
    for (;;) {
      const uint64_t at = c.pos();
      const uint16_t id = c.u16();
      if (id == 0 && !v7) return 0;
      const uint32_t size = c.u32();
      const uint64_t data_at = c.pos();
      const auto data = c.bytes(size);
      if (id == 0) {
        if (size != 8) c.fail(at, "DONE option must hold an 8-byte offset");
        uint64_t next;
        std::memcpy(&next, data.data(), 8);
        return next;
      }
      r_.options_.push_back({id, data_at, data});
      apply_option(r_.options_.back());
    }
  }

  void apply_option(const TraceDatOption& o) {
    ByteCursor c =
        ByteCursor::over(o.data, o.file_offset, fmt::format("option {}", o.id), options_note_);
    switch (static_cast<TraceDatOptionId>(o.id)) {
      case TraceDatOptionId::offset: {
        // ASCII number (strtoll base 0 in trace-cmd).
        std::string s(reinterpret_cast<const char*>(o.data.data()), o.data.size());
        s = s.c_str();  // up to the first NUL
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 0);
        if (end == s.c_str()) c.fail(o.file_offset, "OFFSET option is not a number");
        r_.ts_offset_ += v;
        break;
      }
      case TraceDatOptionId::traceclock:
        r_.trace_clock_ = trim_nul(c.text(o.data.size()));
        break;
      case TraceDatOptionId::cpucount:
        if (o.data.size() < 4) c.fail(o.file_offset, "CPUCOUNT option is shorter than 4 bytes");
        cpucount_ = c.u32();
        break;
      default:
        break;
    }
  }

  static std::string_view trim_nul(std::string_view s) {
    while (!s.empty() && (s.back() == '\0' || s.back() == '\n')) s.remove_suffix(1);
    return s;
  }

  void check_cpu_data(ByteCursor& c, uint64_t at, const CpuDataInfo& d) {
    if (d.size == 0) return;
    if (algo_ != detail::Compression::none) {
      // Chunked data: its length comes from the chunk headers (trace-cmd
      // stores a size 4 bytes short of them), bounded by the end of file.
      if (d.offset >= file_.size())
        c.fail(at, fmt::format("cpu {} data offset {} lies beyond the end of the file ({} bytes)",
                               d.cpu, d.offset, file_.size()));
      return;
    }
    if (d.offset > file_.size() || d.size > file_.size() - d.offset)
      c.fail(at, fmt::format("cpu {} data [{}, +{}) lies beyond the end of the file ({} bytes)",
                             d.cpu, d.offset, d.size, file_.size()));
    if (d.offset % r_.page_size_ != 0)
      c.fail(at, fmt::format("cpu {} data offset {} is not page aligned", d.cpu, d.offset));
  }

  // A file cut short (a copy interrupted, a disk that filled): a CPU's data
  // that starts in the file and runs past its end. What precedes the cut is
  // read (whole pages), the data of the CPUs after it is empty, each with a
  // warning saying where the reading stopped. Uncompressed version 6 only;
  // an offset past the end with no CPU crossing the end is damage, not a cut.
  void salvage_truncated(std::vector<std::pair<uint64_t, CpuDataInfo>>& table) {
    if (algo_ != detail::Compression::none) return;
    const uint64_t end = file_.size();
    const bool cut = std::any_of(table.begin(), table.end(), [end](const auto& e) {
      return e.second.size != 0 && e.second.offset < end && e.second.size > end - e.second.offset;
    });
    if (!cut) return;
    for (auto& [at, d] : table) {
      if (d.size == 0) continue;
      if (d.offset >= end) {
        r_.warnings_.push_back(fmt::format(
            "truncated: cpu {} data [{}, +{}) lies past the end of the file ({} bytes): "
            "not read",
            d.cpu, d.offset, d.size, end));
        d.size = 0;
      } else if (d.size > end - d.offset) {
        const uint64_t keep = (end - d.offset) / r_.page_size_ * r_.page_size_;
        r_.warnings_.push_back(fmt::format(
            "truncated: cpu {} data [{}, +{}) runs past the end of the file ({} bytes): "
            "read up to byte {} ({} of {} bytes)",
            d.cpu, d.offset, d.size, end, d.offset + keep, keep, d.size));
        d.size = keep;
      }
    }
  }

  // ---------------------------------------------------------------- version 6

  void parse_v6(ByteCursor& c) {
    read_header_info(c);
    read_ftrace_formats(c);
    read_event_formats(c);
    read_kallsyms(c);
    read_printk(c);
    read_cmdlines(c);
    c.set_section("file header");
    const uint64_t cpus_at = c.pos();
    r_.cpu_count_ = c.u32();
    c.set_section("options");
    for (;;) {
      const uint64_t at = c.pos();
      if (c.peek(std::string_view("options  \0", 10))) {
        c.expect(std::string_view("options  \0", 10), "options");
        read_options(c, false);
        continue;
      }
      if (c.peek(std::string_view("latency  \0", 10))) {
        c.expect(std::string_view("latency  \0", 10), "latency");
        r_.latency_text_ = c.text(c.remaining());
        return;
      }
      if (c.peek(std::string_view("flyrecord\0", 10))) {
        c.expect(std::string_view("flyrecord\0", 10), "flyrecord");
        break;
      }
      c.fail(at, "expected \"options  \", \"flyrecord\" or \"latency  \"");
    }
    c.set_section("flyrecord");
    if (r_.cpu_count_ > c.remaining() / 16)
      c.fail(cpus_at, fmt::format("{} CPUs do not fit in the rest of the file", r_.cpu_count_));
    const size_t top = new_buffer("", 0, r_.cpu_count_);
    r_.top_buffer_ = top;
    std::vector<std::pair<uint64_t, CpuDataInfo>> table;
    for (uint32_t cpu = 0; cpu < r_.cpu_count_; ++cpu) {
      const uint64_t at = c.pos();
      table.push_back({at, CpuDataInfo{cpu, c.u64(), c.u64()}});
    }
    salvage_truncated(table);
    for (auto& [at, d] : table) {
      check_cpu_data(c, at, d);
      add_cpu(top, d);
    }
    // trace-cmd reads the clock text only if a TRACECLOCK option exists.
    if (r_.option(TraceDatOptionId::traceclock)) r_.trace_clock_ = trim_nul(c.text(c.u64()));
    r_.buffers_[top].clock = r_.clock_name();
    read_v6_instances();
  }

  // ---------------------------------------------------------------- version 7

  struct Section {
    uint16_t id;
    uint16_t flags;
    uint64_t body;  // file offset of the body
    uint64_t size;
  };

  Section read_section_header(uint64_t at, std::string name, uint16_t want_id) {
    ByteCursor c(file_, 0, name);
    c.seek(at);
    Section s{c.u16(), c.u16(), 0, 0};
    c.u32();  // description string id
    s.size = c.u64();
    s.body = c.pos();
    if (s.id != want_id)
      c.fail(at, fmt::format("section id {} where {} was expected", s.id, want_id));
    if ((s.flags & 1) && algo_ == detail::Compression::none)
      c.fail(at, "section is flagged compressed but the file's compression is 'none'");
    if (s.size > c.remaining())
      c.fail(at, fmt::format("section size {} runs past the end of the file", s.size));
    return s;
  }

  // The section's body; a compressed one is decompressed into a buffer the
  // reader owns, and errors inside it name offsets within that buffer.
  ByteCursor section_body(const Section& s, std::string name) {
    if (!(s.flags & 1))
      return ByteCursor(file_.first(static_cast<size_t>(s.body + s.size)), s.body, std::move(name));
    r_.owned_.push_back(detail::decompress_section(algo_, file_, s.body, s.size, name));
    return ByteCursor::over(
        r_.owned_.back(), 0, std::move(name),
        fmt::format("(offset within the decompressed body of the section at file offset {})",
                    s.body - 16));
  }

  // A new, empty buffer; a second buffer with the same name is refused,
  // naming the BUFFER option that repeats it.
  size_t new_buffer(std::string name, uint64_t option_at, uint32_t cpus) {
    for (const auto& b : r_.buffers_)
      if (b.name == name)
        ByteCursor(file_, 0, "options")
            .fail(option_at,
                  name.empty() ? std::string("second BUFFER option for the top instance")
                               : fmt::format("BUFFER option '{}' repeats an instance name", name));
    TraceDatBuffer b;
    b.name = std::move(name);
    b.cpu_count = cpus;
    b.option_offset = option_at;
    r_.buffers_.push_back(std::move(b));
    r_.cpu_bytes_.emplace_back();
    return r_.buffers_.size() - 1;
  }

  // Records one CPU's data of buffer `bi`; compressed data is decompressed
  // now into a buffer the reader owns (memory: its uncompressed size).
  void add_cpu(size_t bi, CpuDataInfo d) {
    const std::string& name = r_.buffers_[bi].name;
    if (algo_ == detail::Compression::none || d.size == 0) {
      d.uncompressed_size = d.size;
      r_.cpu_bytes_[bi].push_back(
          file_.subspan(static_cast<size_t>(d.offset), static_cast<size_t>(d.size)));
    } else {
      r_.owned_.push_back(detail::decompress_chunks(
          algo_, file_, d.offset, file_.size(),
          name.empty() ? fmt::format("cpu {} data", d.cpu)
                       : fmt::format("buffer '{}' cpu {} data", name, d.cpu)));
      d.uncompressed_size = r_.owned_.back().size();
      r_.cpu_bytes_[bi].push_back(r_.owned_.back());
    }
    r_.buffers_[bi].cpu_data.push_back(d);
  }

  // Version 6 instances: each BUFFER option holds u64 offset + name; at
  // that offset lies a "flyrecord" CPU table of the header's CPU count,
  // then the instance's clock text (read when a TRACECLOCK option exists).
  // Mirrors trace-cmd lib/trace-cmd/trace-input.c: handle_options (BUFFER),
  // tracecmd_buffer_instance_handle (behaviour).
  void read_v6_instances() {
    const bool has_clock = r_.option(TraceDatOptionId::traceclock) != nullptr;
    for (const auto& o : r_.options_) {
      if (o.id != static_cast<uint16_t>(TraceDatOptionId::buffer)) continue;
      ByteCursor b = ByteCursor::over(o.data, o.file_offset, "options");
      const uint64_t at = b.u64();
      std::string name(b.cstr());
      if (name.empty()) b.fail(o.file_offset, "BUFFER option has an empty instance name");
      if (at >= file_.size())
        b.fail(
            o.file_offset,
            fmt::format("BUFFER option '{}': flyrecord offset {} lies beyond the end of the file "
                        "({} bytes)",
                        name, at, file_.size()));
      const size_t bi = new_buffer(name, o.file_offset, r_.cpu_count_);
      ByteCursor c(file_, 0, fmt::format("buffer '{}' flyrecord", name));
      c.seek(at);
      c.expect(std::string_view("flyrecord\0", 10),
               fmt::format("\"flyrecord\" (from the BUFFER option at offset {})", o.file_offset));
      if (r_.cpu_count_ > c.remaining() / 16)
        c.fail(at, fmt::format("{} CPUs do not fit in the rest of the file", r_.cpu_count_));
      for (uint32_t cpu = 0; cpu < r_.cpu_count_; ++cpu) {
        const uint64_t cat = c.pos();
        CpuDataInfo d{cpu, c.u64(), c.u64()};
        check_cpu_data(c, cat, d);
        add_cpu(bi, d);
      }
      std::string clock;
      if (has_clock) clock = bracketed(trim_nul(c.text(c.u64())));
      r_.buffers_[bi].clock = clock.empty() ? r_.clock_name() : clock;
    }
  }

  // "[local] global" -> "local"; text without brackets -> "".
  static std::string bracketed(std::string_view s) {
    const auto open = s.find('[');
    const auto close = s.find(']', open == std::string_view::npos ? 0 : open);
    if (open == std::string_view::npos || close == std::string_view::npos) return {};
    return std::string(s.substr(open + 1, close - open - 1));
  }

  // One v7 BUFFER option: u64 FLYRECORD section offset, name, clock, u32
  // sub-buffer size, u32 CPU count, per CPU u32 id, u64 offset, u64 size.
  void read_v7_buffer(const TraceDatOption& o) {
    ByteCursor b = ByteCursor::over(o.data, o.file_offset, "options");
    const uint64_t sect = b.u64();
    std::string name(b.cstr());
    const std::string_view clock = b.cstr();
    const uint64_t ps_at = b.pos();
    if (b.u32() != r_.page_size_) b.fail(ps_at, "BUFFER page size differs from the file header's");
    const uint64_t cpus_at = b.pos();
    const uint32_t cpus = b.u32();
    const std::string what =
        name.empty() ? std::string("BUFFER option") : fmt::format("BUFFER option '{}'", name);
    if (cpus > b.remaining() / 20)
      b.fail(cpus_at, fmt::format("{}: {} CPUs do not fit in the option", what, cpus));
    if (cpus == 0 && !name.empty()) b.fail(cpus_at, fmt::format("{} has 0 CPUs", what));
    if (sect >= file_.size())
      b.fail(
          o.file_offset,
          fmt::format("{}: flyrecord section offset {} lies beyond the end of the file ({} bytes)",
                      what, sect, file_.size()));
    const bool top = name.empty();
    const size_t bi = new_buffer(std::move(name), o.file_offset, cpus);
    r_.buffers_[bi].clock = std::string(clock);
    read_section_header(
        sect,
        top ? std::string("flyrecord") : fmt::format("buffer '{}' flyrecord", r_.buffers_[bi].name),
        3);
    for (uint32_t i = 0; i < cpus; ++i) {
      const uint64_t at = b.pos();
      CpuDataInfo d{b.u32(), b.u64(), b.u64()};
      check_cpu_data(b, at, d);
      add_cpu(bi, d);
    }
    if (top) {
      r_.top_buffer_ = bi;
      r_.buffer_clock_ = r_.buffers_[bi].clock;
      // trace-cmd report's "cpus=" is the CPUCOUNT option's when present
      // (a top BUFFER of `extract -B NAME` holds 0 CPUs).
      r_.cpu_count_ = cpucount_.value_or(cpus);
    }
  }

  void parse_v7(ByteCursor& c) {
    const uint64_t cpos = c.pos();
    r_.compression_ = std::string(c.cstr());
    c.cstr();  // compression version
    algo_ = detail::compression_from_name(r_.compression_, cpos);
    uint64_t opt_at = c.u64();
    std::unordered_set<uint64_t> seen;
    while (opt_at != 0) {
      if (!seen.insert(opt_at).second) c.fail(opt_at, "options sections form a loop");
      const Section s = read_section_header(opt_at, "options", 0);
      ByteCursor oc = section_body(s, "options");
      options_note_ =
          (s.flags & 1)
              ? fmt::format("(offset within the decompressed options section at file offset {})",
                            opt_at)
              : std::string();
      opt_at = read_options(oc, true);
    }
    // Sections advertised by options 16..21, visited in trace-cmd's order.
    auto section_at = [&](TraceDatOptionId id) -> std::optional<uint64_t> {
      const TraceDatOption* o = r_.option(id);
      if (!o) return std::nullopt;
      if (o->data.size() < 8)
        ByteCursor(file_, 0, "options").fail(o->file_offset, "section option shorter than 8 bytes");
      uint64_t off;
      std::memcpy(&off, o->data.data(), 8);
      return off;
    };
    const auto hi = section_at(TraceDatOptionId::header_info);
    if (!hi) c.fail(0, "version 7 file has no HEADER_INFO section");
    {
      ByteCursor b = section_body(read_section_header(*hi, "header_page", 16), "header_page");
      read_header_info(b);
    }
    if (const auto at = section_at(TraceDatOptionId::ftrace_events)) {
      ByteCursor b = section_body(read_section_header(*at, "ftrace formats", 17), "ftrace formats");
      read_ftrace_formats(b);
    }
    if (const auto at = section_at(TraceDatOptionId::event_formats)) {
      ByteCursor b = section_body(read_section_header(*at, "event formats", 18), "event formats");
      read_event_formats(b);
    }
    if (const auto at = section_at(TraceDatOptionId::kallsyms)) {
      ByteCursor b = section_body(read_section_header(*at, "kallsyms", 19), "kallsyms");
      read_kallsyms(b);
    }
    if (const auto at = section_at(TraceDatOptionId::printk)) {
      ByteCursor b = section_body(read_section_header(*at, "printk", 20), "printk");
      read_printk(b);
    }
    if (const auto at = section_at(TraceDatOptionId::cmdlines)) {
      ByteCursor b = section_body(read_section_header(*at, "cmdlines", 21), "cmdlines");
      read_cmdlines(b);
    }
    // The top instance: BUFFER option with an empty name (or BUFFER_TEXT),
    // then the named instances in option order.
    for (const auto& o : r_.options_) {
      if (o.id == static_cast<uint16_t>(TraceDatOptionId::buffer)) {
        ByteCursor b = ByteCursor::over(o.data, o.file_offset, "options");
        b.u64();
        if (!b.cstr().empty()) continue;
        if (r_.top_buffer_) c.fail(o.file_offset, "second BUFFER option for the top instance");
        read_v7_buffer(o);
      } else if (o.id == static_cast<uint16_t>(TraceDatOptionId::buffer_text) && !r_.top_buffer_ &&
                 r_.latency_text_.empty()) {
        ByteCursor b = ByteCursor::over(o.data, o.file_offset, "options");
        const uint64_t sect = b.u64();
        if (!b.cstr().empty()) continue;
        const Section s = read_section_header(sect, "latency", 22);
        ByteCursor t = section_body(s, "latency");
        r_.latency_text_ = t.text(s.size);
      }
    }
    if (!r_.latency_text_.empty()) return;
    for (const auto& o : r_.options_) {
      if (o.id != static_cast<uint16_t>(TraceDatOptionId::buffer)) continue;
      ByteCursor b = ByteCursor::over(o.data, o.file_offset, "options");
      b.u64();
      if (!b.cstr().empty()) read_v7_buffer(o);
    }
    // No BUFFER option at all: a trace without records (trace-cmd restore
    // writes one for a capture that kept nothing; trace-cmd report prints
    // only "cpus=N").
    if (!r_.top_buffer_) r_.cpu_count_ = cpucount_.value_or(0);
  }

  TraceDatReader& r_;
  std::span<const std::byte> file_;
  std::optional<uint32_t> cpucount_;
  detail::Compression algo_ = detail::Compression::none;
  std::string options_note_;  // appended to option errors of a compressed OPTIONS section
};

// ---------------------------------------------------------------- TraceDatReader

TraceDatReader TraceDatReader::open(const std::filesystem::path& path) {
  return TraceDatReader(MappedFile::open(path), path.string());
}

TraceDatReader::TraceDatReader(MappedFile file, std::string name)
    : file_(std::move(file)),
      name_(std::make_unique<const std::string>(name.empty() ? std::string("trace.dat")
                                                             : std::move(name))) {
  try {
    TraceDatParser(*this).parse();
  } catch (const TraceDatError& e) {
    throw e.with_file(*name_);  // the parser's errors say "trace.dat"
  }
}

const std::string& TraceDatReader::name() const noexcept {
  static const std::string kDefault = "trace.dat";
  return name_ ? *name_ : kDefault;
}

void TraceDatReader::index_formats() {
  by_id_.clear();
  for (size_t i = 0; i < formats_.size(); ++i) {
    const uint32_t id = formats_[i].id;
    if (id > 0xffff) continue;  // common_type is 16 bits: no record can name it
    if (id >= by_id_.size()) by_id_.resize(id + 1, -1);
    if (by_id_[id] < 0) by_id_[id] = static_cast<int32_t>(i);
  }
}

const EventFormat* TraceDatReader::find_format(std::string_view system,
                                               std::string_view name) const noexcept {
  for (const auto& f : formats_)
    if (f.name == name && (system.empty() || f.system == system)) return &f;
  return nullptr;
}

std::optional<std::string_view> TraceDatReader::comm(int32_t pid) const noexcept {
  const auto it = cmdlines_.find(pid);
  if (it == cmdlines_.end()) return std::nullopt;
  return std::string_view(it->second);
}

const TraceDatOption* TraceDatReader::option(TraceDatOptionId id) const noexcept {
  for (const auto& o : options_)
    if (o.id == static_cast<uint16_t>(id)) return &o;
  return nullptr;
}

std::string TraceDatReader::clock_name() const {
  const auto open = trace_clock_.find('[');
  const auto close = trace_clock_.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos)
    return std::string(buffer_clock_);
  return std::string(trace_clock_.substr(open + 1, close - open - 1));
}

std::optional<size_t> TraceDatReader::find_buffer(std::string_view name) const noexcept {
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].name == name) return i;
  return std::nullopt;
}

CpuRecordCursor TraceDatReader::buffer_cpu_records(size_t buffer, size_t index) const {
  if (buffer >= buffers_.size())
    throw std::out_of_range(fmt::format("buffer index {} >= {}", buffer, buffers_.size()));
  const auto& b = buffers_[buffer];
  if (index >= b.cpu_data.size())
    throw std::out_of_range(fmt::format("cpu data index {} >= {}", index, b.cpu_data.size()));
  const auto& d = b.cpu_data[index];
  const bool decompressed = d.size != 0 && !compression_.empty() && compression_ != "none";
  return CpuRecordCursor(cpu_bytes_[buffer][index], decompressed ? 0 : d.offset, d.cpu,
                         header_page_.layout, ts_offset_, decompressed, b.name, name());
}

CpuRecordCursor TraceDatReader::page_records(std::span<const std::byte> pages, uint32_t cpu) const {
  return CpuRecordCursor(pages, 0, cpu, header_page_.layout, ts_offset_, true, {}, name());
}

MergedRecordCursor TraceDatReader::buffer_records(size_t buffer) const {
  if (buffer >= buffers_.size())
    throw std::out_of_range(fmt::format("buffer index {} >= {}", buffer, buffers_.size()));
  std::vector<CpuRecordCursor> v;
  v.reserve(buffers_[buffer].cpu_data.size());
  for (size_t i = 0; i < buffers_[buffer].cpu_data.size(); ++i)
    v.push_back(buffer_cpu_records(buffer, i));
  return MergedRecordCursor(std::move(v));
}

CpuRecordCursor TraceDatReader::cpu_records(size_t index) const {
  if (!top_buffer_)
    throw std::out_of_range(
        fmt::format("cpu data index {} >= 0 (the file has no top instance)", index));
  return buffer_cpu_records(*top_buffer_, index);
}

MergedRecordCursor TraceDatReader::records() const {
  if (!top_buffer_) return MergedRecordCursor({});
  return buffer_records(*top_buffer_);
}

// ---------------------------------------------------------------- cursors

CpuRecordCursor::CpuRecordCursor(std::span<const std::byte> data, uint64_t file_offset,
                                 uint32_t cpu, kpage::PageLayout layout, int64_t ts_offset,
                                 bool decompressed, std::string_view buffer, std::string_view file)
    : data_(data),
      file_offset_(file_offset),
      cpu_(cpu),
      layout_(layout),
      ts_offset_(ts_offset),
      decompressed_(decompressed),
      buffer_(buffer),
      file_(file) {}

std::string CpuRecordCursor::section_name() const {
  const std::string prefix = buffer_.empty() ? std::string() : fmt::format("buffer '{}' ", buffer_);
  return decompressed_ ? fmt::format("{}cpu {} decompressed data", prefix, cpu_)
                       : fmt::format("{}cpu {} data", prefix, cpu_);
}

bool CpuRecordCursor::next_page() {
  // Close the current page: report its error, fold its counts.
  if (const auto e = page_.error()) {
    throw TraceDatError(section_name(), file_offset_ + page_start_ + e.offset,
                        std::string(kpage::page_error_text(e.code)), std::string(file_));
  }
  const auto& c = page_.counts();
  done_.records += c.data;
  done_.discarded += c.discarded;
  done_.time_extends += c.time_extends;
  done_.time_stamps += c.time_stamps;
  page_ = kpage::PageCursor();
  while (next_page_ < data_.size()) {
    page_start_ = next_page_;
    const size_t len = std::min<size_t>(layout_.page_size, data_.size() - next_page_);
    next_page_ += len;
    const auto parsed = kpage::parse_page_untrusted(data_.subspan(page_start_, len), layout_);
    if (!parsed.page) {
      throw TraceDatError(section_name(), file_offset_ + page_start_ + parsed.error.offset,
                          std::string(kpage::page_error_text(parsed.error.code)),
                          std::string(file_));
    }
    ++done_.pages;
    if (parsed.page->missed_events) {
      ++done_.pages_with_loss;
      const int64_t n =
          parsed.page->lost_events ? static_cast<int64_t>(*parsed.page->lost_events) : -1;
      if (n > 0) done_.lost_events += static_cast<uint64_t>(n);
      pending_lost_ = (n < 0 || pending_lost_ < 0) ? -1 : pending_lost_ + n;
    }
    if (parsed.page->data.empty()) continue;
    page_ = kpage::PageCursor(*parsed.page);
    return true;
  }
  return false;
}

CpuWalkStats CpuRecordCursor::stats() const noexcept {
  CpuWalkStats s = done_;
  const auto& c = page_.counts();
  s.records += c.data;
  s.discarded += c.discarded;
  s.time_extends += c.time_extends;
  s.time_stamps += c.time_stamps;
  return s;
}

MergedRecordCursor::MergedRecordCursor(std::vector<CpuRecordCursor> cpus)
    : cpus_(std::move(cpus)), heads_(cpus_.size()), live_(cpus_.size(), 1) {
  for (size_t i = 0; i < cpus_.size(); ++i) advance(i);
}

}  // namespace tracepipe
