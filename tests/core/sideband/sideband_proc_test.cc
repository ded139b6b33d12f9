// What synthesis reads from /proc: the maps parser (kernel-shaped text and
// bad lines), the thread list, thread names, the executable.
#include <fcntl.h>
#include <sys/mman.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "sideband_test_util.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_sideband_test;

TEST_CASE("sideband proc: maps lines as the kernel prints them", "[sideband][proc]") {
  const std::string text =
      "55d5c4a00000-55d5c4a02000 r--p 00000000 fd:01 1837093                    /usr/bin/cat\n"
      "55d5c4a02000-55d5c4a07000 r-xp 00002000 fd:01 1837093                    /usr/bin/cat\n"
      "55d5c5c1e000-55d5c5c3f000 rw-p 00000000 00:00 0                          [heap]\n"
      "7f1a2b000000-7f1a2b021000 rw-s 00000000 00:05 4242                       /dev/zero "
      "(deleted)\n"
      "7f1a2c000000-7f1a2c001000 ---p 00000000 00:00 0 \n"
      "7ffd3f1e8000-7ffd3f209000 rw-p 00000000 00:00 0                          [stack]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";  // no
                                                                                              // final
                                                                                              // newline
  const MapsParse p = parse_proc_maps(text);
  CHECK(p.malformed == 0);
  REQUIRE(p.mappings.size() == 7);
  const ProcMapping& a = p.mappings[1];
  CHECK(a.start == 0x55d5c4a02000);
  CHECK(a.end == 0x55d5c4a07000);
  CHECK(a.len() == 0x5000);
  CHECK(a.prot == (MapProt::read | MapProt::exec));
  CHECK(a.flags == MapFlags::private_);
  CHECK(a.pgoff == 0x2000);
  CHECK(a.maj == 0xfd);
  CHECK(a.min == 1);
  CHECK(a.ino == 1837093);
  CHECK(a.path == "/usr/bin/cat");
  CHECK(p.mappings[2].path == "[heap]");
  CHECK(p.mappings[2].prot == (MapProt::read | MapProt::write));
  CHECK(p.mappings[3].flags == MapFlags::shared);
  CHECK(p.mappings[3].path == "/dev/zero (deleted)");
  CHECK(p.mappings[3].ino == 4242);
  CHECK(p.mappings[3].maj == 0);
  CHECK(p.mappings[3].min == 5);
  CHECK(p.mappings[4].prot == 0);
  CHECK(p.mappings[4].path.empty());
  CHECK(p.mappings[6].start == 0xffffffffff600000);
  CHECK(p.mappings[6].prot == MapProt::exec);
}

TEST_CASE("sideband proc: malformed maps lines are skipped and counted", "[sideband][proc]") {
  const char* bad[] = {
      "zzzz-1000 r--p 00000000 00:00 0",            // bad start
      "1000 r--p 00000000 00:00 0",                 // no '-'
      "2000-1000 r--p 00000000 00:00 0",            // end < start
      "1000-1000 r--p 00000000 00:00 0",            // empty
      "1000-2000 rwzp 00000000 00:00 0",            // bad perms
      "1000-2000 r--q 00000000 00:00 0",            // bad sharing flag
      "1000-2000 r--p",                             // truncated
      "1000-2000 r--p 00000000 0000 0",             // no ':' in dev
      "1000-2000 r--p 00000000 00:00 12ab /x",      // junk glued to the inode
      "1000-2000 r--p 00000000 100000000:00 0 /x",  // major does not fit 32 bits
      "1000-2000 r-",                               // shorter than the perms
  };
  std::string text;
  for (const char* l : bad) text += std::string(l) + "\n";
  text += "\n\n3000-4000 r--p 00000000 00:00 0 /ok\n";
  const MapsParse p = parse_proc_maps(text);
  CHECK(p.malformed == std::size(bad));
  REQUIRE(p.mappings.size() == 1);
  CHECK(p.mappings[0].path == "/ok");
  // Every prefix of a good line: no crash, and either skipped or parsed.
  const std::string good = "7f1a2c000000-7f1a2c001000 r-xp 00001000 08:02 99   /lib/a b.so";
  for (size_t n = 0; n <= good.size(); ++n) {
    const MapsParse q = parse_proc_maps(std::string_view(good).substr(0, n));
    CHECK(q.mappings.size() + q.malformed == (n == 0 ? 0u : 1u));
  }
  CHECK(parse_proc_maps(good).mappings.at(0).path == "/lib/a b.so");
}

TEST_CASE("sideband proc: this process's maps, threads, names and executable", "[sideband][proc]") {
  // A mapping of our own, with a protection nothing else has next to it.
  const size_t len = 3 * 4096;
  void* p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  const ProcRead r = read_proc_file("/proc/self/maps");
  REQUIRE_FALSE(r.error);
  REQUIRE(r.text.size() > 100);
  const MapsParse mp = parse_proc_maps(r.text);
  CHECK(mp.malformed == 0);
  const auto addr = reinterpret_cast<uint64_t>(p);
  bool found = false;
  for (const ProcMapping& m : mp.mappings)
    if (m.start <= addr && addr < m.end) found = m.prot == MapProt::read && m.end - addr >= len;
  CHECK(found);
  munmap(p, len);

  const std::string exe = read_exe_path();
  CHECK(exe.find("sideband") != std::string::npos);
  bool exe_mapped = false;
  for (const ProcMapping& m : mp.mappings)
    exe_mapped |= m.path == exe && (m.prot & MapProt::exec) != 0;
  CHECK(exe_mapped);

  CHECK(read_proc_file("/proc/self/no-such-file").error == std::errc::no_such_file_or_directory);

  std::atomic<int32_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "proc-test-thr");
    tid = static_cast<int32_t>(gettid());
    while (!stop) std::this_thread::yield();
  });
  while (tid == 0) std::this_thread::yield();
  const ThreadList tl = list_threads();
  CHECK_FALSE(tl.error);
  CHECK(std::is_sorted(tl.tids.begin(), tl.tids.end()));
  CHECK(std::count(tl.tids.begin(), tl.tids.end(), static_cast<int32_t>(gettid())) == 1);
  CHECK(std::count(tl.tids.begin(), tl.tids.end(), tid.load()) == 1);
  const auto c = read_thread_comm(tid);
  REQUIRE(c.has_value());
  CHECK(c->view() == "proc-test-thr");
  const int dirfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
  CHECK(read_thread_comm(tid, dirfd)->view() == "proc-test-thr");
  CHECK_FALSE(read_thread_comm(0x7ffffff0, dirfd).has_value());
  close(dirfd);
  CHECK_FALSE(read_thread_comm(0x7ffffff0).has_value());
  stop = true;
  t.join();
}

TEST_CASE("sideband proc: Comm truncates to 15 bytes and stops at a NUL", "[sideband][proc]") {
  CHECK(Comm::from("short").view() == "short");
  CHECK(Comm::from("exactly15bytes!").view() == "exactly15bytes!");
  CHECK(Comm::from("sixteen-bytes-xx").view() == "sixteen-bytes-x");
  CHECK(Comm::from(std::string_view("ab\0cd", 5)).view() == "ab");
  const Comm c = Comm::from(std::string_view("ab\0cd", 5));
  CHECK(c.bytes[3] == '\0');  // nothing after the NUL survives
  CHECK(Comm::from("").view().empty());
  CHECK(Comm::from("x") == Comm::from("x"));
}
