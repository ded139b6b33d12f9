// Differential test against the running kernel (skipped without a writable
// tracefs or without events/*/*/trigger): every command below is written to
// a scratch tracefs instance's sched:sched_kthread_stop trigger file (an
// event that does not fire while the test runs, so counts stay as written)
// and to a tracepipe instance with the same event formats; the errno, the
// trigger file read back and, for filter errors, error_log's message and
// caret must agree. The kernel here offers traceon, traceoff, stacktrace,
// enable_event and disable_event (no snapshot, no hist: those are tested
// against the documented examples in triggers_test.cc). The scratch instance
// has tracing off (so traceoff never fires) and is removed afterwards, its
// triggers first.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;
namespace fs = std::filesystem;

namespace {

const fs::path kTracefs = "/sys/kernel/tracing";
const char* kEvent = "sched/sched_kthread_stop";
const char* kTarget = "sched/sched_kthread_stop_ret";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int write_file(const fs::path& p, const std::string& s, int flags = O_APPEND) {
  const int fd = ::open(p.c_str(), O_WRONLY | flags);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, s.data(), s.size());
  const int err = n < 0 ? errno : 0;
  ::close(fd);
  return err;
}

class Scratch {
 public:
  Scratch() : dir_(kTracefs / "instances" / ("tp_triggers_live_" + std::to_string(getpid()))) {
    std::error_code ec;
    fs::create_directory(dir_, ec);
    ok_ = !ec && fs::exists(dir_ / "events" / kEvent / "trigger");
    if (ok_) write_file(dir_ / "tracing_on", "0");
  }
  ~Scratch() {
    if (fs::exists(dir_)) {
      clear();
      write_file(dir_ / "error_log", "", O_TRUNC);
      std::error_code ec;
      fs::remove(dir_, ec);
    }
  }
  bool ok() const { return ok_; }
  fs::path trigger() const { return dir_ / "events" / kEvent / "trigger"; }
  std::string read_trigger() const { return slurp(trigger()); }
  // Removes every trigger ('!' + each line up to its count or filter).
  void clear() {
    for (int round = 0; round < 8; ++round) {
      std::istringstream in(read_trigger());
      std::string line;
      bool any = false;
      while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        any = true;
        std::string head = line.substr(0, line.find(' '));
        head = head.substr(0, head.rfind(':'));  // drop ":unlimited" / ":count=N"
        write_file(trigger(), "!" + head);
      }
      if (!any) break;
    }
    write_file(dir_ / "events" / kTarget / "enable", "0");
  }
  int write(const std::string& cmd) {
    write_file(dir_ / "error_log", "", O_TRUNC);
    return write_file(trigger(), cmd);
  }
  // error_log's message and caret for the last write ("" / -1 if none).
  std::pair<std::string, int> last_error() const {
    const std::string log = slurp(dir_ / "error_log");
    const std::string tag = ": error: ";
    const size_t k = log.find(tag);
    if (k == std::string::npos) return {"", -1};
    const std::string msg = log.substr(k + tag.size(), log.find('\n', k) - k - tag.size());
    const size_t cmd = log.find("\n  Command: ");
    const size_t caret_line = log.find('\n', cmd + 1);
    const size_t hat = log.find('^', caret_line);
    const int caret =
        cmd == std::string::npos || hat == std::string::npos
            ? -1
            : static_cast<int>(hat - caret_line - 1 - std::string("  Command: ").size());
    return {msg, caret};
  }

 private:
  fs::path dir_;
  bool ok_ = false;
};

}  // namespace

