// Differential test against the running kernel (skipped without a writable
// tracefs): the probed corpus (data/kernel_corpus.tsv) and a few thousand
// generated expressions are written to a scratch instance's event filter;
// compile() must accept exactly what the kernel accepts and reject the rest
// with the kernel's errno, message and caret (read back from error_log).
// The instance is removed afterwards, whatever happens.
//
// The kernel on these machines changes between builds (a dangling "&&" or
// "||" went from ignored to rejected between two builds of 6.18): the live
// kernel decides. Where it disagrees with the recorded verdicts
// (data/kernel_verdicts.tsv, probed on an earlier build), the difference is
// reported with the build that answered (uname -r and -v), and compile() is
// held to the live answer.
#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "format_fields.h"
#include "tracepipe/filters/compile.h"

using namespace tracepipe::filters;
namespace fs = std::filesystem;

namespace {

const fs::path kTracefs = "/sys/kernel/tracing";

// A scratch tracefs instance; removed in the destructor.
class Instance {
 public:
  Instance() : dir_(kTracefs / "instances" / ("tp_filters_live_" + std::to_string(getpid()))) {
    fs::create_directory(dir_);
  }
  ~Instance() {
    std::error_code ec;
    write_file(dir_ / "error_log", "");
    fs::remove(dir_, ec);
  }
  struct Verdict {
    bool accepted = false;
    int err = 0;
    std::string message;
    int caret = -1;
  };
  Verdict probe(const std::string& event, const std::string& expr) {
    const std::string sys = event.substr(0, event.find(':')),
                      name = event.substr(event.find(':') + 1);
    const fs::path filter = dir_ / "events" / sys / name / "filter";
    write_file(dir_ / "error_log", "");
    Verdict v;
    const int fd = ::open(filter.c_str(), O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0);
    const ssize_t n = ::write(fd, expr.data(), expr.size());
    v.err = n < 0 ? errno : 0;
    ::close(fd);
    v.accepted = n >= 0;
    const std::string log = tp_test::read_file(dir_ / "error_log");
    const std::string tag = "parse error: error: ";
    if (const size_t k = log.find(tag); k != std::string::npos) {
      v.message = log.substr(k + tag.size(), log.find('\n', k) - k - tag.size());
      const size_t cmd = log.find("\n  Command: ");
      const size_t caret_line = log.find('\n', cmd + 1);
      const size_t hat = log.find('^', caret_line);
      if (cmd != std::string::npos && hat != std::string::npos)
        v.caret = static_cast<int>(hat - caret_line - 1 - std::string("  Command: ").size());
    }
    write_file(filter, "0");
    return v;
  }

