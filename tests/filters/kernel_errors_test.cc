// The kernel's own verdicts on invalid filters (filter-oracle/invalid.tsv):
// every rejected expression must be rejected with the kernel's message,
// caret, errno and error_log text; every accepted one (index.tsv) must compile.
#include <catch2/catch.hpp>
#include <cerrno>
#include <map>
#include <sstream>

#include "format_fields.h"
#include "tracepipe/filters/compile.h"

using namespace tracepipe::filters;

namespace {

std::string kernel_unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> split_kernel_tabs(const std::string& line) {
  std::vector<std::string> cols;
  std::string cur;
  for (char c : line) {
    if (c == '\t') {
      cols.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  cols.push_back(cur);
  return cols;
}

std::string kernel_errno_name(int e) {
  static const std::map<int, std::string> names = {{EINVAL, "EINVAL"},
                                                   {EPERM, "EPERM"},
                                                   {ENOENT, "ENOENT"},
                                                   {ESRCH, "ESRCH"},
                                                   {ENOMEM, "ENOMEM"}};
  auto it = names.find(e);
  return it == names.end() ? std::to_string(e) : it->second;
}

CompileOptions reference_vm() {
  CompileOptions o;
  o.nr_cpu_ids = 2;  // the VM that produced the oracle had 2 CPUs
  o.trailing_operator =
      TrailingOperator::ignore;  // its kernel build (v657) accepted 024's "prev_pid == 0 &&"
  return o;
}

}  // namespace

TEST_CASE(
    "kernel errors: every rejected expression of invalid.tsv, message, caret, errno, error_log",
    "[filters][kernel]") {
  const auto path = tp_test::shared_data_or_skip("kernel/filter-oracle/invalid.tsv");
  std::istringstream in(tp_test::read_file(path));
  std::string line;
  std::getline(in, line);  // header
  int cases = 0, matched = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto col = split_kernel_tabs(line);
    REQUIRE(col.size() >= 8);
    const std::string event = col[0], expr = kernel_unescape(col[1]);
    const auto fields = tp_test::kernel_fields(event);
    const CompileResult r = compile(expr, fields, reference_vm());
    ++cases;
    INFO(event << " | " << expr);
    REQUIRE(col[2] == "0");
    REQUIRE_FALSE(r.ok());
    const FilterError& e = r.error();
    CHECK(std::string(e.message()) == col[4]);
    CHECK(std::to_string(e.caret()) == col[5]);
    CHECK(kernel_errno_name(e.errno_value()) == col[3]);
    // error_log entry without its "[ timestamp] " prefix.
    std::string log = kernel_unescape(col[6]);
    log = log.substr(log.find("] ") + 2) + "\n";
    CHECK(e.render(expr) == log);
    if (std::string(e.message()) == col[4] && std::to_string(e.caret()) == col[5] &&
        kernel_errno_name(e.errno_value()) == col[3] && e.render(expr) == log)
      ++matched;
  }
  CHECK(cases == 60);
  CHECK(matched == cases);
  WARN("invalid.tsv: " << matched << "/" << cases
                       << " rejected with the kernel's message, caret, errno and log");
}

TEST_CASE("kernel errors: every accepted expression of index.tsv compiles", "[filters][kernel]") {
  const auto root = tp_test::shared_data_or_skip("kernel/filter-oracle");
  std::istringstream in(tp_test::read_file(root / "index.tsv"));
  std::string line;
  std::getline(in, line);
  int cases = 0;
  CompileOptions opt = reference_vm();
  opt.symbol_by_name = [](std::string_view name) -> std::optional<SymbolRange> {
    if (name == "__alloc_skb") return SymbolRange{0xffffffff81e3d520ull, 0x1a0};
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto col = split_kernel_tabs(line);
    std::string id = col[0];
    std::string expr = tp_test::read_file(root / id / "expr.txt");
    if (!expr.empty() && expr.back() == '\n') expr.pop_back();
    std::istringstream events(tp_test::read_file(root / id / "event.txt"));
    std::string ev;
    while (std::getline(events, ev)) {
      if (ev.empty()) continue;
      INFO(id << " " << ev << " | " << expr);
      const CompileResult r = compile(expr, tp_test::kernel_fields(ev), opt);
      if (!r.ok()) FAIL(r.error().render(expr));
      CHECK(r.program()->predicate_count() > 0);
    }
    ++cases;
  }
  CHECK(cases == 69);
}
