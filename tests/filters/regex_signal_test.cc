// The RE2 extension (=~) is evaluated by a signal handler that interrupts an
// RE2 match on the same thread: the nested evaluation is refused ("no
// match", counted in regex_reentries()) instead of re-entering RE2, which
// locks and allocates and had aborted or hung a traced program.
//
// Deterministic: the x86 trap flag raises SIGTRAP after every instruction of
// the outer match, and the handler runs a nested match each time, so nested
// matches run at every point inside RE2 (and outside it, before and after).
#include <catch2/catch.hpp>
#include <cstring>

#include "single_step.h"
#include "test_support.h"
#include "tracepipe/filters/string_match.h"

using tracepipe::filters::CString;
using tracepipe::filters::StringMatcher;

namespace {

const StringMatcher* g_re = nullptr;
volatile long g_nested = 0, g_nested_true = 0;
const char kSubject[] = "hackbench-42";
const CString kS{reinterpret_cast<const unsigned char*>(kSubject), sizeof kSubject};

void nested_match() {
  g_nested = g_nested + 1;
  if (g_re->match(kS, 0)) g_nested_true = g_nested_true + 1;
}

}  // namespace

TEST_CASE(
    "regex: a signal handler's =~ inside an RE2 match on the same thread is refused and counted",
    "[filters][regex]") {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TP_TEST_SANITIZED 1
#endif
#endif
#if !defined(__x86_64__) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || \
    defined(TP_TEST_SANITIZED)
  TP_SKIP(
      "single-stepping needs x86-64 and an uninstrumented build (sanitizers step through their "
      "runtime)");
#else
  std::string err;
  const auto re = StringMatcher::regex("^hack[a-z]+-[0-9]+$", err);
  REQUIRE(re);
  g_re = re.get();
  REQUIRE(re->match(kS, 0));  // warm: RE2 builds its DFA state outside the stepped run
  const uint64_t before = tracepipe::filters::regex_reentries();
  const bool outer = tp_test::single_stepped(nested_match, [&] { return re->match(kS, 0); });
  const uint64_t refused = tracepipe::filters::regex_reentries() - before;
  CHECK(outer);        // the interrupted match still answers right
  CHECK(refused > 0);  // some handlers ran while inside RE2 ...
  CHECK(g_nested_true + static_cast<long>(refused) ==
        g_nested);           // ... exactly those read "no match"
  CHECK(g_nested_true > 0);  // handlers outside RE2 matched normally
#endif
}
