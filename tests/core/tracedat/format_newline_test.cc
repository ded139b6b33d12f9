// Kernel format files whose print fmt string spans lines (a "\n" in the
// TP_printk source arrives as a real newline inside the quotes: ext4's
// ext4_fc_stats and ext4_getfsmap_*), and what happens to a format that does
// not parse: add_format_dir and TraceDatReader skip it and say so instead of
// refusing the whole directory or file.
//
// tests/core/tracedat/data/*.format are verbatim copies of
// /sys/kernel/tracing/events/ext4/<event>/format from a 6.18 kernel.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tracedat_test_util.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/tracedat/print_fmt.h"
#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

namespace {

// A temp directory, removed with its contents when the object dies.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) : path(TempPath(name).path) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string data_file(const char* name) {
  return tp_test::read_file(std::filesystem::path(TP_SOURCE_DIR) / "tests/core/tracedat/data" /
                            name);
}

// An ext4_fc_stats payload: dev 8:3 (the kernel's MKDEV: major << 20 | minor),
// fc_ineligible_rc[i] = 10 * i, then fc_commits, ineligible commits, numblks.
std::vector<std::byte> fc_stats_payload(uint16_t id, int32_t pid) {
  std::vector<std::byte> p(80);
  const uint16_t type = id;
  std::memcpy(&p[0], &type, 2);
  std::memcpy(&p[4], &pid, 4);
  const uint32_t dev = (8u << 20) | 3u;
  std::memcpy(&p[8], &dev, 4);
  for (uint32_t i = 0; i < 10; ++i) {
    const uint32_t rc = 10 * i;
    std::memcpy(&p[12 + 4 * i], &rc, 4);
  }
  const uint64_t commits = 7, ineligible = 2, blocks = 123;
  std::memcpy(&p[56], &commits, 8);
  std::memcpy(&p[64], &ineligible, 8);
  std::memcpy(&p[72], &blocks, 8);
  return p;
}

const char kFcStatsLine[] =
    "dev 8,3 fc ineligible reasons:\n"
    "XATTR:0, CROSS_RENAME:10, JOURNAL_FLAG_CHANGE:20, NO_MEM:30, SWAP_BOOT:40, RESIZE:50, "
    "RENAME_DIR:60, "
    "FALLOC_RANGE:70, INODE_JOURNAL_DATA:80, ENCRYPTED_FILENAME:90num_commits:7, ineligible: 2, "
    "numblks: 123";

// An ext4_getfsmap_mapping payload (its print fmt string ends in a newline).
std::vector<std::byte> getfsmap_payload(uint16_t id, int32_t pid) {
  std::vector<std::byte> p(48);
  std::memcpy(&p[0], &id, 2);
  std::memcpy(&p[4], &pid, 4);
  const uint32_t dev = (8u << 20) | 3u, keydev = (259u << 20) | 1u;
  std::memcpy(&p[8], &dev, 4);
  std::memcpy(&p[12], &keydev, 4);
  const uint64_t block = 5, len = 6, owner = static_cast<uint64_t>(-3), flags = 0x10;
  std::memcpy(&p[16], &block, 8);
  std::memcpy(&p[24], &len, 8);
  std::memcpy(&p[32], &owner, 8);
  std::memcpy(&p[40], &flags, 8);
  return p;
}

// A format whose text cannot parse once printed: a second line after the
// closed print fmt string ("text after 'print fmt:'").
EventFormat broken_format() {
  EventFormat f;
  f.system = "bad";
  f.name = "broken";
  f.id = 4000;
  f.common_fields = kernel_common_fields();
  f.fields = {{"int", "x", 8, 4, true}};
  f.print_fmt = "\"x=%d\", REC->x\nstray";
  return f;
}

}  // namespace

