#include "tracepipe/core/files/mapped_file.h"

#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "tracepipe/core/files/input_file.h"

namespace tracepipe {

MappedFile MappedFile::open(const std::filesystem::path& path) {
  // Opened without blocking and checked on the descriptor (not by a stat of
  // the path first, which a FIFO swapped in afterwards would defeat).
  const RegularFile f = RegularFile::open(path);
  MappedFile m;
  if (struct stat st{}; ::fstat(f.fd(), &st) == 0) {
    m.dev_ = static_cast<uint64_t>(st.st_dev);
    m.ino_ = static_cast<uint64_t>(st.st_ino);
    m.has_id_ = true;
  }
  if (f.size() > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(f.size()), PROT_READ, MAP_PRIVATE, f.fd(), 0);
    if (p == MAP_FAILED)
      throw InputFileError(path, fmt::format("cannot map it: {}", std::strerror(errno)));
    m.data_ = static_cast<const std::byte*>(p);
    m.size_ = static_cast<size_t>(f.size());
    m.mapped_ = true;
  }
  return m;  // the mapping outlives the descriptor
}

MappedFile MappedFile::copy_of(std::span<const std::byte> bytes) {
  MappedFile m;
  m.owned_.assign(bytes.begin(), bytes.end());
  m.data_ = m.owned_.data();
  m.size_ = m.owned_.size();
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    owned_ = std::move(o.owned_);
    mapped_ = std::exchange(o.mapped_, false);
    size_ = std::exchange(o.size_, 0);
    data_ = mapped_ ? std::exchange(o.data_, nullptr) : owned_.data();
    has_id_ = std::exchange(o.has_id_, false);
    dev_ = o.dev_;
    ino_ = o.ino_;
    o.data_ = nullptr;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

bool MappedFile::is_file(const std::filesystem::path& path) const noexcept {
  struct stat st {};
  return has_id_ && ::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == dev_ &&
         static_cast<uint64_t>(st.st_ino) == ino_;
}

void MappedFile::reset() noexcept {
  if (mapped_) ::munmap(const_cast<std::byte*>(data_), size_);
  mapped_ = false;
  has_id_ = false;
  data_ = nullptr;
  size_ = 0;
  owned_.clear();
}

}  // namespace tracepipe
