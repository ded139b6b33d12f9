#include "tracepipe/core/tracedat/tracedat_v7_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "tracepipe/core/files/output_file.h"
#include "tracepipe/core/tracedat/byte_out.h"

namespace tracepipe {
namespace {

// trace-cmd lib/trace-cmd/include/trace-cmd-private.h: option and section ids.
constexpr uint16_t kOptDone = 0, kOptCpuStat = 2, kOptBuffer = 3, kOptTraceClock = 4,
                   kOptCpuCount = 8;
constexpr uint16_t kSecOptions = 0, kSecBuffer = 3, kSecHeaderInfo = 16;
constexpr uint16_t kFlagCompressed = 1;

using Out = detail::ByteOut;

// A section header; returns where its size field is (patched by end_section).
size_t begin_section(Out& o, uint16_t id, uint16_t flags) {
  o.num<uint16_t>(id);
  o.num<uint16_t>(flags);
  o.num<uint32_t>(0xffffffffu);  // no description string
  const size_t at = o.b.size();
  o.num<uint64_t>(0);
  return at;
}
void end_section(Out& o, size_t size_at) { o.patch<uint64_t>(size_at, o.b.size() - size_at - 8); }

// The file header (base offset 0) up to the options offset, which is
// returned as the place to patch.
size_t file_header(Out& o, const TraceDatWriter& meta, detail::Compression algo) {
  o.raw("\x17\x08\x44tracing", 10);
  o.cstr("7");
  o.num<uint8_t>(0);  // little endian
  o.num<uint8_t>(8);  // sizeof(long)
  o.num<uint32_t>(meta.page_size());
  o.cstr(detail::BlockCompressor::name(algo));
  o.cstr(detail::BlockCompressor::version(algo));
  const size_t at = o.b.size();
  o.num<uint64_t>(0);
  return at;
}

// Sections 16..21 appended to `o` (offsets relative to `base`); their
// offsets in `where[0..5]`.
void metadata(Out& o, uint64_t base, const TraceDatWriter& meta, detail::BlockCompressor* z,
              uint64_t where[6]) {
  const TraceDatWriter::MetaSections m = meta.meta_sections();
  const std::vector<std::byte>* parts[6] = {&m.header_info, &m.ftrace_events, &m.event_formats,
                                            &m.kallsyms,    &m.printk,        &m.cmdlines};
  for (int i = 0; i < 6; ++i) {
    where[i] = base + o.b.size();
    const size_t sz =
        begin_section(o, static_cast<uint16_t>(kSecHeaderInfo + i), z ? kFlagCompressed : 0);
    if (z) {
      const auto c = z->compress(*parts[i]);
      if (c.empty()) throw std::runtime_error("trace.dat v7: compression failed");
      o.num<uint32_t>(static_cast<uint32_t>(c.size()));
      o.num<uint32_t>(static_cast<uint32_t>(parts[i]->size()));
      o.raw(c.data(), c.size());
    } else {
      o.raw(parts[i]->data(), parts[i]->size());
    }
    end_section(o, sz);
  }
}

// CPUCOUNT, TRACECLOCK and the section offsets (the options every file has).
void common_options(Out& o, const TraceDatWriter& meta, const uint64_t where[6]) {
  o.num<uint16_t>(kOptCpuCount);
  o.num<uint32_t>(4);
  o.num<uint32_t>(meta.cpus());
  const std::string clock = "[" + meta.clock() + "]";
  o.num<uint16_t>(kOptTraceClock);
  o.num<uint32_t>(static_cast<uint32_t>(clock.size() + 1));
  o.cstr(clock);
  for (const std::string& st : meta.cpu_stats()) {
    o.num<uint16_t>(kOptCpuStat);
    o.num<uint32_t>(static_cast<uint32_t>(st.size() + 1));
    o.cstr(st);
  }
  for (int i = 0; i < 6; ++i) {
    o.num<uint16_t>(static_cast<uint16_t>(kSecHeaderInfo + i));
    o.num<uint32_t>(8);
    o.num<uint64_t>(where[i]);
  }
}

}  // namespace

std::vector<std::byte> tracedat_v7_headers(const TraceDatWriter& meta, detail::Compression algo) {
  std::unique_ptr<detail::BlockCompressor> z;
  if (algo != detail::Compression::none) z = std::make_unique<detail::BlockCompressor>(algo);
  Out o;
  const size_t opt_at = file_header(o, meta, algo);
  uint64_t where[6];
  metadata(o, 0, meta, z.get(), where);
  o.patch<uint64_t>(opt_at, o.b.size());
  const size_t sz = begin_section(o, kSecOptions, 0);
  common_options(o, meta, where);
  o.num<uint16_t>(kOptDone);
  o.num<uint32_t>(8);
  o.num<uint64_t>(0);  // the collector points this at the options it adds
  end_section(o, sz);
  return std::move(o.b);
}

int write_tracedat_v7(int fd, const TraceDatWriter& meta, detail::Compression algo,
                      std::span<const V7CpuData> cpus) noexcept {
  try {
    if (cpus.size() != meta.cpus()) return EINVAL;
    std::unique_ptr<detail::BlockCompressor> z;
    if (algo != detail::Compression::none) z = std::make_unique<detail::BlockCompressor>(algo);
    const uint32_t ps = meta.page_size();
    // (1) file header and metadata.
    Out o;
    const size_t opt_at = file_header(o, meta, algo);
    uint64_t where[6];
    metadata(o, 0, meta, z.get(), where);
    uint64_t off = 0;
    auto flush = [&]() -> int {
      const int err = pwrite_all(fd, {o.b.data(), o.b.size()}, off);
      off += o.b.size();
      o.b.clear();
      return err;
    };
    // (2) FLYRECORD: each CPU's pages, page aligned, in chunks of one page.
    const uint64_t flyrecord = off + o.b.size();
    const size_t fly_size_at = begin_section(o, kSecBuffer, z ? kFlagCompressed : 0);
    const uint64_t fly_size_off = off + fly_size_at;
    if (int err = flush(); err != 0) return err;
    std::vector<TraceDatWriter::CpuExtent> ext(cpus.size());
    std::vector<std::byte> page(ps);
    for (size_t cpu = 0; cpu < cpus.size(); ++cpu) {
      const uint64_t start = (off + ps - 1) / ps * ps;
      if (start != off) o.b.resize(start - off, std::byte{0});
      if (int err = flush(); err != 0) return err;
      ext[cpu].offset = off;
      const uint64_t pages = cpus[cpu].size / ps;
      if (pages == 0) continue;
      if (z) o.num<uint32_t>(static_cast<uint32_t>(pages));
      for (uint64_t p = 0; p < pages; ++p) {
        if (int err = cpus[cpu].read(p * ps, page); err != 0) return err;
        if (z) {
          const auto c = z->compress(page);
          if (c.empty()) return EIO;
          o.num<uint32_t>(static_cast<uint32_t>(c.size()));
          o.num<uint32_t>(ps);
          o.raw(c.data(), c.size());
        } else {
          o.raw(page.data(), page.size());
        }
        if (o.b.size() >= (size_t{1} << 20))
          if (int err = flush(); err != 0) return err;
      }
      const uint64_t end = off + o.b.size();
      if (int err = flush(); err != 0) return err;
      ext[cpu].size = end - ext[cpu].offset;
    }
    {
      const uint64_t body = off - fly_size_off - 8;
      if (int err = pwrite_all(fd, {reinterpret_cast<const std::byte*>(&body), 8}, fly_size_off);
          err != 0)
        return err;
    }
    // (3) OPTIONS, then its offset in the file header.
    const uint64_t options = off;
    const size_t opt_size_at = begin_section(o, kSecOptions, 0);
    common_options(o, meta, where);
    Out buf;  // BUFFER: flyrecord offset, name "", clock, page size, cpus, per CPU {id, offset,
              // size}
    buf.num<uint64_t>(flyrecord);
    buf.cstr("");
    buf.cstr(meta.clock());
    buf.num<uint32_t>(ps);
    buf.num<uint32_t>(static_cast<uint32_t>(cpus.size()));
    for (size_t cpu = 0; cpu < cpus.size(); ++cpu) {
      buf.num<uint32_t>(static_cast<uint32_t>(cpu));
      buf.num<uint64_t>(ext[cpu].offset);
      buf.num<uint64_t>(ext[cpu].size);
    }
    o.num<uint16_t>(kOptBuffer);
    o.num<uint32_t>(static_cast<uint32_t>(buf.b.size()));
    o.raw(buf.b.data(), buf.b.size());
    o.num<uint16_t>(kOptDone);
    o.num<uint32_t>(8);
    o.num<uint64_t>(0);
    end_section(o, opt_size_at);
    if (int err = flush(); err != 0) return err;
    return pwrite_all(fd, {reinterpret_cast<const std::byte*>(&options), 8}, opt_at);
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (const std::exception&) {
    return EIO;
  }
}

}  // namespace tracepipe