TEST_CASE("format newline: ext4_fc_stats's multi-line print fmt parses and round-trips",
          "[tracedat][format]") {
  const std::string text = data_file("ext4__ext4_fc_stats.format");
  const EventFormat ev = parse_event_format(text, "ext4");
  CHECK(ev.name == "ext4_fc_stats");
  CHECK(ev.id == 1159);
  CHECK(ev.common_fields == kernel_common_fields());
  REQUIRE(ev.fields.size() == 5);
  CHECK(ev.fields[0] == FormatField{"dev_t", "dev", 8, 4, false});
  CHECK(ev.fields[1] == FormatField{"unsigned int[10]", "fc_ineligible_rc", 12, 40, false});
  CHECK(ev.fields[1].array_length() == 10u);
  CHECK(ev.fields[2] == FormatField{"unsigned long", "fc_commits", 56, 8, false});
  CHECK(ev.fields[3] == FormatField{"unsigned long", "fc_ineligible_commits", 64, 8, false});
  CHECK(ev.fields[4] == FormatField{"unsigned long", "fc_numblks", 72, 8, false});
  // The newline is inside the string, the arguments follow on the next line.
  CHECK_THAT(ev.print_fmt, Catch::StartsWith("\"dev %d,%d fc ineligible reasons:\n%s:%u, %s:%u"));
  CHECK_THAT(ev.print_fmt,
             Catch::EndsWith("REC->fc_commits, REC->fc_ineligible_commits, REC->fc_numblks"));
  CHECK(std::count(ev.print_fmt.begin(), ev.print_fmt.end(), '\n') == 1);
  CHECK(to_format_text(ev) == text);

  // The print fmt compiles, and renders the newline literally, like the
  // kernel's own trace output.
  const PrintFmt pf(ev);
  INFO(pf.error());
  REQUIRE(pf.ok());
  CHECK(pf.render(fc_stats_payload(1159, 1)) == kFcStatsLine);
}

TEST_CASE("format newline: ext4_getfsmap_mapping ends its string with the newline",
          "[tracedat][format]") {
  const std::string text = data_file("ext4__ext4_getfsmap_mapping.format");
  const EventFormat ev = parse_event_format(text, "ext4");
  CHECK(ev.name == "ext4_getfsmap_mapping");
  REQUIRE(ev.fields.size() == 6);
  CHECK(ev.fields[5] == FormatField{"u64", "flags", 40, 8, false});
  CHECK_THAT(ev.print_fmt,
             Catch::StartsWith(
                 "\"dev %d:%d keydev %d:%d block %llu len %llu owner %lld flags 0x%llx\n\", "));
  CHECK(to_format_text(ev) == text);
  CHECK(PrintFmt(ev).ok());
}

TEST_CASE("format newline: multi-line strings, and what stays an error", "[tracedat][format]") {
  const std::string head =
      "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n";
  // Escaped quotes, a character literal holding a quote, CRLF inside.
  const EventFormat a =
      parse_event_format(head + "print fmt: \"a=\\\"%d\nb\", REC->a, '\"'\n\n", "s");
  CHECK(a.print_fmt == "\"a=\\\"%d\nb\", REC->a, '\"'");
  const EventFormat b = parse_event_format(head + "print fmt: \"a\r\nb\", REC->a\r\n", "s");
  CHECK(b.print_fmt == "\"a\nb\", REC->a");

  struct Case {
    std::string text;
    uint32_t line;
    const char* needle;
  };
  const Case cases[] = {
      // Text after a multi-line print fmt: the line number counts its lines.
      {head + "print fmt: \"a\nb\", REC->a\nmore\n", 8, "text after 'print fmt:'"},
      // A string still open at the end of the text is no multi-line string.
      {head + "print fmt: \"a\nmore\n", 7, "text after 'print fmt:'"},
      {head + "print fmt: \"a\n\nmore", 8, "text after 'print fmt:'"},
      {head + "print fmt: \"a\"\nprint fmt: \"b\"\n", 7, "second 'print fmt:'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    try {
      parse_event_format(c.text, "sys");
      FAIL("accepted");
    } catch (const FormatError& e) {
      CHECK(e.line() == c.line);
      CHECK_THAT(e.what(), Catch::Contains(c.needle));
    }
  }
  // Unterminated on the last line with nothing after it: accepted as before
  // (the print fmt itself then fails to compile and records fall back to the
  // field list).
  const EventFormat open = parse_event_format(head + "print fmt: \"a, REC->a\n\n", "s");
  CHECK(open.print_fmt == "\"a, REC->a");
  CHECK_FALSE(PrintFmt(open).ok());
}

