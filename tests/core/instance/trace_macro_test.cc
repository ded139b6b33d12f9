// TRACEPIPE_TRACE and EventDecl::enabled(): the disabled check evaluates no
// argument, the enabled path records into every listening instance once per
// call, and a declaration that shares another's descriptor ((D2) in
// core/instance/event_decl.h) still records.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "test_events.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

using Counted = EventDecl<"tpmacro", "counted", Int<"value", uint32_t>, Str<"label">>;

// Two declaration types with one schema: the enum's underlying type is
// uint32_t, so both print "u32 code" and map to the same descriptor.
enum class Code : uint32_t {};
using Shared = EventDecl<"tpmacro", "shared", Int<"code", uint32_t>>;
using SharedAlias = EventDecl<"tpmacro", "shared", Int<"code", Code>>;

int evaluations = 0;
uint32_t counted_value(uint32_t v) {
  ++evaluations;
  return v;
}
std::string_view counted_label() {
  ++evaluations;
  return "label";
}

}  // namespace

TEST_CASE("TRACEPIPE_TRACE: no argument is evaluated while no instance listens",
          "[core][trace_macro]") {
  evaluations = 0;
  Instance idle(small_options(Staging::per_thread));  // exists, event not enabled
  REQUIRE_FALSE(Counted::enabled());
  for (uint32_t i = 0; i < 100; ++i) TRACEPIPE_TRACE(Counted, counted_value(i), counted_label());
  CHECK(evaluations == 0);
  CHECK(drain(idle).empty());
  CHECK(idle.event_stats(Counted::desc()).kept == 0);
}

TEST_CASE("TRACEPIPE_TRACE: arguments are evaluated once per call when instances listen",
          "[core][trace_macro]") {
  evaluations = 0;
  Instance a(small_options(Staging::per_thread));
  Instance b(small_options(Staging::per_cpu));
  a.enable(Counted::desc());
  CHECK(Counted::enabled());  // the enable published into the word the check loads
  b.enable(Counted::desc());
  REQUIRE(b.set_filter(Counted::desc(), "value >= 2").ok());
  for (uint32_t i = 0; i < 4; ++i) TRACEPIPE_TRACE(Counted, counted_value(i), counted_label());
  CHECK(evaluations == 8);  // two arguments, four calls, whatever the instance count
  const auto ra = drain(a), rb = drain(b);
  REQUIRE(ra.size() == 4);
  REQUIRE(rb.size() == 2);
  for (uint32_t i = 0; i < 4; ++i) {
    CHECK(ra[i].header().common_type == Counted::desc().id());
    CHECK(ra[i].at<uint32_t>(8) == i);
    CHECK(std::string(reinterpret_cast<const char*>(ra[i].bytes.data()) + 16) == "label");
  }
  CHECK(rb[0].at<uint32_t>(8) == 2);
  CHECK(rb[1].at<uint32_t>(8) == 3);

  // Disabled everywhere again: back to zero evaluations.
  a.enable(Counted::desc(), false);
  b.enable(Counted::desc(), false);
  CHECK_FALSE(Counted::enabled());
  TRACEPIPE_TRACE(Counted, counted_value(9), counted_label());
  CHECK(evaluations == 8);
  CHECK(drain(a).empty());
  CHECK(drain(b).empty());
}

TEST_CASE("EventDecl::trace() records like the macro and checks first", "[core][trace_macro]") {
  Instance a(small_options(Staging::off));
  CHECK_FALSE(Counted::enabled());
  Counted::trace(5, "before");  // nobody listens
  a.enable(Counted::desc());
  Counted::trace(6, "after");
  const auto recs = drain(a);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].at<uint32_t>(8) == 6);
  a.enable(Counted::desc(), false);
}

TEST_CASE("TRACEPIPE_TRACE: a declaration sharing another's descriptor still records",
          "[core][trace_macro]") {
  // Whichever type registered first owns the descriptor's word; the other
  // holds the always-check sentinel (D2). Either way both must record.
  const EventDesc& d = Shared::desc();
  REQUIRE(&SharedAlias::desc() == &d);
  CHECK(
      (Shared::enabled() != SharedAlias::enabled()));  // exactly one is the sentinel while disabled

  Instance inst(small_options(Staging::per_thread));
  evaluations = 0;
  TRACEPIPE_TRACE(SharedAlias,
                  static_cast<Code>(counted_value(1)));  // sentinel or not: nothing recorded
  TRACEPIPE_TRACE(Shared, counted_value(2));
  CHECK(evaluations == 1);  // only the sentinel holder evaluates its argument
  CHECK(drain(inst).empty());

  inst.enable(d);
  CHECK(Shared::enabled());
  CHECK(SharedAlias::enabled());
  TRACEPIPE_TRACE(Shared, 10u);
  TRACEPIPE_TRACE(SharedAlias, Code{11});
  SharedAlias::trace(Code{12});
  const auto recs = drain(inst);
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].at<uint32_t>(8) == 10);
  CHECK(recs[1].at<uint32_t>(8) == 11);
  CHECK(recs[2].at<uint32_t>(8) == 12);
  for (const Rec& r : recs) CHECK(r.header().common_type == d.id());
  inst.enable(d, false);
}

namespace {
// Used below through desc() only: no emit, trace or enabled() anywhere.
using DescOnly = EventDecl<"tpstartup", "desc_only", Int<"x", int32_t>>;
}  // namespace

TEST_CASE("EventDecl: a declaration used only through desc() is registered before main",
          "[core][trace_macro]") {
  // Looked up by name first: only static initialisation can have put it
  // there (a config file applied at the top of main() relies on this).
  const EventDesc* by_name = Registry::global().find("tpstartup:desc_only");
  REQUIRE(by_name != nullptr);
  CHECK(by_name == &DescOnly::desc());
  Instance inst{InstanceOptions{}};
  CHECK(inst.enable("tpstartup:desc_only") == 1);
  CHECK(inst.enabled(DescOnly::desc()));
}