 private:
  static void write_file(const fs::path& p, const std::string& s) {
    std::ofstream out(p);
    out << s;
  }
  fs::path dir_;
};

std::vector<FieldDesc> live_fields(const std::string& event) {
  const std::string sys = event.substr(0, event.find(':')),
                    name = event.substr(event.find(':') + 1);
  return tp_test::fields_from_format_text(
      tp_test::read_file(kTracefs / "events" / sys / name / "format"));
}

// Expressions from a small grammar with random damage (drop, duplicate or
// swap a character), over sched_switch's fields.
std::string generate(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<const char*> xs) {
    auto it = xs.begin();
    std::advance(it, rng() % xs.size());
    return std::string(*it);
  };
  auto pred = [&]() {
    const int k = static_cast<int>(rng() % 5);
    if (k == 0)
      return pick({"prev_comm", "next_comm", "COMM", "comm"}) + " " + pick({"==", "!=", "~", "<"}) +
             " " +
             pick({"\"sh\"", "'h*'", "\"*ack*\"", "\"[a-z]?\"", "\"!sw*\"", "sh", "\"\"", "1"});
    if (k == 1)
      return pick({"CPU", "cpu", "prev_pid", "common_flags"}) + " " + pick({"&", "==", "!="}) +
             " " + pick({"CPUS{0}", "CPUS{0-1}", "CPUS{}", "CPUS{all}", "CPUS{9}", "CPUS{1"});
    return pick({"prev_pid", "next_pid", "prev_prio", "prev_state", "common_pid",
                 "common_preempt_count", "CPU", "stacktrace", "nosuch"}) +
           pick({" ", "", "  "}) + pick({"==", "!=", "<", "<=", ">", ">=", "&", "~", "=", "=>"}) +
           pick({" ", ""}) +
           pick({"0", "1", "-1", "0x10", "0777", "4294967296", "-9223372036854775808", "1.5", "0x",
                 "abc", "\"1\"", "18446744073709551616"});
  };
  std::string e;
  const int n = 1 + static_cast<int>(rng() % 4);
  int open = 0;
  for (int i = 0; i < n; ++i) {
    if (i) e += pick({" && ", " || ", "&&", " ||", " & ", " "});
    if (rng() % 4 == 0) e += "!";
    if (rng() % 4 == 0) {
      e += "(";
      ++open;
    }
    e += pred();
    if (open && rng() % 2) {
      e += ")";
      --open;
    }
  }
  while (open-- > 0)
    if (rng() % 5) e += ")";
  if (rng() % 8 == 0) e += pick({" &&", " ||", " !", ")", " (", "  "});
  if (rng() % 6 == 0 && !e.empty()) {  // damage
    const size_t at = rng() % e.size();
    switch (rng() % 3) {
      case 0:
        e.erase(at, 1);
        break;
      case 1:
        e.insert(at, 1, e[at]);
        break;
      default:
        std::swap(e[at], e[(at + 1) % e.size()]);
        break;
    }
  }
  return e;
}

// The one input a kernel that ignores trailing operators cannot handle (it
// indexes before its program and WARNs in dmesg): a trailing "&&" when "||"
// also appears. Never sent to such a kernel.
bool kernel_warns(const std::string& e) {
  std::string t = e;
  while (!t.empty() && (t.back() == ' ' || t.back() == '!' || t.back() == '\t')) t.pop_back();
  return t.size() >= 2 && t.compare(t.size() - 2, 2, "&&") == 0 &&
         e.find("||") != std::string::npos;
}

std::string errno_name(int e) {
  switch (e) {
    case EINVAL:
      return "EINVAL";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case ESRCH:
      return "ESRCH";
    case ENOMEM:
      return "ENOMEM";
    default:
      return std::to_string(e);
  }
}

int g_accepted = 0;

// The running kernel's symbols (/proc/kallsyms), for FIELD.function: a
// symbol's range runs to the next higher address. Read once.
std::optional<SymbolRange> live_symbol(std::string_view name) {
  static const auto table = [] {
    std::vector<std::pair<uint64_t, std::string>> syms;
    std::istringstream in(tp_test::read_file("/proc/kallsyms"));
    std::string addr, type, sym;
    while (in >> addr >> type >> sym) {
      std::string rest;
      std::getline(in, rest);  // [module]
      syms.emplace_back(std::stoull(addr, nullptr, 16), sym);
    }
    std::sort(syms.begin(), syms.end());
    return syms;
  }();
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].second != name || table[i].first == 0) continue;
    size_t j = i + 1;
    while (j < table.size() && table[j].first == table[i].first) ++j;
    if (j == table.size()) return std::nullopt;
    return SymbolRange{table[i].first, table[j].first - table[i].first};
  }
  return std::nullopt;
}

// "Linux <release> <version>" of the running kernel.
std::string kernel_build() {
  utsname u{};
  if (::uname(&u) != 0) return "Linux (uname failed)";
  return std::string("Linux ") + u.release + " " + u.version;
}