TEST_CASE("format newline: add_format_dir keeps the good formats and lists the bad ones",
          "[tracedat][format]") {
  const TempDir dir("format_dir");
  namespace fs = std::filesystem;
  fs::create_directories(dir.path / "ext4" / "ext4_fc_stats");
  fs::create_directories(dir.path / "bad" / "broken");
  fs::create_directories(dir.path / "bad" / "no_common");
  std::ofstream(dir.path / "ext4" / "ext4_fc_stats" / "format")
      << data_file("ext4__ext4_fc_stats.format");
  std::ofstream(dir.path / "bad" / "broken" / "format") << to_format_text(broken_format());
  EventFormat no_common = broken_format();
  no_common.name = "no_common";
  no_common.id = 4001;
  no_common.common_fields.pop_back();
  no_common.print_fmt = "\"x=%d\", REC->x";
  std::ofstream(dir.path / "bad" / "no_common" / "format") << to_format_text(no_common);

  Registry reg;
  const FormatDirLoad load = reg.add_format_dir(dir.path);
  REQUIRE(load.events.size() == 1);
  CHECK(load.events[0]->full_name() == "ext4:ext4_fc_stats");
  CHECK(load.events[0]->id() == 1159);
  REQUIRE(load.skipped.size() == 2);
  CHECK_THAT(load.skipped[0],
             Catch::StartsWith("bad/broken: format line 12: text after 'print fmt:': 'stray'"));
  CHECK_THAT(load.skipped[1],
             Catch::StartsWith("bad/no_common: event bad:no_common: common fields differ"));
  CHECK(reg.find("bad:broken") == nullptr);
  CHECK(reg.size() == 1);

  // Conflicts with registered events still throw (they are no parse problem).
  const TempDir flat("format_dir_flat");
  EventFormat other = parse_event_format(data_file("ext4__ext4_getfsmap_mapping.format"), "ext4");
  other.id = 1159;  // taken by ext4_fc_stats
  std::ofstream(flat.path / "ext4__ext4_getfsmap_mapping.format") << to_format_text(other);
  CHECK_THROWS_WITH(reg.add_format_dir(flat.path),
                    Catch::Contains("ID 1159 is already used by ext4:ext4_fc_stats"));
}

TEST_CASE(
    "format newline: a trace.dat with ext4_fc_stats opens, a broken format is skipped with a "
    "warning",
    "[tracedat][reader]") {
  const EventFormat fc = parse_event_format(data_file("ext4__ext4_fc_stats.format"), "ext4");
  const EventFormat gm =
      parse_event_format(data_file("ext4__ext4_getfsmap_mapping.format"), "ext4");
  TraceDatWriter w({.cpus = 2});
  w.add_format(fc);
  w.add_format(gm);
  w.add_format(broken_format());
  w.set_cmdline(77, "jbd2/sda3-8");
  w.add_record(0, 1'000'000'000, fc_stats_payload(1159, 77));
  w.add_record(0, 1'500'000'000, getfsmap_payload(1168, 77));
  std::vector<std::byte> bad(12);
  const uint16_t bad_id = 4000;
  std::memcpy(&bad[0], &bad_id, 2);
  const int32_t bad_pid = 77;
  std::memcpy(&bad[4], &bad_pid, 4);
  w.add_record(1, 2'000'000'000, bad);

  const TraceDatReader r(MappedFile::copy_of(w.to_bytes()));
  REQUIRE(r.formats().size() == 2);
  CHECK(r.formats()[0] == fc);
  CHECK(r.formats()[1] == gm);
  CHECK(r.format(1159) == &r.formats()[0]);
  CHECK(r.format(4000) == nullptr);
  REQUIRE(r.warnings().size() == 1);
  CHECK_THAT(r.warnings()[0], Catch::StartsWith("event formats at offset "));
  CHECK_THAT(r.warnings()[0],
             Catch::EndsWith(
                 "bad/broken: format line 12: text after 'print fmt:': 'stray'; format skipped"));

  TraceReport rep(r, ReportOptions{true, true});
  auto m = r.records();
  fmt::memory_buffer out;
  while (auto rec = m.next()) rep.format(*rec, out);
  // The string's trailing newline adds no blank line (trace-cmd report
  // drops one trailing newline); the skipped format's record is unknown.
  CHECK(fmt::to_string(out) ==
        fmt::format("     jbd2/sda3-8-77    [000]     1.000000000: ext4_fc_stats:        {}\n"
                    "     jbd2/sda3-8-77    [000]     1.500000000: ext4_getfsmap_mapping: dev 8:3 "
                    "keydev 259:1 "
                    "block 5 len 6 owner -3 flags 0x10\n"
                    "     jbd2/sda3-8-77    [001]     2.000000000: [UNKNOWN TYPE 4000]\n",
                    kFcStatsLine));

  // trace-cmd report prints the ext4 records the same way (it parses the
  // broken format leniently, so that line differs by design).
  if (!have_trace_cmd()) return;
  const TempPath file("format_newline.dat");
  w.write(file.path);
  const auto want = lines(run("trace-cmd report -t '" + file.path.string() + "'"));
  const auto got = lines(report_text(file.path, ReportOptions{true, true}));
  REQUIRE(want.size() == 5);  // cpus=, fc_stats (2 lines), getfsmap, broken
  REQUIRE(got.size() == 5);
  for (size_t i = 0; i < 4; ++i) CHECK(got[i] == want[i]);
  CHECK_THAT(want[4], Catch::EndsWith("broken:               x=0"));
  CHECK_THAT(got[4], Catch::EndsWith("[UNKNOWN TYPE 4000]"));
}
