#include "tracepipe/core/record/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "tracepipe/core/files/output_file.h"
#include "tracepipe/core/tracedat/tracedat_v7_writer.h"

namespace tracepipe::record {

TraceFile::TraceFile(const TraceFileOptions& options, const TraceDatWriter& meta)
    : path_(options.path),
      page_size_(meta.page_size()),
      ext_(meta.cpus()),
      reserved_(meta.cpus(), 0),
      v7_(options.v7) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "cannot create " + path_.string());
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  const std::vector<std::byte> h = meta.header_bytes(ext_, &table_off_);
  // Room for the headers to grow (cmdlines and formats learnt later): twice
  // their size plus 64 KiB, preallocated so a rewrite never needs a block.
  const uint64_t ps = page_size_;
  data_base_ = (2 * h.size() + 65536 + ps - 1) / ps * ps;
  const uint32_t cpus = meta.cpus();
  region_ = options.cpu_region;
  if (region_ == 0) region_ = std::min<uint64_t>(uint64_t{16} << 30, (uint64_t{1} << 40) / cpus);
  region_ = std::max<uint64_t>(region_ / ps * ps, ps);
  for (uint32_t i = 0; i < cpus; ++i) ext_[i].offset = data_base_ + i * region_;
  const std::vector<std::byte> h2 = meta.header_bytes(ext_, &table_off_);
  int err = 0;
  if (int e = ::posix_fallocate(fd_, 0, static_cast<off_t>(data_base_));
      e != 0 && e != EOPNOTSUPP && e != EINVAL && e != ENODEV && e != ESPIPE)
    err = e;
  if (err == 0) err = pwrite_all(fd_, {h2.data(), h2.size()}, 0);
  if (err != 0) {
    ::close(fd_);
    fd_ = -1;
    throw std::system_error(err, std::generic_category(), "cannot write " + path_.string());
  }
}

TraceFile::~TraceFile() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t TraceFile::total_bytes() const noexcept {
  uint64_t n = 0;
  for (const auto& e : ext_) n += e.size;
  return n;
}

int TraceFile::write_table_entry(uint32_t cpu) noexcept {
  uint64_t v[2] = {ext_[cpu].offset, ext_[cpu].size};
  return pwrite_all(fd_, {reinterpret_cast<const std::byte*>(v), sizeof v},
                    table_off_ + 16 * uint64_t{cpu});
}

int TraceFile::append(uint32_t cpu, std::span<const std::byte> pages) noexcept {
  if (fd_ < 0) return EBADF;
  if (cpu >= ext_.size() || pages.size() % page_size_ != 0) return EINVAL;
  if (pages.empty()) return 0;
  TraceDatWriter::CpuExtent& e = ext_[cpu];
  const uint64_t region_end = data_base_ + (uint64_t{cpu} + 1) * region_;
  if (e.offset + e.size + pages.size() > region_end) return EFBIG;
  if (int err = pwrite_all(fd_, {pages.data(), pages.size()}, e.offset + e.size); err != 0)
    return err;  // (1)
  e.size += pages.size();
  if (int err = write_table_entry(cpu); err != 0) {  // (2)
    e.size -= pages.size();
    return err;
  }
  return 0;
}

int TraceFile::preallocate(uint32_t cpu, uint64_t bytes) noexcept {
  if (fd_ < 0) return EBADF;
  if (cpu >= ext_.size()) return EINVAL;
  const TraceDatWriter::CpuExtent& e = ext_[cpu];
  const uint64_t ps = page_size_;
  const uint64_t want = std::min<uint64_t>((e.size + bytes + ps - 1) / ps * ps, region_);
  if (want <= reserved_[cpu]) return 0;
  // fallocate, not posix_fallocate: glibc's fallback writes zeros where the
  // file system has no fallocate, which would cost more than it saves.
  if (::fallocate(fd_, 0, static_cast<off_t>(e.offset + reserved_[cpu]),
                  static_cast<off_t>(want - reserved_[cpu])) != 0)
    return errno;
  reserved_[cpu] = want;
  return 0;
}