TEST_CASE("triggers live: commands, errors and readback agree with the running kernel",
          "[triggers][live]") {
  if (::access(kTracefs.c_str(), W_OK) != 0) TP_SKIP("no writable tracefs");
  Scratch k;
  if (!k.ok()) TP_SKIP("this kernel has no event triggers in instances");

  Registry reg;
  const EventDesc& ev =
      reg.add_format_text(slurp(kTracefs / "events" / kEvent / "format"), "sched");
  reg.add_format_text(slurp(kTracefs / "events" / kTarget / "format"), "sched");
  InstanceOptions o;
  o.buffer_size_kb = 16;
  o.cpus = 1;
  Instance tp(o, reg);

  // Each step runs on top of the previous ones (duplicates, removals).
  const std::vector<std::string> steps = {
      "traceoff",
      "traceoff:5",
      "traceon:3 if pid == 1",
      "stacktrace:2 if pid > 10 && pid < 5",
      "enable_event:sched:sched_kthread_stop_ret:2",
      "disable_event:sched:sched_kthread_stop_ret",
      "!traceoff",
      "!traceoff:5",
      "!traceon",
      "!stacktrace",
      "!enable_event:sched:sched_kthread_stop_ret:2",
      "!disable_event:sched:sched_kthread_stop_ret",
      "traceoff if pid ==",
      "traceoff if bogus == 1",
      "foo",
      "traceoff:abc",
      "traceoff:0",
      "!traceoff",
      "traceoff:-1",
      "enable_event:sched",
      "enable_event:sched:nope",
      "enable_event:nosys:nope",
      "traceoff if",
      "traceoff  if pid==1",
      "!traceoff",
      "traceoff:5   if    pid==1   ",
      "!traceoff",
      " traceoff",
      "!traceoff",
      "traceoff :5",
      "traceoff: 5",
      "!traceoff",
      "traceoff:5:6",
      "!traceoff",
      "TRACEOFF",
      "traceoff:count=3",
      "traceoff:0x10",
      "!traceoff",
      "traceoff:010",
      "!traceoff",
      "traceoff:+5",
      "traceoff:99999999999999999999",
      "traceoff:4294967296",
      "!traceoff",
      "traceoff ifx pid==1",
      "traceoff:5if pid==1",
      "traceoff if pid==1 && (",
      "enable_event:sched:sched_kthread_stop:3",
      "!enable_event:sched:sched_kthread_stop",
      "enable_event:sched:sched_kthread_stop_ret:0",
      "!enable_event:sched:sched_kthread_stop_ret",
      "enable_event:sched:sched_kthread_stop_ret:5 if pid == 0",
      "!enable_event:sched:sched_kthread_stop_ret",
      "enable_event::sched_kthread_stop_ret",
      "enable_event:sched:sched_kthread_stop_ret:",
      "traceoff:",
      "!traceoff",
      "traceoff if comm ~ \"a*\"",
      "!traceoff",
      "!foo",
      "!traceoff if bogus==1",
      "stacktrace",
      "stacktrace:7",
      "!stacktrace",
      "traceon if pid > 1 || pid < 0",
      "traceoff",
      "!traceon",
      "disable_event:sched:sched_kthread_stop_ret:1 if comm == \"x\"",
      "enable_event:sched:sched_kthread_stop_ret",
      "!disable_event:sched:sched_kthread_stop_ret"};
  for (const std::string& cmd : steps) {
    INFO("command: [" << cmd << "]");
    const int kerr = k.write(cmd);
    const auto [kmsg, kcaret] = k.last_error();
    const TriggerStatus st = set_trigger(tp, ev, cmd);
    CHECK((st.ok() ? 0 : st.error().err) == kerr);
    if (!kmsg.empty()) {
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().message == kmsg);
      CHECK(st.error().pos == kcaret);
    }
    // The header lists what each side offers (this kernel: no snapshot, no hist).
    const std::string ours = trigger_file(tp, ev), theirs = k.read_trigger();
    if (theirs.starts_with("# Available triggers:"))
      CHECK(ours.starts_with("# Available triggers:"));
    else
      CHECK(ours == theirs);
  }
}

// Soft mode against the kernel's enable file: a trigger on a disabled event
// arms it ("0*"), the user's enable and disable while it holds the event,
// and what the last trigger's removal leaves. Both sides take the same
// steps; the enable file is compared after each.
TEST_CASE("triggers live: soft mode and the enable file agree with the running kernel",
          "[triggers][live]") {
  if (::access(kTracefs.c_str(), W_OK) != 0) TP_SKIP("no writable tracefs");
  Scratch k;
  if (!k.ok()) TP_SKIP("this kernel has no event triggers in instances");
  Registry reg;
  const EventDesc& ev =
      reg.add_format_text(slurp(kTracefs / "events" / kEvent / "format"), "sched");
  const EventDesc& target =
      reg.add_format_text(slurp(kTracefs / "events" / kTarget / "format"), "sched");
  InstanceOptions o;
  o.buffer_size_kb = 16;
  o.cpus = 1;
  Instance tp(o, reg);
  const fs::path enable = k.trigger().parent_path() / "enable";
  const fs::path target_enable =
      k.trigger().parent_path().parent_path() / fs::path(kTarget).filename() / "enable";
  auto ours = [&](const EventDesc& e) {
    std::string s = tp.enabled(e) && !tp.soft_disabled(e) ? "1" : "0";
    if (tp.soft_disabled(e) || tp.in_soft_mode(e)) s += "*";
    return s;
  };
  auto theirs = [&](const fs::path& p) {
    std::string s = slurp(p);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  };
  // {what, argument}: "trigger" writes to the trigger file, "enable" to enable.
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"trigger", "traceoff"},
      {"enable", "1"},
      {"enable", "0"},
      {"enable", "0"},
      {"enable", "1"},
      {"trigger", "!traceoff"},
      {"enable", "0"},
      {"trigger", "traceoff"},
      {"trigger", "disable_event:sched:sched_kthread_stop_ret"},
      {"trigger", "!traceoff"},
      {"trigger", "!disable_event:sched:sched_kthread_stop_ret"},
      {"enable", "1"},
      {"trigger", "traceoff"},
      {"trigger", "!traceoff"},
      {"enable", "0"}};
  int n = 0;
  for (const auto& [what, arg] : steps) {
    INFO("step " << n++ << ": " << what << " " << arg);
    if (what == "trigger") {
      REQUIRE(k.write(arg) == 0);
      REQUIRE(set_trigger(tp, ev, arg).ok());
    } else {
      REQUIRE(write_file(enable, arg, O_TRUNC) == 0);
      tp.enable(ev, arg == "1");
    }
    CHECK(ours(ev) == theirs(enable));
    CHECK(ours(target) == theirs(target_enable));
  }
  write_file(enable, "0", O_TRUNC);
}
