// Parser: acceptance, errors and carets as the kernel decides them (a frozen
// table probed on Linux 6.18, data/kernel_verdicts.tsv), error_log rendering,
// the "0" and length rules, and pathological inputs.
#include "tracepipe/filters/parser.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <map>
#include <sstream>

#include "format_fields.h"
#include "test_events.h"

using namespace tracepipe::filters;
using tp_test::must_compile;
using tp_test::must_fail;

namespace {

// The escapes of data/kernel_corpus.tsv: \n \t \v \\ \xHH.
std::string unescape(std::string_view s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      o += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == 'n')
      o += '\n';
    else if (c == 't')
      o += '\t';
    else if (c == 'v')
      o += '\v';
    else if (c == '\\')
      o += '\\';
    else if (c == 'x') {
      o += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      o += '\\';
      o += c;
    }
  }
  return o;
}

std::string errno_name(int e) {
  static const std::map<int, std::string> n = {{EINVAL, "EINVAL"},
                                               {EPERM, "EPERM"},
                                               {ENOENT, "ENOENT"},
                                               {ESRCH, "ESRCH"},
                                               {ENOMEM, "ENOMEM"}};
  auto it = n.find(e);
  return it == n.end() ? std::to_string(e) : it->second;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cols(1);
  for (char c : line) {
    if (c == '\t')
      cols.emplace_back();
    else
      cols.back() += c;
  }
  return cols;
}

}  // namespace

TEST_CASE("parser: the kernel's verdict, errno, message and caret for 130 probed expressions",
          "[filters][parser][kernel]") {
  const auto dir = std::filesystem::path(TP_SOURCE_DIR) / "tests/filters/data";
  std::istringstream in(tp_test::read_file(dir / "kernel_verdicts.tsv"));
  std::string line;
  std::getline(in, line);
  int n = 0;
  CompileOptions opt;
  opt.nr_cpu_ids = 2;      // the probing VM
  opt.extensions = false;  // strict kernel syntax
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto c = split_tabs(line);
    REQUIRE(c.size() == 6);
    const std::string expr = unescape(c[1]);
    INFO(c[0] << " | " << c[1]);
    const auto r = compile(expr, tp_test::kernel_fields(c[0]), opt);
    if (c[2] == "1") {
      if (!r.ok()) FAIL(r.error().render(expr));
    } else {
      REQUIRE_FALSE(r.ok());
      CHECK(errno_name(r.error().errno_value()) == c[3]);
      CHECK(std::string(r.error().message()) == c[4]);
      CHECK(std::to_string(r.error().caret()) == c[5]);
    }
    ++n;
  }
  CHECK(n == 130);
}

TEST_CASE("parser: render() is the kernel's error_log entry", "[filters][parser]") {
  const auto f = tp_test::sched_switch_fields();
  const FilterError e = must_fail("no_such_field == 1\n", f);
  CHECK(e.code == FilterErr::field_not_found);
  CHECK(e.pos == 14);
  CHECK(e.errno_value() == EINVAL);
  CHECK(e.render("no_such_field == 1\n") ==
        "event filter parse error: error: Field not found\n"
        "  Command: no_such_field == 1\n"
        "                         ^\n");
  const FilterError err = must_fail("== 0", f);
  CHECK(err.message() == "Error");
  CHECK(err.errno_value() == EPERM);
  CHECK(err.render("== 0") ==
        "event filter parse error: error: Error\n  Command: == 0\n           ^\n");
}

TEST_CASE("parser: a dangling operator is \"Meaningless filter expression\" at the end",
          "[filters][parser]") {
  const auto f = tp_test::sched_switch_fields();
  // Asked of the kernel here (6.18.44 build v1045): the caret is the end of
  // the command as the kernel keeps it (trailing whitespace stripped).
  const std::pair<const char*, int> rows[] = {
      {"prev_pid == 0 &&", 16},
      {"prev_pid == 0 && ", 16},
      {"prev_pid == 0 ||  \n", 16},
      {"prev_pid == 0 && !", 18},
      {"prev_pid == 0 && ! !", 20},
      {"  prev_pid == 0 &&", 18},
      {"(prev_pid == 0) &&", 18},
      {"(prev_pid == 0 || next_pid == 0) &&", 35},
      {"prev_pid == 0 || next_pid == 0 ||", 33},
      {"prev_pid == 0 || next_pid == 0 &&", 33},  // the old build's WARN case
  };
  for (const auto& [e, caret] : rows) {
    INFO(e);
    const FilterError err = must_fail(e, f);
    CHECK(err.code == FilterErr::invalid_filter);
    CHECK(err.message() == "Meaningless filter expression");
    CHECK(err.errno_value() == EINVAL);
    CHECK(err.caret() == caret);
  }
  CHECK(must_fail("prev_pid == 0 &&", f).render("prev_pid == 0 &&") ==
        "event filter parse error: error: Meaningless filter expression\n"
        "  Command: prev_pid == 0 &&\n"
        "                           ^\n");
  // Not dangling: a lone "!" has no predicate, and a group's dangling
  // operator meets its ')' first.
  CHECK(must_fail("!", f).message() == "No filter found");
  CHECK(must_fail("(prev_pid == 0 ||)", f).message() == "Error");
}

