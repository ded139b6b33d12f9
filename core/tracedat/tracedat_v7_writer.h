#pragma once
// trace.dat version 7 (trace-cmd 3.x's default: sections, zstd), written
// from a TraceDatWriter's metadata and per-CPU pages that already exist
// (core/record's recording, converted at its end, as trace-cmd record
// compresses its per-CPU temp files into the output when it stops).
//
// Layout written (shared/reference/tracedat.md §3; mirrors trace-cmd
// lib/trace-cmd/trace-output.c: tracecmd_output_write_headers,
// out_write_section_header, out_write_cpu_data, write_options):
//   magic "\x17\x08\x44tracing" "7\0" | endian 0 | long 8 | u32 page size
//   compression name NUL, version NUL | u64 offset of the OPTIONS section
//   section 16 HEADER INFO | 17 FTRACE EVENTS | 18 EVENT FORMATS
//   section 19 KALLSYMS | 20 PRINTK | 21 CMDLINES
//   section 3 FLYRECORD: per CPU, page aligned: u32 chunk count, then per
//     chunk u32 compressed size, u32 uncompressed size, the compressed bytes
//     (one page per chunk, as trace-cmd; uncompressed pages with "none")
//   section 0 OPTIONS: CPUCOUNT, TRACECLOCK, BUFFER (""), 16..21 (section
//     offsets), DONE (size 8, u64 0)
//   section header: u16 id, u16 flags (1 = compressed), u32 description
//   string id (-1: none), u64 body size. A compressed metadata body is
//   u32 compressed size, u32 uncompressed size, the compressed bytes.
// Little endian, 64-bit page headers, like TraceDatWriter.
//
// Thread-safety: free functions; the fd and sources are the caller's.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "tracepipe/core/tracedat/tracedat_decompress.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe {

/// One CPU's pages: `size` bytes (whole pages), read by `read(offset, out)`
/// which fills `out` and returns 0 or an errno.
struct V7CpuData {
  uint64_t size = 0;
  std::function<int(uint64_t offset, std::span<std::byte> out)> read;
};

/// Writes a complete version-7 file to `fd` at offsets 0.. with pwrite
/// (`meta`: formats, cmdlines, clock, CPU count and page size; `cpus`: one
/// entry per CPU of meta). Returns 0 or an errno (ENOMEM, EIO when the
/// compression library fails, or the errno of pread/pwrite). Memory: a few
/// pages, whatever the data's size.
int write_tracedat_v7(int fd, const TraceDatWriter& meta, detail::Compression algo,
                      std::span<const V7CpuData> cpus) noexcept;

/// What `trace-cmd record -N` sends before the data in version 7: the file
/// header and the metadata sections, then an OPTIONS section (CPUCOUNT,
/// TRACECLOCK, 16..21) whose DONE offset is 0. The collector appends the
/// FLYRECORD section, compressing the pages with `algo` itself, and its own
/// options (trace-cmd tracecmd/trace-listen.c put_together_file). Throws
/// std::bad_alloc, std::runtime_error when compression fails.
std::vector<std::byte> tracedat_v7_headers(const TraceDatWriter& meta, detail::Compression algo);

}  // namespace tracepipe