// The recorded verdicts: (event, escaped expression) -> accepted, errno name,
// message, caret.
struct Recorded {
  bool accepted = false;
  std::string err, message;
  int caret = -1;
};
std::map<std::pair<std::string, std::string>, Recorded> recorded_verdicts() {
  std::map<std::pair<std::string, std::string>, Recorded> out;
  std::istringstream in(
      tp_test::read_file(fs::path(TP_SOURCE_DIR) / "tests/filters/data/kernel_verdicts.tsv"));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> col;
    size_t pos = 0;
    for (;;) {
      const size_t t = line.find('\t', pos);
      col.push_back(line.substr(pos, t == std::string::npos ? std::string::npos : t - pos));
      if (t == std::string::npos) break;
      pos = t + 1;
    }
    if (col.size() < 3) continue;
    Recorded r;
    r.accepted = col[2] == "1";
    if (col.size() > 3) r.err = col[3];
    if (col.size() > 4) r.message = col[4];
    if (col.size() > 5 && !col[5].empty()) r.caret = std::stoi(col[5]);
    out[{col[0], col[1]}] = r;
  }
  return out;
}

// Which of the two kernel behaviours for a dangling operator this kernel has
// (filters/compile.h): asked once, with an expression that is harmless to both.
TrailingOperator g_trailing = TrailingOperator::reject;

Instance::Verdict compare(Instance& inst, const std::string& event,
                          const std::vector<FieldDesc>& fields, const std::string& expr, int& agree,
                          int& total) {
  CompileOptions opt;
  opt.extensions = false;
  opt.trailing_operator = g_trailing;
  opt.symbol_by_name = live_symbol;
  const auto k = inst.probe(event, expr);
  const auto r = compile(expr, fields, opt);
  ++total;
  g_accepted += k.accepted;
  INFO(event << " | " << expr);
  bool same = k.accepted == r.ok();
  if (same && !r.ok()) {
    CHECK(errno_name(r.error().errno_value()) == errno_name(k.err));
    CHECK(std::string(r.error().message()) == k.message);
    CHECK(r.error().caret() == k.caret);
    same = errno_name(r.error().errno_value()) == errno_name(k.err) &&
           r.error().message() == k.message && r.error().caret() == k.caret;
  }
  CHECK(k.accepted == r.ok());
  agree += same;
  return k;
}

}  // namespace

TEST_CASE("live kernel: corpus and generated expressions get the kernel's verdict",
          "[filters][kernel][live]") {
  if (!tp_test::tracefs_writable())
    TP_SKIP("tracefs is not writable (needs root and /sys/kernel/tracing)");
  if (!fs::exists(kTracefs / "events/sched/sched_switch/format"))
    TP_SKIP("no sched:sched_switch event");
  Instance inst;
  int agree = 0, total = 0;
  const std::string build = kernel_build();
  // Both dangling operators, asked with expressions harmless to both dialects.
  const bool and_ok = inst.probe("sched:sched_switch", "prev_pid == 0 &&").accepted;
  const bool or_ok = inst.probe("sched:sched_switch", "prev_pid == 0 ||").accepted;
  INFO(build << ": a trailing && is " << (and_ok ? "ignored" : "rejected") << ", a trailing || is "
             << (or_ok ? "ignored" : "rejected"));
  REQUIRE(and_ok == or_ok);  // compile() has one dialect for both
  g_trailing = and_ok ? TrailingOperator::ignore : TrailingOperator::reject;
  WARN("live kernel (" << build << "): a trailing && or || is "
                       << (g_trailing == TrailingOperator::ignore
                               ? "ignored (TrailingOperator::ignore)"
                               : "rejected (TrailingOperator::reject)"));
  const auto recorded = recorded_verdicts();
  int differ = 0, compared = 0;
  // The probed corpus, re-asked (events missing on this kernel are skipped).
  std::istringstream corpus(
      tp_test::read_file(fs::path(TP_SOURCE_DIR) / "tests/filters/data/kernel_corpus.tsv"));
  std::string line;
  while (std::getline(corpus, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string event = line.substr(0, line.find('\t'));
    std::string sys = event.substr(0, event.find(':')), name = event.substr(event.find(':') + 1);
    if (!fs::exists(kTracefs / "events" / sys / name / "format")) continue;
    std::string expr;
    const std::string raw = line.substr(line.find('\t') + 1);
    for (size_t i = 0; i < raw.size(); ++i) {  // the corpus escapes
      if (raw[i] == '\\' && i + 1 < raw.size()) {
        const char c = raw[++i];
        if (c == 'n')
          expr += '\n';
        else if (c == 't')
          expr += '\t';
        else if (c == 'v')
          expr += '\v';
        else if (c == '\\')
          expr += '\\';
        else if (c == 'x')
          expr += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16)), i += 2;
        else
          expr += '\\', expr += c;
      } else {
        expr += raw[i];
      }
    }
    const Instance::Verdict live = compare(inst, event, live_fields(event), expr, agree, total);
    // The recorded verdict of the same line, when there is one.
    const auto it = recorded.find({event, raw});
    if (it == recorded.end()) continue;
    ++compared;
    const Recorded& rec = it->second;
    const bool same = rec.accepted == live.accepted &&
                      (live.accepted || (rec.err == errno_name(live.err) &&
                                         rec.message == live.message && rec.caret == live.caret));
    if (!same) {
      ++differ;
      WARN("the recorded verdict differs from the live kernel's, which decides ("
           << build << "): " << event << " | " << raw << " | recorded "
           << (rec.accepted ? "accepted"
                            : rec.err + " " + rec.message + " @" + std::to_string(rec.caret))
           << ", live "
           << (live.accepted ? "accepted"
                             : errno_name(live.err) + " " + live.message + " @" +
                                   std::to_string(live.caret)));
    }
  }
  WARN("live kernel (" << build << "): " << differ << " of " << compared
                       << " recorded verdicts (data/kernel_verdicts.tsv) differ from its own");
  CHECK(compared > 100);
  // Generated expressions.
  const std::string ev = "sched:sched_switch";
  const auto fields = live_fields(ev);
  std::mt19937 rng(20240601);
  int generated = 0;
  while (generated < 3000) {
    const std::string e = generate(rng);
    if (g_trailing == TrailingOperator::ignore && kernel_warns(e)) continue;
    compare(inst, ev, fields, e, agree, total);
    ++generated;
  }
  WARN("live kernel (" << build << "): " << agree << "/" << total
                       << " expressions got the kernel's verdict and error (" << g_accepted
                       << " accepted by the kernel)");
  CHECK(agree == total);
}

