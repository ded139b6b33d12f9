// The sideband schemas: names, kernel-like field types, the layouts the
// header documents, and format text that round-trips.
#include <catch2/catch.hpp>

#include "sideband_test_util.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_sideband_test;

namespace {

struct F {
  const char* type;
  const char* name;
  uint32_t offset, size;
  bool is_signed;
};

void check_fields(const EventDesc& d, std::initializer_list<F> want) {
  INFO(d.full_name());
  const EventFormat& f = d.format();
  REQUIRE(f.common_fields == kernel_common_fields());
  REQUIRE(f.fields.size() == want.size());
  size_t i = 0;
  for (const F& w : want) {
    const FormatField& got = f.fields[i++];
    INFO("field " << w.name);
    CHECK(got.type == w.type);
    CHECK(got.name == w.name);
    CHECK(got.offset == w.offset);
    CHECK(got.size == w.size);
    CHECK(got.is_signed == w.is_signed);
  }
}

}  // namespace

TEST_CASE("sideband events: six tracepipe:* events with the documented layouts",
          "[sideband][schema]") {
  const SidebandEvents& ev = SidebandEvents::global();
  const Registry& reg = Registry::global();
  const char* names[] = {"task_comm",    "task_newtask", "task_exit",
                         "process_exec", "mmap",         "synth_done"};
  for (size_t k = 0; k < kSidebandKinds; ++k) {
    const EventDesc* d = ev.by_kind[k];
    REQUIRE(d != nullptr);
    CHECK(d->system() == "tracepipe");
    CHECK(d->name() == names[k]);
    CHECK(reg.find("tracepipe", names[k]) == d);
    CHECK(d->id() >= Registry::kFirstDeclaredId);
  }
  check_fields(ev.task_comm(), {{"pid_t", "pid", 8, 4, true},
                                {"pid_t", "tid", 12, 4, true},
                                {"char[16]", "comm", 16, 16, false},
                                {"char[16]", "oldcomm", 32, 16, false},
                                {"u8", "reason", 48, 1, false}});
  check_fields(ev.task_newtask(), {{"pid_t", "pid", 8, 4, true},
                                   {"pid_t", "tid", 12, 4, true},
                                   {"pid_t", "ptid", 16, 4, true},
                                   {"u32", "synth", 20, 4, false},
                                   {"char[16]", "comm", 24, 16, false},
                                   {"u64", "clone_flags", 40, 8, false}});
  check_fields(ev.task_exit(), {{"pid_t", "pid", 8, 4, true},
                                {"pid_t", "tid", 12, 4, true},
                                {"char[16]", "comm", 16, 16, false}});
  check_fields(ev.process_exec(), {{"__data_loc char[]", "filename", 8, 4, false},
                                   {"pid_t", "pid", 12, 4, true},
                                   {"pid_t", "old_pid", 16, 4, true},
                                   {"u32", "synth", 20, 4, false}});
  check_fields(ev.mmap(), {{"pid_t", "pid", 8, 4, true},
                           {"pid_t", "tid", 12, 4, true},
                           {"u32", "synth", 16, 4, false},
                           {"u32", "prot", 20, 4, false},
                           {"u32", "flags", 24, 4, false},
                           {"u32", "maj", 28, 4, false},
                           {"u32", "min", 32, 4, false},
                           {"__data_loc char[]", "filename", 36, 4, false},
                           {"u64", "addr", 40, 8, false},
                           {"u64", "len", 48, 8, false},
                           {"u64", "pgoff", 56, 8, false},
                           {"u64", "ino", 64, 8, false}});
  check_fields(ev.synth_done(), {{"u32", "synth", 8, 4, false},
                                 {"u32", "threads", 12, 4, false},
                                 {"u32", "mappings", 16, 4, false},
                                 {"u32", "lost", 20, 4, false},
                                 {"u64", "records", 24, 8, false}});
  CHECK(ev.mmap().has_dynamic_fields());
  CHECK(ev.mmap().fixed_size() == 72);
  CHECK(ev.task_comm().fixed_size() == 49);  // max(offset + size); the record is padded to 52
}

