#include "tracepipe/core/record/convert_sink.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "tracepipe/core/convert/ctf_writer.h"
#include "tracepipe/core/convert/out_file.h"
#include "tracepipe/core/convert/perfetto_writer.h"
#include "tracepipe/core/files/mapped_file.h"
#include "tracepipe/core/tracedat/tracedat_error.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe::record {
namespace {

// The recorder's headers as a reader sees them: a trace.dat without data.
TraceDatReader parse_headers(const TraceDatWriter& meta, const std::filesystem::path& path) {
  const std::vector<std::byte> h =
      meta.header_bytes(std::vector<TraceDatWriter::CpuExtent>(meta.cpus()));
  return TraceDatReader(MappedFile::copy_of(h), path.string());
}

int error_code(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const convert::ConvertOutputError& x) {
    return x.code() != 0 ? x.code() : EIO;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (...) {
    return EIO;  // a page the reader refuses (cannot come from PageBatch), or a header it cannot
                 // parse
  }
}

}  // namespace

struct ConvertSink::Impl {
  std::unique_ptr<convert::TraceSink> writer;
  std::optional<TraceDatReader> reader;  // the headers as now
  dev_t dev = 0;
  ino_t ino = 0;
  bool finished = false;
};

ConvertSink::ConvertSink(convert::Format format, const std::filesystem::path& path,
                         const TraceDatWriter& meta, uint64_t start_ts)
    : impl_(std::make_unique<Impl>()), path_(path) {
  Impl& m = *impl_;
  try {
    m.reader.emplace(parse_headers(meta, path));
    const convert::WriterOptions wo{.stream = true};
    if (format == convert::Format::ctf)
      m.writer = std::make_unique<convert::CtfWriter>(path, wo);
    else
      m.writer = std::make_unique<convert::PerfettoWriter>(path, wo);
    std::vector<uint32_t> cpus(meta.cpus());
    for (uint32_t i = 0; i < cpus.size(); ++i) cpus[i] = i;
    m.writer->begin(*m.reader, 0, start_ts, cpus);
  } catch (const convert::ConvertOutputError& e) {
    // system_error appends the cause itself: said once, not twice.
    const int code = e.code() != 0 ? e.code() : EIO;
    std::string what = e.what();
    const std::string cause = std::string(": ") + std::strerror(code);
    if (what.ends_with(cause)) what.resize(what.size() - cause.size());
    throw std::system_error(code, std::generic_category(), what);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    m.dev = st.st_dev;
    m.ino = st.st_ino;
  }
}

ConvertSink::~ConvertSink() = default;

int ConvertSink::append(uint32_t cpu, std::span<const std::byte> pages) noexcept {
  Impl& m = *impl_;
  if (m.finished) return EBADF;
  try {
    CpuRecordCursor c = m.reader->page_records(pages, cpu);
    while (const auto r = c.next()) m.writer->record(*r);
    m.writer->end_chunk(cpu);
  } catch (...) {
    return error_code(std::current_exception());
  }
  bytes_ += pages.size();
  return 0;
}

int ConvertSink::rewrite_headers(const TraceDatWriter& meta) noexcept {
  Impl& m = *impl_;
  if (m.finished) return EBADF;
  try {
    TraceDatReader next = parse_headers(meta, path_);  // on failure the old headers stay
    m.reader.emplace(std::move(next));
    m.writer->reload(*m.reader);  // the writer kept nothing of the old reader
  } catch (...) {
    return error_code(std::current_exception());
  }
  return 0;
}

int ConvertSink::check_present() const noexcept {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return errno;
  return st.st_dev == impl_->dev && st.st_ino == impl_->ino ? 0 : ENOENT;
}

int ConvertSink::finalize(const TraceDatWriter& meta) noexcept {
  Impl& m = *impl_;
  if (m.finished) return EBADF;
  int err = rewrite_headers(meta);
  m.finished = true;
  try {
    convert::ConvertStats stats;
    m.writer->finish(stats);
  } catch (...) {
    if (err == 0) err = error_code(std::current_exception());
  }
  return err;
}

}  // namespace tracepipe::record
