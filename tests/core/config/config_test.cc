// TOML configuration: values, defaults, and errors naming file, line and key.
#include "tracepipe/core/config/config.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "test_support.h"
#include "tracepipe/buffers/rseq.h"
#include "tracepipe/core/config/key_suggest.h"
#include "tracepipe/core/config/ring_memory.h"
#include "tracepipe/core/instance/instance.h"

using namespace tracepipe;

TEST_CASE("config: every key of the top level and of a nested instance", "[core][config]") {
  const Config cfg = parse_config(R"(
buffer_size_kb = 256
subbuf_size_kb = 8
mode = "drop_newest"
clock = "mono_raw"
staging = "on"
adaptive_threshold = 0.75
cpus = 2

[systems.sched]
enable = true
filter = "common_pid != 0"

[events."sched:sched_switch"]
enable = true
filter = "prev_prio < 100"
soft_disable = false

[events."irq:*"]
enable = false

[instances.errors]
buffer_size_kb = 64
staging = "adaptive"
[instances.errors.events."app:request_done"]
enable = true
filter = "latency_ns > 1000000"
)",
                                  "t.toml");
  REQUIRE(cfg.instances.size() == 2);
  const InstanceConfig& m = cfg.instances[0];
  CHECK(m.options.name == "main");
  CHECK(m.options.buffer_size_kb == 256);
  CHECK(m.options.subbuf_size_kb == 8);
  CHECK(m.options.mode == BufferMode::drop_newest);
  CHECK(m.options.clock == ClockId::mono_raw);
  CHECK(m.options.staging == Staging::per_cpu);
  CHECK(m.options.adaptive_threshold == 0.75);
  CHECK(m.options.cpus == 2);
  REQUIRE(m.systems.size() == 1);
  CHECK(m.systems[0].pattern == "sched");
  CHECK(m.systems[0].enable == true);
  CHECK(m.systems[0].filter == "common_pid != 0");
  CHECK(m.systems[0].filter_where.line == 12);
  CHECK(m.systems[0].filter_where.key == "systems.sched.filter");
  REQUIRE(m.events.size() == 2);
  CHECK(m.events[0].pattern == "sched:sched_switch");
  CHECK(m.events[0].filter == "prev_prio < 100");
  CHECK(m.events[0].filter_where.line == 16);
  CHECK(m.events[0].filter_where.key == R"(events."sched:sched_switch".filter)");
  CHECK(m.events[0].soft_disable == false);
  CHECK(m.events[1].pattern == "irq:*");
  CHECK(m.events[1].enable == false);
  CHECK_FALSE(m.events[1].filter.has_value());

  const InstanceConfig& e = cfg.instances[1];
  CHECK(e.options.name == "errors");
  CHECK(e.options.buffer_size_kb == 64);
  CHECK(e.options.staging == Staging::adaptive);
  CHECK(e.options.mode == BufferMode::overwrite);  // default
  CHECK(e.options.clock == ClockId::local);        // default
  REQUIRE(e.events.size() == 1);
  CHECK(e.events[0].filter_where.key == R"(instances.errors.events."app:request_done".filter)");
  CHECK(e.events[0].filter_where.line == 27);
}

TEST_CASE("config: defaults of an empty file", "[core][config]") {
  const Config cfg = parse_config("", "empty.toml");
  REQUIRE(cfg.instances.size() == 1);
  const InstanceOptions d;
  CHECK(cfg.instances[0].options.buffer_size_kb == 1408);
  CHECK(cfg.instances[0].options.subbuf_size_kb == 4);
  CHECK(cfg.instances[0].options.staging == d.staging);
  CHECK(cfg.instances[0].events.empty());
}

TEST_CASE("config: staging names", "[core][config]") {
  CHECK(parse_staging("on") == Staging::per_cpu);
  CHECK(parse_staging("per-cpu") == Staging::per_cpu);
  CHECK(parse_staging("per_thread") == Staging::per_thread);
  CHECK(parse_staging("off") == Staging::off);
  CHECK(parse_staging("adaptive") == Staging::adaptive);
  CHECK_FALSE(parse_staging("maybe").has_value());
  CHECK(parse_buffer_mode("drop-newest") == BufferMode::drop_newest);
  CHECK_FALSE(parse_buffer_mode("ring").has_value());
}