TEST_CASE("sideband events: format text in the kernel's syntax round-trips", "[sideband][schema]") {
  const SidebandEvents& ev = SidebandEvents::global();
  for (const EventDesc* d : ev.by_kind) {
    INFO(d->full_name());
    const std::string text = d->format_text();
    const EventFormat back = parse_event_format(text, "tracepipe");
    CHECK(back == d->format());
  }
  const std::string comm = ev.task_comm().format_text();
  CHECK(comm.find("\tfield:pid_t pid;\toffset:8;\tsize:4;\tsigned:1;\n") != std::string::npos);
  CHECK(comm.find("\tfield:char comm[16];\toffset:16;\tsize:16;\tsigned:0;\n") !=
        std::string::npos);
  CHECK(comm.find("__print_symbolic(REC->reason, { 0, \"first_write\" }, { 1, \"rename\" }, { 2, "
                  "\"announce\" })") != std::string::npos);
  const std::string mm = ev.mmap().format_text();
  CHECK(mm.find("\tfield:__data_loc char[] filename;\toffset:36;\tsize:4;\tsigned:0;\n") !=
        std::string::npos);
  CHECK(mm.find("addr=0x%llx len=0x%llx") != std::string::npos);
}

TEST_CASE("sideband events: register_in a private registry is idempotent and keeps the schemas",
          "[sideband][schema]") {
  Registry reg;
  const SidebandEvents a = SidebandEvents::register_in(reg);
  const SidebandEvents b = SidebandEvents::register_in(reg);
  for (size_t k = 0; k < kSidebandKinds; ++k) {
    CHECK(a.by_kind[k] == b.by_kind[k]);
    EventFormat got = a.by_kind[k]->format();
    EventFormat want = SidebandEvents::global().by_kind[k]->format();
    got.id = want.id = 0;
    CHECK(got == want);
  }
  CHECK(reg.size() == kSidebandKinds);
  CHECK(to_string(CommReason::first_write) == "first_write");
  CHECK(to_string(CommReason::rename) == "rename");
  CHECK(to_string(CommReason::announce) == "announce");
}

TEST_CASE("sideband events: a record written with the layout decodes through SidebandState",
          "[sideband][schema]") {
  const SidebandEvents& ev = SidebandEvents::global();
  std::vector<std::byte> rec(
      sideband::Mmap::record_size(1, 2, 3, 5, 2, 0xfd, 1, "/lib/x.so", 0x1000, 0x2000, 0x3000, 77));
  CommonHeader h{ev.mmap().id(), 0, 0, 2};
  std::memcpy(rec.data(), &h, sizeof h);
  sideband::Mmap::write_fields(rec.data(), 1, 2, 3, 5, 2, 0xfd, 1, "/lib/x.so", 0x1000, 0x2000,
                               0x3000, 77);
  SidebandState sb;
  REQUIRE(sb.observe(rec) == SidebandKind::mmap);
  const auto* m = sb.mapping_at(0x2fff);
  REQUIRE(m != nullptr);
  CHECK(m->addr == 0x1000);
  CHECK(m->len == 0x2000);
  CHECK(m->pgoff == 0x3000);
  CHECK(m->ino == 77);
  CHECK(m->prot == 5);
  CHECK(m->flags == 2);
  CHECK(m->maj == 0xfd);
  CHECK(m->min == 1);
  CHECK(m->pid == 1);
  CHECK(m->synth == 3);
  CHECK(m->filename == "/lib/x.so");
  CHECK(sb.mapping_at(0x3000) == nullptr);
  CHECK(sb.mapping_at(0xfff) == nullptr);
  REQUIRE(sb.rounds().size() == 1);
  CHECK(sb.rounds()[0].seen == 1);
  CHECK_FALSE(sb.rounds()[0].complete());  // no synth_done
}