TEST_CASE(
    "parser: TrailingOperator::ignore drops a dangling operator, as the oracle's kernel build did",
    "[filters][parser]") {
  const auto f = tp_test::sched_switch_fields();
  CompileOptions old;
  old.trailing_operator = TrailingOperator::ignore;
  CHECK(must_compile("prev_pid == 0 &&", f, old)->predicate_count() == 1);  // oracle 024
  CHECK(must_compile("prev_pid == 0 || next_pid == 0 ||", f, old)->predicate_count() == 2);
  CHECK(must_compile("prev_pid == 0 && ! !", f, old)->predicate_count() == 1);
  CHECK(must_compile("(prev_pid == 0 || next_pid == 0) &&", f, old)->predicate_count() == 2);
  // A trailing "&&" with a top-level "||": that kernel indexes before its
  // program array, WARNs and rejects with "Error" (EINVAL).
  for (const char* e :
       {"prev_pid == 0 || next_pid == 0 &&", "prev_pid == 0 || next_pid == 0 && prev_prio == 1 &&",
        "prev_pid == 0 && next_pid == 0 || prev_prio == 1 && !"}) {
    INFO(e);
    const FilterError err = must_fail(e, f, old);
    CHECK(err.code == FilterErr::errno_error);
    CHECK(err.errno_value() == EINVAL);
  }
}

TEST_CASE("parser: write-level rules: \"0\", trailing whitespace, NUL, 4095 bytes",
          "[filters][parser]") {
  const auto f = tp_test::sched_switch_fields();
  CHECK(must_compile(" 0 \n", f)->predicate_count() == 0);
  CHECK(must_compile("prev_pid == 0 \n\t ", f)->predicate_count() == 1);
  CHECK(kernel_command("  a == 1 \n") == "  a == 1");
  CHECK(kernel_command(std::string_view("a == 1\0junk", 11)) == "a == 1");
  CHECK(must_compile(std::string_view("prev_pid == 0\0 garbage", 22), f)->predicate_count() == 1);
  std::string big = "prev_pid == 0";
  while (big.size() + 17 <= kMaxExpressionBytes) big += " || prev_pid == 0";
  CHECK(big.size() <= kMaxExpressionBytes);
  CHECK(must_compile(big, f)->predicate_count() > 200);
  big.append(kMaxExpressionBytes + 1 - big.size(), ' ');
  const FilterError e = must_fail(big, f);
  CHECK(e.code == FilterErr::expression_too_long);
  CHECK(e.errno_value() == EINVAL);
}

TEST_CASE("parser: deep nesting and long chains never recurse or hang", "[filters][parser]") {
  // A hang is caught by the test's CTest timeout, not by a clock here.
  const auto f = tp_test::sched_switch_fields();
  // 1300 nested groups, every other one negated: about as deep as 4 KiB allows.
  std::string deep;
  const int depth = 1300;
  for (int i = 0; i < depth; ++i) deep += i % 2 ? "(" : "!(";
  deep += "prev_pid==1";
  deep.append(depth, ')');
  REQUIRE(deep.size() <= kMaxExpressionBytes);
  const auto prog = must_compile(deep, f);
  CHECK(prog->predicate_count() == 1);
  tp_test::Record rec(64);
  rec.set<int32_t>(24, 1);
  CHECK(prog->match(rec.span()));  // 650 negations: even
  CHECK_FALSE(must_compile("!" + deep, f)->match(rec.span()));
  // Unbalanced at depth, and a chain of 700 predicates.
  CHECK(must_fail(std::string(4000, '('), f).code == FilterErr::too_many_open);
  std::string chain = "prev_pid==1";
  while (chain.size() + 13 <= kMaxExpressionBytes) chain += "&&prev_pid==1";
  CHECK(must_compile(chain, f)->predicate_count() > 300);
  std::string ors = "!(" + chain + ")";
  CHECK(ors.size() <= kMaxExpressionBytes + 2);
}

TEST_CASE("parser: Latin-1 whitespace and letters are the kernel's", "[filters][parser]") {
  const auto f = tp_test::sched_switch_fields();
  CHECK(must_compile("prev_pid\xa0==\xa0"
                     "0",
                     f)
            ->predicate_count() == 1);  // 0xA0 is a space
  CHECK(must_fail("prev_pid == 1\xe9", f).message() ==
        "Illegal integer value");  // 0xE9 is a letter
  CHECK(must_fail("pr\xe9v == 1", f).message() == "Field not found");
}