namespace {
ConfigError error_of(const std::string& text) {
  try {
    parse_config(text, "bad.toml");
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError for: " << text);
  throw;
}
/// One bad config text and the error it must give.
struct ErrorRow {
  const char* text;
  uint32_t line;
  const char* key;
  const char* what;
};
}  // namespace

TEST_CASE("config: the bounds of the numeric keys are the CLI's, and inclusive", "[core][config]") {
  CHECK(kMaxBufferSizeKb == 1048576);  // 1 GiB per CPU, as tracepipe replay --buffer-size-kb
  // Each bound alone (the largest of both together is more than a machine
  // holds: the next test).
  const Config cfg = parse_config(
      "buffer_size_kb = 1048576\nsubbuf_size_kb = 1024\ncpus = 1\n"
      "[instances.small]\nbuffer_size_kb = 1\nsubbuf_size_kb = 4\ncpus = 0\n"
      "[instances.many]\nbuffer_size_kb = 1\nsubbuf_size_kb = 4\ncpus = 4096\n",
      "b.toml");
  REQUIRE(cfg.instances.size() == 3);
  CHECK(cfg.instances[0].options.buffer_size_kb == 1048576);
  CHECK(cfg.instances[0].options.subbuf_size_kb == 1024);
  CHECK(cfg.instances[0].options.cpus == 1);
  CHECK(cfg.instances[1].options.buffer_size_kb == 1);
  CHECK(cfg.instances[1].options.subbuf_size_kb == 4);
  CHECK(cfg.instances[1].options.cpus == 0);
  CHECK(cfg.instances[2].options.cpus == 4096);
}

TEST_CASE("config: rings larger than the machine's memory are refused at their key",
          "[core][config]") {
  // 4096 CPUs x 1 GiB: 4 TiB of rings, which the instance would zero for
  // tens of seconds before failing; no machine here has that much.
  InstanceOptions huge;
  huge.cpus = 4096;
  huge.buffer_size_kb = 1048576;
  huge.subbuf_size_kb = 4;
  // Per CPU: 262144 sub-buffers, one more, 8 spares (overwrite), of 4 KiB.
  CHECK(detail::ring_memory_bytes(huge) == uint64_t{4096} * (262144 + 1 + 8) * 4096);
  huge.mode = BufferMode::drop_newest;  // no spares
  CHECK(detail::ring_memory_bytes(huge) == uint64_t{4096} * (262144 + 1) * 4096);
  REQUIRE(detail::physical_memory_bytes() > 0);
  REQUIRE(detail::physical_memory_bytes() < detail::ring_memory_bytes(huge));
  const std::string why = detail::ring_memory_refusal(huge);
  CHECK_THAT(why, Catch::StartsWith("4096 CPUs x 1048576 KiB: rings of 4194320 MiB, more than "
                                    "this machine's physical memory ("));
  CHECK_THAT(why, Catch::EndsWith(" MiB); lower buffer_size_kb or cpus"));
  // A size bounded alone by the key's range, and an impossible size
  // (InstanceOptions takes any), saturate rather than wrap.
  huge.buffer_size_kb = uint64_t{1} << 62;
  CHECK(detail::ring_memory_bytes(huge) == UINT64_MAX);

  // At buffer_size_kb's line, else at cpus's; in a nested instance too.
  ConfigError e = error_of("mode = \"drop_newest\"\ncpus = 4096\nbuffer_size_kb = 1048576\n");
  CHECK(e.line() == 3);
  CHECK(e.key() == "buffer_size_kb");
  CHECK_THAT(e.what(), Catch::StartsWith("bad.toml:3: buffer_size_kb: 4096 CPUs x 1048576 KiB: "
                                         "rings of 4194320 MiB, more than this machine's"));
  e = error_of("\n[instances.x]\nbuffer_size_kb = 1048576\nsubbuf_size_kb = 4\ncpus = 4096\n");
  CHECK(e.line() == 3);
  CHECK(e.key() == "instances.x.buffer_size_kb");
  // Without buffer_size_kb in the table (the default size), cpus is named:
  // 4096 x 11 MiB (2 sub-buffers of 1 MiB, one more, 8 spares) = 44 GiB,
  // refused where the machine has less.
  const std::string cpus_only = "\n[instances.y]\ncpus = 4096\nsubbuf_size_kb = 1024\n";
  if (detail::physical_memory_bytes() < (uint64_t{44} << 30)) {
    e = error_of(cpus_only);
    CHECK(e.line() == 3);
    CHECK(e.key() == "instances.y.cpus");
  } else {
    CHECK_NOTHROW(parse_config(cpus_only, "ok.toml"));
  }
}

// The same options given to Instance directly are refused the same way,
// before anything is allocated: in a child whose address space is limited
// to 2 GiB, an Instance that began allocating its 4 TiB would end in
// std::bad_alloc (or zero gigabytes first), not the refusal.
TEST_CASE("config: Instance refuses the rings the config refuses, before allocating",
          "[core][config]") {
#ifdef TRACEPIPE_SANITIZED
  // RLIMIT_AS cannot hold a sanitizer's shadow memory, and without it a
  // regression would zero terabytes: proven in the plain build.
  TP_SKIP("an address-space limit is off under sanitizers");
#endif
  InstanceOptions huge;
  huge.cpus = 4096;
  huge.buffer_size_kb = 1048576;
  const std::string why = detail::ring_memory_refusal(huge);
  REQUIRE(!why.empty());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const rlimit lim{uint64_t{2} << 30, uint64_t{2} << 30};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    try {
      Instance inst(huge);
      _exit(1);
    } catch (const std::invalid_argument& x) {
      _exit(std::string(x.what()) == "instance main: " + why ? 0 : 2);
    } catch (...) {
      _exit(4);  // std::bad_alloc: it allocated
    }
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("config: writers picks who writes which CPU buffer", "[core][config]") {
  // Where rseq is unusable, cpu_local is a parse error (next test cases).
  if (buffers::detail::rseq_usable())
    CHECK(parse_config("writers = \"cpu_local\"\n", "w.toml").instances[0].options.writers ==
          WriterMode::cpu_local);
  CHECK(parse_config("writers = \"any-cpu\"\n", "w.toml").instances[0].options.writers ==
        WriterMode::any_cpu);
  CHECK(parse_config("writers = \"auto\"\n", "w.toml").instances[0].options.writers ==
        WriterMode::automatic);
  CHECK(parse_config("", "w.toml").instances[0].options.writers == WriterMode::automatic);
}

TEST_CASE("config: errors name the file, the line and the key", "[core][config]") {
  const ErrorRow rows[] = {
      {"buffer_size_kb = 0\n", 1, "buffer_size_kb",
       "bad.toml:1: buffer_size_kb: value 0 is outside 1..1048576"},
      // The CLI's bound (--buffer-size-kb): 1 GiB per CPU, not 4 TiB.
      {"\nbuffer_size_kb = 1048577\n", 2, "buffer_size_kb",
       "bad.toml:2: buffer_size_kb: value 1048577 is outside 1..1048576"},
      {"[instances.x]\nbuffer_size_kb = 4294967296\n", 2, "instances.x.buffer_size_kb",
       "bad.toml:2: instances.x.buffer_size_kb: value 4294967296 is outside 1..1048576"},
      {"subbuf_size_kb = 2048\n", 1, "subbuf_size_kb",
       "bad.toml:1: subbuf_size_kb: value 2048 is outside 4..1024"},
      {"subbuf_size_kb = 2\n", 1, "subbuf_size_kb",
       "bad.toml:1: subbuf_size_kb: value 2 is outside 4..1024"},
      {"cpus = 4097\n", 1, "cpus", "bad.toml:1: cpus: value 4097 is outside 0..4096"},
      {"cpus = -1\n", 1, "cpus", "bad.toml:1: cpus: value -1 is outside 0..4096"},
      {"adaptive_threshold = -0.5\n", 1, "adaptive_threshold",
       "bad.toml:1: adaptive_threshold: expected a number between 0 and 1"},
      {"\nsubbuf_size_kb = 6\n", 2, "subbuf_size_kb",
       "bad.toml:2: subbuf_size_kb: must be a power of two (4, 8, 16, ...)"},
      {"mode = 3\n", 1, "mode", "bad.toml:1: mode: expected a string"},
      {"mode = \"ring\"\n", 1, "mode",
       "bad.toml:1: mode: unknown mode 'ring' (expected overwrite or drop_newest)"},
      {"clock = \"jiffies\"\n", 1, "clock",
       "bad.toml:1: clock: unknown clock 'jiffies' (expected one of: [local] global counter uptime "
       "perf mono "
       "mono_raw boot tai x86-tsc)"},
      {"staging = \"maybe\"\n", 1, "staging",
       "bad.toml:1: staging: unknown staging 'maybe' (expected on, off, per_cpu, per_thread or "
       "adaptive)"},
      {"writers = \"mine\"\n", 1, "writers",
       "bad.toml:1: writers: unknown writers 'mine' (expected auto, any_cpu or cpu_local)"},
      {"adaptive_threshold = 1.5\n", 1, "adaptive_threshold",
       "bad.toml:1: adaptive_threshold: expected a number between 0 and 1"},
      {"buffer_sise_kb = 4\n", 1, "buffer_sise_kb",
       "bad.toml:1: buffer_sise_kb: unknown key (expected buffer_size_kb, subbuf_size_kb, mode, "
       "clock, staging, writers, adaptive_threshold, cpus, flight_recorder, flight_dir, "
       "synthetic_events, systems, events, recording or instances); did you mean "
       "'buffer_size_kb'?"},
      {"[events.\"a:b\"]\nenable = \"yes\"\n", 2, "events.\"a:b\".enable",
       "bad.toml:2: events.\"a:b\".enable: expected a boolean (true or false)"},
      {"[events.\"a:b\"]\n\nfiltre = \"x\"\n", 3, "events.\"a:b\".filtre",
       "bad.toml:3: events.\"a:b\".filtre: unknown key (expected enable, filter, soft_disable or "
       "trigger); did you mean "
       "'filter'?"},
      {"[systems.sched]\nsoft_disable = true\n", 2, "systems.sched.soft_disable",
       "bad.toml:2: systems.sched.soft_disable: unknown key (expected enable or filter)"},
      {"[systems.sched]\nfilters = \"x\"\n", 2, "systems.sched.filters",
       "bad.toml:2: systems.sched.filters: unknown key (expected enable or filter); did you mean "
       "'filter'?"},
      {"events = 3\n", 1, "events", "bad.toml:1: events: expected a table"},
      {"[instances.main]\n", 1, "instances.main",
       "bad.toml:1: instances.main: 'main' is the top level of the file; choose another name"},
      {"[instances.x]\nmode = \"nope\"\n", 2, "instances.x.mode",
       "bad.toml:2: instances.x.mode: unknown mode 'nope' (expected overwrite or drop_newest)"},
  };
  for (const ErrorRow& r : rows) {
    INFO(r.text);
    const ConfigError e = error_of(r.text);
    CHECK(e.file() == "bad.toml");
    CHECK(e.line() == r.line);
    CHECK(e.key() == r.key);
    CHECK(std::string(e.what()) == r.what);
  }
}

TEST_CASE("config: every unknown key or table lists the valid keys of its table",
          "[core][config]") {
  const std::string top =
      "buffer_size_kb, subbuf_size_kb, mode, clock, staging, writers, adaptive_threshold, cpus, "
      "flight_recorder, flight_dir, synthetic_events, systems";
  const ErrorRow rows[] = {
      // The reported case: a prefix of a valid key.
      {"buffer_size = 4\n", 1, "buffer_size",
       "bad.toml:1: buffer_size: unknown key (expected BUILTIN, events, recording or instances); "
       "did you mean 'buffer_size_kb'?"},
      // A misspelt table at the top level, at its header's line.
      {"mode = \"overwrite\"\n\n[event.\"x:y\"]\nenable = true\n", 3, "event",
       "bad.toml:3: event: unknown key (expected BUILTIN, events, recording or instances); did you "
       "mean 'events'?"},
      {"[instance.errors]\n", 1, "instance",
       "bad.toml:1: instance: unknown key (expected BUILTIN, events, recording or instances); did "
       "you mean 'instances'?"},
      // The CLI's spelling with '-' is one fold away.
      {"buffer-size-kb = 4\n", 1, "buffer-size-kb",
       "bad.toml:1: buffer-size-kb: unknown key (expected BUILTIN, events, recording or "
       "instances); did you mean 'buffer_size_kb'?"},
      // Nothing close: the list alone.
      {"verbose = true\n", 1, "verbose",
       "bad.toml:1: verbose: unknown key (expected BUILTIN, events, recording or instances)"},
      // [instances.NAME]: the same keys but instances (they do not nest).
      {"[instances.x]\nbufer_size_kb = 4\n", 2, "instances.x.bufer_size_kb",
       "bad.toml:2: instances.x.bufer_size_kb: unknown key (expected BUILTIN or events); did you "
       "mean 'buffer_size_kb'?"},
      {"[instances.x.instances.y]\n", 1, "instances.x.instances",
       "bad.toml:1: instances.x.instances: unknown key (expected BUILTIN or events)"},
      {"[instances.x.sytems.sched]\nenable = true\n", 1, "instances.x.sytems",
       "bad.toml:1: instances.x.sytems: unknown key (expected BUILTIN or events); did you mean "
       "'systems'?"},
      // [systems.X] and [events."X"], inside an instance too.
      {"[systems.sched]\nenabled = true\n", 2, "systems.sched.enabled",
       "bad.toml:2: systems.sched.enabled: unknown key (expected enable or filter); did you mean "
       "'enable'?"},
      {"[instances.x.systems.sched]\nfoo = 1\n", 2, "instances.x.systems.sched.foo",
       "bad.toml:2: instances.x.systems.sched.foo: unknown key (expected enable or filter)"},
      {"[events.\"myapp:job\"]\nenabled = true\n", 2, "events.\"myapp:job\".enabled",
       "bad.toml:2: events.\"myapp:job\".enabled: unknown key (expected enable, filter, "
       "soft_disable or trigger); did you "
       "mean 'enable'?"},
      {"[instances.x.events.\"a:b\"]\nsoft-disable = true\n", 2,
       "instances.x.events.\"a:b\".soft-disable",
       "bad.toml:2: instances.x.events.\"a:b\".soft-disable: unknown key (expected enable, filter, "
       "soft_disable or trigger); did you mean 'soft_disable'?"},
  };
  for (const ErrorRow& r : rows) {
    INFO(r.text);
    std::string what = r.what;
    if (const size_t at = what.find("BUILTIN"); at != std::string::npos) what.replace(at, 7, top);
    const ConfigError e = error_of(r.text);
    CHECK(e.line() == r.line);
    CHECK(e.key() == r.key);
    CHECK(std::string(e.what()) == what);
  }
}

TEST_CASE("config: closest_name suggests one close key, never a tie", "[core][config]") {
  constexpr std::string_view keys[] = {"enable", "filter", "soft_disable",
                                       "events", "cpus",   "clock"};
  CHECK(closest_name("filtre", keys) == "filter");  // distance 2
  CHECK(closest_name("FILTER", keys) == "filter");  // case folded
  CHECK(closest_name("soft-disable", keys) == "soft_disable");
  CHECK(closest_name("soft", keys) == "soft_disable");  // a prefix of 4
  CHECK(closest_name("cpus_max", keys) == "cpus");      // a key is its prefix
  CHECK(closest_name("cpu", keys) == "cpus");           // distance 1
  CHECK(closest_name("eventz", keys) == "events");
  CHECK(!closest_name("zzz", keys));
  CHECK(!closest_name("x", keys));   // nothing within 2 edits
  CHECK(!closest_name("en", keys));  // too short for a prefix hint
  CHECK(!closest_name("c", keys));
  // Equally close to two keys: no guess.
  constexpr std::string_view two[] = {"mode", "node"};
  CHECK(!closest_name("lode", two));
  CHECK(closest_name("mod", two) == "mode");
  CHECK(either_of(std::span<const std::string_view>(keys, 1)) == "enable");
  CHECK(either_of(std::span<const std::string_view>(keys, 2)) == "enable or filter");
  CHECK(either_of(keys) == "enable, filter, soft_disable, events, cpus or clock");
  CHECK(unknown_key_message("cpu", keys) ==
        "unknown key (expected enable, filter, soft_disable, events, cpus or clock); did you mean "
        "'cpus'?");
}

TEST_CASE("config: TOML syntax errors carry the line", "[core][config]") {
  const ConfigError e = error_of("mode = \"overwrite\"\nclock = \n");
  CHECK(e.line() == 2);
  CHECK(e.key().empty());
  CHECK(std::string(e.what()).rfind("bad.toml:2: ", 0) == 0);
}

TEST_CASE("config: load_config names an unreadable file", "[core][config]") {
  try {
    load_config("/nonexistent/tracepipe.toml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "/nonexistent/tracepipe.toml: cannot open it: No such file or directory");
  }
}

TEST_CASE("config: writers = cpu_local with cpus set is an error at the writers line",
          "[core][config]") {
  // Either order in the file; the message names the cpus line too.
  const ConfigError a = error_of("writers = \"cpu_local\"\ncpus = 2\n");
  CHECK(a.line() == 1);
  CHECK(a.key() == "writers");
  CHECK(std::string(a.what()) ==
        "bad.toml:1: writers: cpu_local needs one buffer per possible CPU, but cpus = 2 is set at "
        "line 2 "
        "(remove cpus, or use writers = \"any_cpu\")");
  const ConfigError b = error_of("mode = \"overwrite\"\ncpus = 8\n\nwriters = \"cpu-local\"\n");
  CHECK(std::string(b.what()) ==
        "bad.toml:4: writers: cpu_local needs one buffer per possible CPU, but cpus = 8 is set at "
        "line 2 "
        "(remove cpus, or use writers = \"any_cpu\")");
  const ConfigError c = error_of("[instances.x]\ncpus = 1\nwriters = \"cpu_local\"\n");
  CHECK(std::string(c.what()) ==
        "bad.toml:3: instances.x.writers: cpu_local needs one buffer per possible CPU, but cpus = "
        "1 is set at "
        "line 2 (remove cpus, or use writers = \"any_cpu\")");
  // cpus = 0 (one buffer per possible CPU) is no conflict; any_cpu with cpus is fine.
  const Config ok = parse_config(
      "cpus = 2\nwriters = \"any_cpu\"\n[instances.y]\ncpus = 0\nwriters = \"auto\"\n", "ok.toml");
  CHECK(ok.instances[0].options.cpus == 2);
  CHECK(ok.instances[0].writers_where.line == 2);
  CHECK(ok.instances[1].writers_where.key == "instances.y.writers");
}

TEST_CASE("config: Instance::from_config names the file and the writers line for a refused option",
          "[core][config]") {
  // Options changed after parsing reach the constructor's check: its
  // std::invalid_argument comes back as a ConfigError.
  InstanceConfig ic;
  ic.file = "h.toml";
  ic.options.writers = WriterMode::cpu_local;
  ic.options.cpus = 2;
  ic.writers_where = {"h.toml", 7, "instances.x.writers"};
  try {
    (void)Instance::from_config(ic);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "h.toml:7: instances.x.writers: writers = cpu_local needs one buffer per possible CPU "
          "(cpus = 0)");
  }
  InstanceConfig bad;
  bad.file = "h.toml";
  bad.options.adaptive_threshold = 2.0;
  try {
    (void)Instance::from_config(bad);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "h.toml: adaptive_threshold must be between 0 and 1");
  }
}

// Run by the next test in a child process where glibc registers no rseq
// area (GLIBC_TUNABLES=glibc.pthread.rseq=0), so rseq_usable() is false.
TEST_CASE("config: writers = cpu_local without rseq (child process)", "[.][config_rseq_off]") {
  REQUIRE_FALSE(buffers::detail::rseq_usable());
  const ConfigError e = error_of("mode = \"overwrite\"\nwriters = \"cpu_local\"\n");
  CHECK(
      std::string(e.what()) ==
      "bad.toml:2: writers: cpu_local needs rseq and membarrier RSEQ, unavailable in this process "
      "(use writers = \"auto\" or \"any_cpu\")");
  const ConfigError n = error_of("[instances.x]\nwriters = \"cpu_local\"\n");
  CHECK(n.key() == "instances.x.writers");
  CHECK(n.line() == 2);
  // auto falls back to any_cpu silently; it is no error.
  CHECK(parse_config("writers = \"auto\"\n", "ok.toml").instances[0].options.writers ==
        WriterMode::automatic);
}

TEST_CASE("config: writers = cpu_local where rseq is unusable is an error at the writers line",
          "[core][config]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
    ::execl("/proc/self/exe", "config_tests", "[config_rseq_off]", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // the child's checks passed (its output is above)
}

TEST_CASE("config: a table defined twice names the file, the second header's line and the table",
          "[core][config]") {
  // toml++ alone says "cannot redefine existing table 'events."scsched:...'"
  // (the key garbled); the message is rebuilt from the header line.
  const ConfigError a = error_of(
      "[events.\"sched:sched_switch\"]\nenable = true\n\n[events.\"sched:sched_switch\"]\nfilter = "
      "\"x\"\n");
  CHECK(a.line() == 4);
  CHECK(a.key() == "events.\"sched:sched_switch\"");
  CHECK(std::string(a.what()) ==
        "bad.toml:4: events.\"sched:sched_switch\": table defined twice (first at line 1)");

  const ConfigError b = error_of(
      "mode = \"overwrite\"\n[instances.x]\ncpus = 1\n[systems.sched]\n  [ instances . 'x' ]  # "
      "again\n");
  CHECK(std::string(b.what()) == "bad.toml:5: instances.x: table defined twice (first at line 2)");

  // Other TOML errors keep toml++'s text at their line.
  const ConfigError c = error_of("mode = \"overwrite\"\nmode = \"drop_newest\"\n");
  CHECK(c.line() == 2);
  CHECK(c.key().empty());
  CHECK(std::string(c.what()).rfind("bad.toml:2: ", 0) == 0);
}
