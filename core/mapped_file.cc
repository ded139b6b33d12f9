#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace tracepipe {

MappedFile MappedFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path.string());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "cannot stat " + path.string());
  }
  MappedFile m;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw std::system_error(e, std::generic_category(), "cannot map " + path.string());
    }
    m.data_ = static_cast<const std::byte*>(p);
    m.size_ = static_cast<size_t>(st.st_size);
    m.mapped_ = true;
  }
  ::close(fd);
  return m;
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
    o.data_ = nullptr;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() noexcept {
  if (mapped_) ::munmap(const_cast<std::byte*>(data_), size_);
  mapped_ = false;
  data_ = nullptr;
  size_ = 0;
  owned_.clear();
}

}  // namespace tracepipe
