#include "tracepipe/core/events/event_format.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_support.h"

using namespace tracepipe;

namespace {
const char* const kSwitchText =
    "name: sched_switch\n"
    "ID: 372\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n"
    "\tfield:const char * filename;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long args[];\toffset:40;\tsize:0;\tsigned:0;\n"
    "\n"
    "print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";
}  // namespace

TEST_CASE("event_format: parses fields the way the kernel stores them", "[events][format]") {
  const EventFormat ev = parse_event_format(kSwitchText, "sched");
  CHECK(ev.system == "sched");
  CHECK(ev.name == "sched_switch");
  CHECK(ev.id == 372);
  REQUIRE(ev.common_fields == kernel_common_fields());
  REQUIRE(ev.fields.size() == 5);
  CHECK(ev.fields[0] == FormatField{"char[16]", "prev_comm", 8, 16, false});
  CHECK(ev.fields[0].is_array());
  CHECK(ev.fields[0].is_string());
  CHECK(ev.fields[0].array_length() == 16u);
  CHECK(ev.fields[0].element_type() == "char");
  CHECK(ev.fields[1] == FormatField{"pid_t", "prev_pid", 24, 4, true});
  CHECK_FALSE(ev.fields[1].is_array());
  CHECK(ev.fields[2] == FormatField{"__data_loc char[]", "name", 28, 4, false});
  CHECK(ev.fields[2].is_dynamic());
  CHECK_FALSE(ev.fields[2].is_rel_loc());
  CHECK(ev.fields[2].is_string());
  CHECK_FALSE(ev.fields[2].array_length().has_value());
  CHECK(ev.fields[2].element_type() == "char");
  CHECK(ev.fields[3].type == "const char *");
  CHECK_FALSE(ev.fields[3].is_string());
  CHECK(ev.fields[4] == FormatField{"unsigned long[]", "args", 40, 0, false});
  CHECK(ev.print_fmt == "\"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid");
  CHECK(ev.find_field("prev_pid")->offset == 24);
  CHECK(ev.find_field("common_pid")->offset == 4);
  CHECK(ev.find_field("nope") == nullptr);
  CHECK(ev.fixed_size() == 40);
  CHECK(to_format_text(ev) == kSwitchText);
}

TEST_CASE("event_format: every captured kernel format file round-trips byte-exact",
          "[events][format]") {
  const auto dir = tp_test::shared_data_or_skip("kernel/formats");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto file = entry.path().filename().string();
    if (entry.path().extension() != ".format") continue;
    const auto sep = file.find("__");
    REQUIRE(sep != std::string::npos);
    const std::string system = file.substr(0, sep);
    const std::string text = tp_test::read_file(entry.path());
    INFO(file);
    const EventFormat ev = parse_event_format(text, system);
    CHECK(ev.system == system);
    CHECK(ev.name + ".format" == file.substr(sep + 2));
    CHECK(ev.common_fields == kernel_common_fields());
    CHECK_FALSE(ev.fields.empty());
    CHECK_FALSE(ev.print_fmt.empty());
    CHECK(to_format_text(ev) == text);
    ++n;
  }
  CHECK(n == 19);
}

TEST_CASE("event_format: header_page field lines parse", "[events][format]") {
  const auto f = parse_format_field("\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;");
  CHECK(f == FormatField{"local_t", "commit", 8, 8, true});
  const auto g =
      parse_format_field("field: char data;\toffset:16;\tsize:4080;");  // old kernels: no signed
  CHECK(g == FormatField{"char", "data", 16, 4080, false});
}

TEST_CASE("event_format: an event without fields prints two blank lines like f_show",
          "[events][format]") {
  EventFormat ev{"tp", "tick", 7, kernel_common_fields(), {}, "\"tick\""};
  const std::string text = to_format_text(ev);
  CHECK(text.find("signed:1;\n\n\nprint fmt: \"tick\"\n") != std::string::npos);
  CHECK(parse_event_format(text, "tp") == ev);
}

TEST_CASE("event_format: malformed text fails naming the line", "[events][format]") {
  struct Case {
    const char* text;
    uint32_t line;
    const char* needle;
  };
  const Case cases[] = {
      {"name: x\nID: abc\nformat:\n", 2, "ID is not"},
      {"name: x\nID: 1\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\n", 4, "'offset:'"},
      {"name: x\nID: 1\nformat:\n\tfield:int a\toffset:0;\tsize:4;\n", 4, "not an identifier"},
      {"name: x\nID: 1\nformat:\n\tfield:int a\n", 4, "lacks ';'"},
      {"name: x\nID: 1\nformat:\n\tfield:int;\toffset:0;\tsize:4;\n", 4, "type and a name"},
      {"name: x\nID: 1\nformat:\n\tfield:int a;\toffset:0;\n", 4, "'size:'"},
      {"name: x\nID: 1\nformat:\n\tfield:int a;\toffset:4294967295;\tsize:4;\n", 4, "overflows"},
      {"name: x\nID: 1\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:2;\n", 4, "0 or 1"},
      {"name: x\nID: 1\nformat:\n\tfield:char a[4;\toffset:0;\tsize:4;\n", 4, "array"},
      {"name: x\nID: 1\nbogus\n", 3, "expected 'name:'"},
      {"name: x\nformat:\n", 0, "missing 'ID:'"},
      {"ID: 3\nformat:\n", 0, "missing 'name:'"},
      {"name: x\nID: 1\nformat:\nprint fmt: \"a\"\nmore\n", 5, "after 'print fmt:'"},
      {"name: x\nID: 1\nprint fmt: \"a\"\n", 3, "before 'format:'"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    try {
      parse_event_format(c.text, "sys");
      FAIL("accepted");
    } catch (const FormatError& e) {
      CHECK(e.line() == c.line);
      CHECK_THAT(e.what(), Catch::Contains(c.needle));
      CHECK_THAT(e.what(), Catch::StartsWith("sys/"));
    }
  }
}
