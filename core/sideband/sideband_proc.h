#pragma once
// What state synthesis reads from /proc: the threads of this process, their
// names, the memory mappings and the executable. Plain functions over the
// proc files, and a parser of the maps text that tests feed directly.
//
// Consistency (what the kernel guarantees, and what it does not): each read
// is a snapshot of one file at one moment. /proc/self/maps is generated in
// chunks, each under the mm lock, so a mapping created or removed while a
// large file is being read may be missed or seen twice; a thread listed in
// /proc/self/task may exit before its comm is read (reported as "gone").
// Synthesis writes what it read at the moment it read it, in order with the
// events around it, which is the point: a reader of the trace never has to
// guess which /proc state an event belongs to.
//
// Thread-safety: all functions are reentrant. None is async-signal-safe.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace tracepipe {

/// A task name: at most 15 bytes, NUL-padded (the kernel's TASK_COMM_LEN 16).
struct Comm {
  std::array<char, 16> bytes{};
  std::string_view view() const noexcept;
  /// Truncates to 15 bytes, as prctl(PR_SET_NAME) does.
  static Comm from(std::string_view s) noexcept;
  friend bool operator==(const Comm&, const Comm&) = default;
};

/// One line of /proc/PID/maps. Mirrors fs/proc/task_mmu.c: show_map_vma
/// (the text it prints), as perf's MMAP2 record carries it.
struct ProcMapping {
  uint64_t start = 0;  ///< first byte
  uint64_t end = 0;    ///< one past the last byte
  uint64_t pgoff = 0;  ///< file offset in bytes
  uint64_t ino = 0;
  uint32_t prot = 0;   ///< MapProt bits (r/w/x)
  uint32_t flags = 0;  ///< MapFlags::shared or MapFlags::private_ ('s' / 'p')
  uint32_t maj = 0;    ///< device major (hex in the file)
  uint32_t min = 0;    ///< device minor
  std::string path;    ///< "" for anonymous; "[heap]", "/usr/lib/x.so", "... (deleted)"
  uint64_t len() const noexcept { return end - start; }
};

struct MapsParse {
  std::vector<ProcMapping> mappings;
  uint32_t malformed = 0;  ///< lines that do not have the kernel's shape (skipped)
};

/// Parses the text of /proc/PID/maps. Never reads outside `text`; a line
/// that does not parse (bad hex, missing fields, end <= start) is skipped and
/// counted. Leading spaces of the path column are dropped; the rest of the
/// line, spaces included, is the path.
MapsParse parse_proc_maps(std::string_view text);

/// Reads a whole proc file (their st_size is 0, so read until EOF).
struct ProcRead {
  std::string text;
  std::error_code error;  ///< empty on success
};
ProcRead read_proc_file(const char* path);

/// Thread ids of this process (/proc/self/task), ascending.
struct ThreadList {
  std::vector<int32_t> tids;
  std::error_code error;
};
ThreadList list_threads();

/// The kernel's name of thread `tid` of this process (/proc/self/task/TID/comm),
/// or nullopt if the thread no longer exists (or the file cannot be read).
/// `task_dir_fd`: an open O_DIRECTORY descriptor of /proc/self/task to
/// resolve against (saves a path walk per thread), or -1.
std::optional<Comm> read_thread_comm(int32_t tid, int task_dir_fd = -1);

/// The executable (readlink /proc/self/exe), "" if unreadable.
std::string read_exe_path();

}  // namespace tracepipe