TEST_CASE("live kernel: the filter oracle's expressions, re-asked, the live kernel decides",
          "[filters][kernel][live]") {
  if (!tp_test::tracefs_writable())
    TP_SKIP("tracefs is not writable (needs root and /sys/kernel/tracing)");
  const fs::path root = tp_test::shared_data_or_skip("kernel/filter-oracle");
  // Every expression of the oracle was accepted by the build that captured it
  // (its README names it); the kernel here may answer otherwise.
  Instance inst;
  const std::string build = kernel_build();
  g_trailing = inst.probe("sched:sched_switch", "prev_pid == 0 &&").accepted
                   ? TrailingOperator::ignore
                   : TrailingOperator::reject;
  int agree = 0, total = 0, now_rejected = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!fs::exists(entry.path() / "expr.txt")) continue;
    std::string expr = tp_test::read_file(entry.path() / "expr.txt");
    if (!expr.empty() && expr.back() == '\n') expr.pop_back();
    std::string event = tp_test::read_file(entry.path() / "event.txt");
    event = event.substr(0, event.find('\n'));
    if (!fs::exists(kTracefs / "events" / event.substr(0, event.find(':')) /
                    event.substr(event.find(':') + 1)))
      continue;
    if (g_trailing == TrailingOperator::ignore && kernel_warns(expr)) continue;
    const Instance::Verdict live = compare(inst, event, live_fields(event), expr, agree, total);
    if (!live.accepted) {
      ++now_rejected;
      WARN("filter-oracle " << entry.path().filename().string() << " (" << expr
                            << "): recorded accepted, the live "
                            << "kernel (" << build << ") says " << errno_name(live.err) << " "
                            << live.message << " @" << live.caret
                            << "; compile() follows the live kernel");
    }
  }
  WARN("live kernel (" << build << "): " << agree << "/" << total
                       << " filter-oracle expressions got its verdict; " << now_rejected
                       << " it now rejects");
  CHECK(total == 69);
  CHECK(agree == total);
}
