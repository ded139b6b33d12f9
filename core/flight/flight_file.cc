// FlightFile: creating, mapping and describing a flight file.
#include "tracepipe/core/flight/flight_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

namespace tracepipe::flight {

namespace {

[[noreturn]] void fail(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

std::string file_stem(std::string_view instance) {
  std::string s;
  for (const char c : instance)
    s += (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-')
             ? c
             : '_';
  if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
  return s;
}

void copy_cstr(char* dst, size_t cap, std::string_view s) {
  const size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

constexpr size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

uint32_t crc32_bytes(const void* data, size_t n, uint32_t crc) noexcept {
  const auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {  // zlib takes uInt lengths
    const uInt chunk = n > (1u << 30) ? (1u << 30) : static_cast<uInt>(n);
    crc = static_cast<uint32_t>(::crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

std::unique_ptr<FlightFile> FlightFile::create(const FlightFileConfig& config) {
  const buffers::RingMemoryLayout layout =
      buffers::ring_memory_layout(config.ring, config.mode);  // throws ConfigError
  std::unique_ptr<FlightFile> f(new FlightFile());
  std::error_code ec;
  std::filesystem::create_directories(config.dir, ec);
  if (ec) fail(ec.value(), "flight recorder: cannot create directory " + config.dir.string());
  const pid_t pid = getpid();
  f->path_ = config.dir / (file_stem(config.instance) + "-" + std::to_string(pid) + kSuffix);
  const std::string p = f->path_.string();
  ::unlink(p.c_str());  // a file left by an earlier process with our pid
  const int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail(errno, "flight recorder: cannot create " + p);
  if (config.meta_capacity < 4096)
    throw std::invalid_argument("flight recorder: metadata log of " +
                                std::to_string(config.meta_capacity) + " bytes, at least 4096");
  f->meta_capacity_ = round_up(config.meta_capacity, 4096);
  f->ring_offset_ = kHeaderBytes + f->meta_capacity_;
  f->ring_size_ = round_up(layout.total, 4096);
  f->size_ = f->ring_offset_ + f->ring_size_;
  // Reserve every block now: a full tmpfs must fail here, not as SIGBUS in a writer.
  if (const int e = ::posix_fallocate(fd, 0, static_cast<off_t>(f->size_)); e != 0) {
    ::close(fd);
    ::unlink(p.c_str());
    fail(e, "flight recorder: cannot reserve " + std::to_string(f->size_) + " bytes for " + p);
  }
  void* m = ::mmap(nullptr, f->size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (m == MAP_FAILED) {
    ::unlink(p.c_str());
    fail(map_err, "flight recorder: cannot map " + p);
  }
  f->base_ = static_cast<std::byte*>(m);

  FileHeader& h = f->header();
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.endian = kEndianMark;
  h.header_bytes = kHeaderBytes;
  h.file_size = f->size_;
  h.cpus = layout.cpus;
  h.nr_subbufs = layout.nr_subbufs;
  h.subbuf_size = layout.subbuf_size;
  h.ring_mode = config.mode == buffers::OverflowMode::overwrite ? kModeOverwrite : kModeDropNewest;
  h.cpu_local = config.cpu_local ? 1 : 0;
  h.ring_offset = f->ring_offset_;
  h.ring_size = f->ring_size_;
  h.cpu_state_offset = layout.cpu_state_offset;
  h.cpu_state_size = layout.cpu_state_size;
  h.positions_offset = layout.positions_offset;
  h.pages_offset = layout.pages_offset;
  h.pages_per_cpu = layout.pages_per_cpu;
  h.slots_offset = layout.slots_offset;
  h.spares_offset = layout.spares_offset;
  h.nr_spares = layout.nr_spares;
  h.meta_offset = kHeaderBytes;
  h.meta_capacity = f->meta_capacity_;
  copy_cstr(h.clock, sizeof h.clock, config.clock);
  h.clock_in_ns = config.clock_in_ns ? 1 : 0;
  h.pid = pid;
  char comm[17] = {};
  (void)::prctl(PR_GET_NAME, comm, 0, 0, 0);
  copy_cstr(h.comm, sizeof h.comm, comm);
  copy_cstr(h.instance, sizeof h.instance, config.instance);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  h.created_realtime_ns =
      static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  h.header_crc = crc32_bytes(&h, offsetof(FileHeader, header_crc));
  std::atomic_ref<uint32_t>(h.state).store(static_cast<uint32_t>(FileState::creating),
                                           std::memory_order_release);
  f->add_cmdline(pid, comm);
  return f;
}

FlightFile::~FlightFile() {
  if (base_ == nullptr) return;
  // A forked child shares the mapping: only the creator closes and removes
  // the file (a child's exit() must not take the parent's trace away).
  if (::getpid() == header().pid) {
    std::atomic_ref<uint32_t>(header().state)
        .store(static_cast<uint32_t>(FileState::closed), std::memory_order_release);
    ::munmap(base_, size_);
    ::unlink(path_.c_str());
    return;
  }
  ::munmap(base_, size_);
}

void FlightFile::set_live() noexcept {
  std::atomic_ref<uint32_t>(header().state)
      .store(static_cast<uint32_t>(FileState::live), std::memory_order_release);
}

bool FlightFile::append(MetaKind kind, std::string_view bytes) {
  FileHeader& h = header();
  std::atomic_ref<uint64_t> used(h.meta_used);
  const uint64_t at = used.load(std::memory_order_relaxed);
  const size_t need = sizeof(MetaEntry) + round_up(bytes.size(), 8);
  if (bytes.size() > UINT32_MAX || at + need > meta_capacity_) {
    std::atomic_ref<uint32_t>(h.meta_dropped).fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  MetaEntry e{static_cast<uint32_t>(kind), static_cast<uint32_t>(bytes.size()), 0, 0};
  uint32_t crc = crc32_bytes(&e.kind, sizeof e.kind);
  crc = crc32_bytes(&e.len, sizeof e.len, crc);
  e.crc = crc32_bytes(bytes.data(), bytes.size(), crc);
  std::byte* dst = base_ + kHeaderBytes + at;
  std::memcpy(dst, &e, sizeof e);
  std::memcpy(dst + sizeof e, bytes.data(), bytes.size());
  // The padding is already zero (fallocate'd file, the log only grows).
  used.store(at + need, std::memory_order_release);
  return true;
}

bool FlightFile::add_format(const EventFormat& format) {
  const std::lock_guard lk(mu_);
  if (formats_.contains(format.id)) return true;
  std::string bytes(format.system);
  bytes += '\0';
  bytes += to_format_text(format);
  if (!append(MetaKind::format, bytes)) return false;
  formats_.insert(format.id);
  return true;
}

bool FlightFile::add_cmdline(int32_t pid, std::string_view comm) {
  const std::lock_guard lk(mu_);
  std::pair<int32_t, std::string> key{pid, std::string(comm)};
  if (cmdlines_.contains(key)) return true;
  std::string bytes(sizeof pid, '\0');
  std::memcpy(bytes.data(), &pid, sizeof pid);
  bytes += comm;
  if (!append(MetaKind::cmdline, bytes)) return false;
  cmdlines_.insert(std::move(key));
  return true;
}

}  // namespace tracepipe::flight