int TraceFile::rewrite_headers(const TraceDatWriter& meta) noexcept {
  if (fd_ < 0) return EBADF;
  try {
    size_t table = 0;
    const std::vector<std::byte> h = meta.header_bytes(ext_, &table);
    if (h.size() > data_base_) return EFBIG;
    if (int err = pwrite_all(fd_, {h.data(), h.size()}, 0); err != 0) return err;
    table_off_ = table;
    return 0;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

int TraceFile::check_present() const noexcept {
  if (fd_ < 0) return EBADF;
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return errno;
  if (st.st_nlink == 0) return ENOENT;
  struct stat named {};
  if (::stat(path_.c_str(), &named) != 0) return errno == ENOENT ? ENOENT : errno;
  if (named.st_dev != dev_ || named.st_ino != ino_) return ENOENT;  // replaced
  return 0;
}

// Moves `cpu`'s data down to `to` (< its offset), in chunks that never
// overlap their destination, then points its table entry there.
int TraceFile::move_down(uint32_t cpu, uint64_t to) noexcept {
  TraceDatWriter::CpuExtent& e = ext_[cpu];
  const uint64_t gap = e.offset - to;
  uint64_t done = 0;
  std::vector<std::byte> buf;
  while (done < e.size) {
    const uint64_t n = std::min<uint64_t>({e.size - done, gap, uint64_t{8} << 20});
    loff_t in = static_cast<loff_t>(e.offset + done), out = static_cast<loff_t>(to + done);
    ssize_t c = ::copy_file_range(fd_, &in, fd_, &out, n, 0);
    if (c < 0 && errno == EINTR) continue;
    if (c <= 0) {  // not supported here (or a short copy): read and write
      if (c < 0 && errno == ENOSPC) return ENOSPC;
      try {
        buf.resize(n);
      } catch (const std::bad_alloc&) {
        return ENOMEM;
      }
      const ssize_t r = ::pread(fd_, buf.data(), n, static_cast<off_t>(e.offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      if (r == 0) return EIO;
      if (int err = pwrite_all(fd_, {buf.data(), static_cast<size_t>(r)}, to + done); err != 0)
        return err;
      c = r;
    }
    done += static_cast<uint64_t>(c);
  }
  const uint64_t old = e.offset;
  e.offset = to;
  if (int err = write_table_entry(cpu); err != 0) {
    e.offset = old;
    return err;
  }
  return 0;
}

// Disk full (ENOSPC from move_down): moves `cpu`'s data down one page at a
// time, returning each source page to the file system once copied, so the
// disk needs room for one page only. Not atomic: until the table entry is
// rewritten at the end, a reader (or a crash) sees the pages already moved
// as zeros, which trace.dat readers take for empty pages.
int TraceFile::move_down_page_by_page(uint32_t cpu, uint64_t to) noexcept {
  TraceDatWriter::CpuExtent& e = ext_[cpu];
  std::vector<std::byte> page;
  try {
    page.resize(page_size_);
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
  for (uint64_t done = 0; done < e.size; done += page_size_) {
    const ssize_t r = ::pread(fd_, page.data(), page_size_, static_cast<off_t>(e.offset + done));
    if (r != static_cast<ssize_t>(page_size_)) return r < 0 ? errno : EIO;
    if (int err = pwrite_all(fd_, {page.data(), page.size()}, to + done); err != 0) return err;
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(e.offset + done), static_cast<off_t>(page_size_));
  }
  e.offset = to;
  return write_table_entry(cpu);
}

// Returns to the file system the blocks of the header reserve after what
// the final headers (`meta`'s) take, rounded up to a page: zeros there read
// the same from a hole, and the final headers are written into blocks that
// stay allocated. A move on a disk full to its last block needs that room.
void TraceFile::release_header_reserve(const TraceDatWriter& meta) noexcept {
  uint64_t used = data_base_;
  try {
    used = meta.header_bytes(ext_).size();
  } catch (const std::bad_alloc&) {
    return;
  }
  const uint64_t from = (used + page_size_ - 1) / page_size_ * page_size_;
  if (from < data_base_)
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                      static_cast<off_t>(data_base_ - from));
}

// The version 7 file, written beside the recording and renamed over it.
int TraceFile::finalize_v7(const TraceDatWriter& meta) noexcept {
  try {
    const std::filesystem::path tmp = v7_temp_path(path_);
    const int out = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return errno;
    std::vector<V7CpuData> cpus(ext_.size());
    for (size_t cpu = 0; cpu < ext_.size(); ++cpu) {
      cpus[cpu].size = ext_[cpu].size;
      const uint64_t base = ext_[cpu].offset;
      cpus[cpu].read = [this, base](uint64_t at, std::span<std::byte> dst) -> int {
        size_t done = 0;
        while (done < dst.size()) {
          const ssize_t r = ::pread(fd_, dst.data() + done, dst.size() - done,
                                    static_cast<off_t>(base + at + done));
          if (r < 0 && errno == EINTR) continue;
          if (r < 0) return errno;
          if (r == 0) return EIO;
          done += static_cast<size_t>(r);
        }
        return 0;
      };
    }
    int err = write_tracedat_v7(out, meta, *v7_, cpus);
    if (::close(out) != 0 && err == 0) err = errno;
    if (err == 0 && ::rename(tmp.c_str(), path_.c_str()) != 0) err = errno;
    if (err != 0) ::unlink(tmp.c_str());
    return err;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

int TraceFile::finalize(const TraceDatWriter& meta) noexcept {
  if (fd_ < 0) return EBADF;
  if (v7_) {
    if (const int err = finalize_v7(meta); err == 0) {
      ::close(fd_);
      fd_ = -1;
      return 0;
    } else {
      v7_.reset();
      // The recording stays, as version 6.
      kept_v6_ = finalize(meta) == 0;
      return err;
    }
  }
  int first = 0;
  // Space preallocated and not filled: released first (it also makes room
  // for the compaction on a full disk).
  for (uint32_t cpu = 0; cpu < ext_.size(); ++cpu) {
    const TraceDatWriter::CpuExtent& e = ext_[cpu];
    if (reserved_[cpu] > e.size) {
      const int r = ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                static_cast<off_t>(e.offset + e.size),
                                static_cast<off_t>(reserved_[cpu] - e.size));
      if (r != 0 && first == 0 && errno != EOPNOTSUPP) first = errno;
      reserved_[cpu] = e.size;
    }
  }
  // Blocks after each CPU's data (a write cut short by a full disk) are
  // returned first: they are not in the table, and the moves below may need
  // the room.
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    for (uint32_t cpu = 0; cpu < ext_.size(); ++cpu) {
      const uint64_t from = ext_[cpu].offset + ext_[cpu].size;
      const uint64_t to = std::min<uint64_t>(data_base_ + (uint64_t{cpu} + 1) * region_,
                                             static_cast<uint64_t>(st.st_size));
      if (to > from)
        (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                          static_cast<off_t>(to - from));
    }
  }
  uint64_t end = data_base_ + ext_[0].size;
  bool compact = true;
  bool reserve_released = false;
  for (uint32_t cpu = 1; cpu < ext_.size(); ++cpu) {
    TraceDatWriter::CpuExtent& e = ext_[cpu];
    if (compact && e.size != 0 && e.offset > end) {
      int err = move_down(cpu, end);
      if (err == ENOSPC && !reserve_released) {
        // The disk is full to its last block: the header reserve's part
        // that the final headers do not use gives the room for one page.
        release_header_reserve(meta);
        reserve_released = true;
      }
      if (err == ENOSPC) err = move_down_page_by_page(cpu, end);  // needs room for one page only
      if (err != 0) {
        first = err;
        compact = false;  // the rest stays where it is: valid, sparse
      }
    }
    if (e.size == 0) e.offset = compact ? end : e.offset;
    end = std::max(end, e.offset + e.size);
  }
  if (int err = rewrite_headers(meta); err != 0 && first == 0) first = err;
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0 && first == 0) first = errno;
  if (::close(fd_) != 0 && first == 0) first = errno;
  fd_ = -1;
  return first;
}

}  // namespace tracepipe::record
