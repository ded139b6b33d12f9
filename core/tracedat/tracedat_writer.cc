#include "tracepipe/core/tracedat/tracedat_writer.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "tracepipe/core/tracedat/byte_out.h"

namespace tracepipe {
namespace {

using Out = detail::ByteOut;

bool bad_name(std::string_view s) {
  return s.empty() || s.find_first_of(" \t\r\n/") != std::string_view::npos;
}

}  // namespace

TraceDatWriter::TraceDatWriter(TraceDatWriterConfig config) : config_(std::move(config)) {
  if (config_.cpus == 0 || config_.cpus > 65536)
    throw std::invalid_argument("trace.dat writer: cpus must be in [1, 65536]");
  const uint32_t ps = config_.page_size;
  if (ps < 256 || ps > (1u << 27) || (ps & (ps - 1)) != 0)
    throw std::invalid_argument(
        "trace.dat writer: page size must be a power of two in [256, 2^27]");
  if (config_.clock.empty() || config_.clock.find_first_of("[] \t\n") != std::string::npos)
    throw std::invalid_argument("trace.dat writer: clock name must be one word");
  layout_ = kpage::PageLayout{ps, 8};
  cpus_.reserve(config_.cpus);
  for (uint32_t i = 0; i < config_.cpus; ++i) cpus_.emplace_back(layout_);
}

void TraceDatWriter::add_format(const EventFormat& f) {
  if (f.id > 0xffff)
    throw std::invalid_argument(
        fmt::format("event {}/{}: ID {} does not fit common_type", f.system, f.name, f.id));
  if (bad_name(f.system) || bad_name(f.name))
    throw std::invalid_argument(
        fmt::format("event '{}/{}': system and name must be non-empty words", f.system, f.name));
  for (const auto& g : formats_)
    if (g.id == f.id)
      throw std::invalid_argument(fmt::format("event {}/{}: ID {} already used by {}/{}", f.system,
                                              f.name, f.id, g.system, g.name));
  formats_.push_back(f);
}

void TraceDatWriter::set_cmdline(int32_t pid, std::string_view comm) {
  std::string c(comm.substr(0, comm.find('\n')));
  cmdlines_.insert_or_assign(pid, std::move(c));
}

uint32_t TraceDatWriter::max_payload() const noexcept {
  return kpage::PageEncoder::max_payload(layout_);
}

void TraceDatWriter::finish_page(CpuStream& s) {
  const auto page = s.encoder.finish();
  s.pages.insert(s.pages.end(), page.begin(), page.end());
  s.encoder.reset();
  s.marked = false;
  ++stats_.pages;
}

void TraceDatWriter::add_record(uint32_t cpu, uint64_t ts, std::span<const std::byte> payload) {
  if (cpu >= cpus_.size())
    throw std::invalid_argument(fmt::format("trace.dat writer: cpu {} >= {}", cpu, cpus_.size()));
  if (payload.size() < 2 || payload.size() > max_payload())
    throw std::invalid_argument(fmt::format("trace.dat writer: payload of {} bytes (must be 2..{})",
                                            payload.size(), max_payload()));
  CpuStream& s = cpus_[cpu];
  if (!s.encoder.try_append(ts, payload)) [[unlikely]] {
    finish_page(s);
    const bool ok = s.encoder.try_append(ts, payload);  // fits an empty page: checked above
    if (!ok) throw std::logic_error("trace.dat writer: record does not fit an empty page");
  }
  ++stats_.records;
}

void TraceDatWriter::add_lost(uint32_t cpu, std::optional<uint64_t> count) {
  if (cpu >= cpus_.size())
    throw std::invalid_argument(fmt::format("trace.dat writer: cpu {} >= {}", cpu, cpus_.size()));
  CpuStream& s = cpus_[cpu];
  if (!s.encoder.empty()) finish_page(s);  // the loss is reported by the next page
  s.encoder.mark_missed(count);
  s.marked = true;
  ++stats_.lost_marks;
}

std::vector<std::byte> TraceDatWriter::tail_page(const CpuStream& s) const {
  if (s.encoder.empty() && !s.marked) return {};
  kpage::PageEncoder copy = s.encoder;
  const auto page = copy.finish();
  return {page.begin(), page.end()};
}

std::vector<std::byte> TraceDatWriter::headers(const std::vector<uint64_t>& cpu_sizes) const {
  std::vector<CpuExtent> ext(config_.cpus);
  for (uint32_t i = 0; i < config_.cpus; ++i) ext[i].size = cpu_sizes[i];
  std::vector<std::byte> h = header_bytes(ext);  // sizes only: the offsets are patched below
  uint64_t at = h.size();
  for (uint32_t i = 0; i < config_.cpus; ++i) {
    ext[i].offset = at;
    at += cpu_sizes[i];
  }
  return header_bytes(ext);
}

TraceDatWriter::MetaSections TraceDatWriter::meta_sections() const {
  MetaSections m;
  Out o;
  const std::string hp = kpage::header_page_text(layout_);
  o.cstr("header_page");
  o.num<uint64_t>(hp.size());
  o.str(hp);
  const std::string he = kpage::header_event_text();
  o.cstr("header_event");
  o.num<uint64_t>(he.size());
  o.str(he);

  m.header_info = std::exchange(o.b, {});
  // ftrace formats, then the other systems in order of first appearance.
  std::vector<const EventFormat*> ftrace;
  std::vector<std::string> systems;
  for (const auto& f : formats_) {
    if (f.system == "ftrace")
      ftrace.push_back(&f);
    else if (std::find(systems.begin(), systems.end(), f.system) == systems.end())
      systems.push_back(f.system);
  }
  o.num<uint32_t>(static_cast<uint32_t>(ftrace.size()));
  for (const auto* f : ftrace) {
    const std::string t = to_format_text(*f);
    o.num<uint64_t>(t.size());
    o.str(t);
  }
  m.ftrace_events = std::exchange(o.b, {});
  o.num<uint32_t>(static_cast<uint32_t>(systems.size()));
  for (const auto& sys : systems) {
    o.cstr(sys);
    uint32_t n = 0;
    for (const auto& f : formats_) n += f.system == sys;
    o.num<uint32_t>(n);
    for (const auto& f : formats_) {
      if (f.system != sys) continue;
      const std::string t = to_format_text(f);
      o.num<uint64_t>(t.size());
      o.str(t);
    }
  }
  m.event_formats = std::exchange(o.b, {});
  o.num<uint32_t>(static_cast<uint32_t>(kallsyms_.size()));
  o.str(kallsyms_);
  m.kallsyms = std::exchange(o.b, {});
  o.num<uint32_t>(static_cast<uint32_t>(printk_.size()));
  o.str(printk_);
  m.printk = std::exchange(o.b, {});
  std::string cmd;
  for (const auto& [pid, comm] : cmdlines_) cmd += fmt::format("{} {}\n", pid, comm);
  o.num<uint64_t>(cmd.size());
  o.str(cmd);

  m.cmdlines = std::move(o.b);
  return m;
}

std::vector<std::byte> TraceDatWriter::header_bytes(const std::vector<CpuExtent>& extents,
                                                    size_t* table_offset) const {
  Out o;
  // File header. Mirrors trace-cmd lib/trace-cmd/trace-output.c: init_file_state /
  // tracecmd_output_write_headers.
  o.str(std::string_view("\x17\x08\x44tracing", 10));
  o.cstr("6");
  o.num<uint8_t>(0);  // little endian
  o.num<uint8_t>(8);  // sizeof(long)
  o.num<uint32_t>(layout_.page_size);

  const MetaSections m = meta_sections();
  for (const auto* part :
       {&m.header_info, &m.ftrace_events, &m.event_formats, &m.kallsyms, &m.printk, &m.cmdlines})
    o.raw(part->data(), part->size());

  o.num<uint32_t>(config_.cpus);
  o.str(std::string_view("options  \0", 10));
  o.num<uint16_t>(8);  // CPUCOUNT
  o.num<uint32_t>(4);
  o.num<uint32_t>(config_.cpus);
  const std::string clock = fmt::format("[{}]", config_.clock);
  o.num<uint16_t>(4);  // TRACECLOCK: makes trace-cmd read the clock text after the CPU table
  o.num<uint32_t>(static_cast<uint32_t>(clock.size() + 1));
  o.cstr(clock);
  for (const std::string& st : cpu_stats_) {
    o.num<uint16_t>(2);  // CPUSTAT: text with its NUL
    o.num<uint32_t>(static_cast<uint32_t>(st.size() + 1));
    o.cstr(st);
  }
  o.num<uint16_t>(0);  // end of options (v6: no size)
  o.str(std::string_view("flyrecord\0", 10));
  if (table_offset != nullptr) *table_offset = o.b.size();
  for (uint32_t i = 0; i < config_.cpus; ++i) {
    o.num<uint64_t>(i < extents.size() ? extents[i].offset : 0);
    o.num<uint64_t>(i < extents.size() ? extents[i].size : 0);
  }
  o.num<uint64_t>(clock.size());
  o.str(clock);
  // Pad to a page: CPU data must be page aligned.
  const size_t ps = layout_.page_size;
  o.b.resize((o.b.size() + ps - 1) / ps * ps, std::byte{0});
  return std::move(o.b);
}

std::vector<std::byte> TraceDatWriter::to_bytes() const {
  std::vector<std::vector<std::byte>> tails;
  std::vector<uint64_t> sizes;
  for (const auto& s : cpus_) {
    tails.push_back(tail_page(s));
    sizes.push_back(s.pages.size() + tails.back().size());
  }
  std::vector<std::byte> out = headers(sizes);
  for (size_t i = 0; i < cpus_.size(); ++i) {
    out.insert(out.end(), cpus_[i].pages.begin(), cpus_[i].pages.end());
    out.insert(out.end(), tails[i].begin(), tails[i].end());
  }
  return out;
}

void TraceDatWriter::write(const std::filesystem::path& path) const {
  std::vector<std::vector<std::byte>> tails;
  std::vector<uint64_t> sizes;
  for (const auto& s : cpus_) {
    tails.push_back(tail_page(s));
    sizes.push_back(s.pages.size() + tails.back().size());
  }
  const std::vector<std::byte> head = headers(sizes);
  // Replace only a regular file (never a device, FIFO or the target of a
  // symlink), through a fresh temp file created with O_EXCL (mkstemp).
  std::error_code sec;
  const auto st = std::filesystem::symlink_status(path, sec);
  if (!sec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw std::runtime_error("refusing to replace " + path.string() + ": not a regular file");
  std::string tmp_name = path.string() + ".XXXXXX";
  const int fd = ::mkstemp(tmp_name.data());
  // The error names the user's path: the temporary beside it is ours.
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "cannot create " + path.string());
  (void)::fchmod(fd, 0644);
  const std::filesystem::path tmp = tmp_name;
  std::FILE* f = ::fdopen(fd, "wb");
  if (!f) {
    const int e = errno;
    ::close(fd);
    std::filesystem::remove(tmp);
    throw std::system_error(e, std::generic_category(), "cannot create " + path.string());
  }
  auto put = [f](const std::vector<std::byte>& b) {
    return b.empty() || std::fwrite(b.data(), 1, b.size(), f) == b.size();
  };
  bool ok = put(head);
  for (size_t i = 0; ok && i < cpus_.size(); ++i) ok = put(cpus_[i].pages) && put(tails[i]);
  const int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    std::filesystem::remove(tmp);
    throw std::system_error(errno, std::generic_category(), "cannot write " + tmp.string());
  }
  if (!ok) {
    std::filesystem::remove(tmp);
    throw std::system_error(err, std::generic_category(), "cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw std::system_error(ec, "cannot rename " + tmp.string() + " to " + path.string());
  }
}

}  // namespace tracepipe
