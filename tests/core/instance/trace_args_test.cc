// The arguments TRACEPIPE_TRACE, EventDecl::trace() and EventDecl::emit()
// accept: exactly one per field, each converted implicitly to the field's
// arg_type, the same set for all three (core/instance/event_decl.h:
// EventDecl::TraceCall). Checked at compile time on the call the macro
// expands to, then at run time on what the accepted conversions record.
//
// History: TRACEPIPE_TRACE passed its arguments to a function whose
// parameters were the field types (until f0c5507), so it refused what
// emit() refuses. f0c5507 built the argument tuple from the raw arguments
// instead (`Args{a...}`, std::tuple's constructor), which also took no
// arguments at all (zeros recorded), a std::pair or std::tuple for several
// fields, a tuple of the field types, and explicit conversions
// (std::optional to a bool field, a class with an explicit operator int).
// Each of those is a row below.
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "test_events.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

enum class Mode : uint32_t { idle = 0, busy = 7 };
enum Plain : int { plain_one = 1 };

using Three = EventDecl<"tpargs", "three", Int<"id", uint32_t>, Int<"on", bool>, Chars<"tag", 8>>;
using Two = EventDecl<"tpargs", "two", Int<"a", int32_t>, Int<"b", int32_t>>;
using OneInt = EventDecl<"tpargs", "one_int", Int<"v", int32_t>>;
using OneBool = EventDecl<"tpargs", "one_bool", Int<"on", bool>>;
using OneMode = EventDecl<"tpargs", "one_mode", Int<"mode", Mode>>;
using OneChars = EventDecl<"tpargs", "one_chars", Chars<"c", 8>>;
using OneStr = EventDecl<"tpargs", "one_str", Str<"s">>;

struct ExplicitInt {
  explicit operator int() const { return 5; }
};
struct ImplicitInt {
  operator int() const { return 6; }
};
struct ExplicitView {
  explicit operator std::string_view() const { return "x"; }
};

// What TRACEPIPE_TRACE(E, a...) calls once E::enabled() is true.
template <class E, class... A>
concept MacroTakes = requires(A&&... a) {
  detail::DeclAccess::trace_call<E>::run(std::forward<A>(a)...);
};
template <class E, class... A>
concept TraceTakes = requires(A&&... a) {
  E::trace(std::forward<A>(a)...);
};
template <class E, class... A>
concept EmitTakes = requires(Instance& i, A&&... a) {
  E::emit(i, std::forward<A>(a)...);
};

template <class E, class... A>
concept AllTake = MacroTakes<E, A...> && TraceTakes<E, A...> && EmitTakes<E, A...>;
template <class E, class... A>
concept NoneTakes = !MacroTakes<E, A...> && !TraceTakes<E, A...> && !EmitTakes<E, A...>;

// The tuple's constructor (what f0c5507's macro used) took every refusal
// below: these show that the rows test something.
template <class E, class... A>
concept TupleTakes = requires(A&&... a) {
  static_cast<void>(typename E::Args{std::forward<A>(a)...});
};

// ---- refused: arity --------------------------------------------------------
static_assert(NoneTakes<Three>);  // TRACEPIPE_TRACE(Three): no arguments
static_assert(TupleTakes<Three>);
static_assert(NoneTakes<Three, uint32_t, bool>);                    // one short
static_assert(NoneTakes<Three, uint32_t, bool, const char*, int>);  // one too many
static_assert(NoneTakes<OneInt>);
static_assert(TupleTakes<OneInt>);

// ---- refused: one object for several fields ---------------------------------
static_assert(NoneTakes<Two, std::pair<int, int>>);
static_assert(TupleTakes<Two, std::pair<int, int>>);
static_assert(NoneTakes<Two, std::tuple<int, int>>);
static_assert(TupleTakes<Two, std::tuple<int, int>>);
static_assert(NoneTakes<Two, Two::Args>);  // the argument tuple itself
static_assert(TupleTakes<Two, Two::Args>);
static_assert(NoneTakes<Two, const Two::Args&>);
static_assert(NoneTakes<OneInt, std::tuple<int>>);  // a one-field tuple is not an int either
static_assert(TupleTakes<OneInt, std::tuple<int>>);

// ---- refused: explicit conversions ------------------------------------------
static_assert(NoneTakes<OneBool, std::optional<bool>>);  // explicit operator bool
static_assert(TupleTakes<OneBool, std::optional<bool>>);
static_assert(NoneTakes<OneBool, std::optional<int>>);
static_assert(NoneTakes<OneBool, const std::optional<bool>&>);
static_assert(NoneTakes<OneInt, ExplicitInt>);
static_assert(TupleTakes<OneInt, ExplicitInt>);
static_assert(NoneTakes<OneChars, ExplicitView>);
static_assert(TupleTakes<OneChars, ExplicitView>);
static_assert(NoneTakes<OneStr, ExplicitView>);
static_assert(NoneTakes<OneMode, uint32_t>);  // an integer is not a scoped enum
static_assert(NoneTakes<OneMode, int>);
static_assert(NoneTakes<OneInt, Mode>);  // nor the other way round
static_assert(NoneTakes<OneChars, int>);
static_assert(NoneTakes<OneInt, const char*>);

// ---- accepted: implicit conversions, as emit() takes them -------------------
static_assert(AllTake<Three, uint32_t, bool, const char*>);
static_assert(AllTake<Three, int, int, std::string>);  // int -> bool, std::string -> string_view
static_assert(AllTake<Three, uint64_t&, const bool&, const std::string&>);
static_assert(AllTake<Three, short, void*, std::string_view>);  // pointer -> bool
static_assert(AllTake<Three, const uint32_t, bool, const char (&)[4]>);
static_assert(AllTake<Two, int, long>);
static_assert(AllTake<Two, int64_t, char>);  // narrowing, as a function argument
static_assert(AllTake<OneInt, ImplicitInt>);
static_assert(AllTake<OneInt, Plain>);  // an unscoped enum converts
static_assert(AllTake<OneInt, double>);
static_assert(AllTake<OneBool, int>);
static_assert(AllTake<OneMode, Mode>);
static_assert(AllTake<OneMode, const Mode&>);
static_assert(AllTake<OneChars, std::string>);
static_assert(AllTake<OneStr, const char*>);
static_assert(AllTake<OneStr, std::string&&>);
// A braced list initialises the parameter as it does for emit() (copy-list-
// initialisation: no narrowing, no explicit constructor).
static_assert(requires { detail::DeclAccess::trace_call<OneInt>::run({}); });
static_assert(requires { detail::DeclAccess::trace_call<Two>::run({1}, {2}); });
static_assert(requires(Instance & i) { Two::emit(i, {1}, {2}); });

}  // namespace

TEST_CASE("TRACEPIPE_TRACE: implicitly converted arguments record what emit() records",
          "[core][trace_macro]") {
  Instance traced(small_options(Staging::per_thread));
  Instance emitted(small_options(Staging::per_thread));
  traced.enable(Three::desc());
  emitted.enable(Three::desc());
  // Three::emit first (trace() would fan out to both while both listen).
  const std::string text = "abcdefghij";  // longer than the field: 8 bytes kept
  int64_t big = (int64_t{1} << 32) + 7;   // to uint32_t: 7 (not const: no -Woverflow)
  (void)Three::emit(emitted, big, 2, text);
  (void)Three::emit(emitted, 9u, static_cast<void*>(nullptr), "xy");
  (void)Three::emit(emitted, ImplicitInt{}, true, std::string_view("tag"));
  emitted.enable(Three::desc(), false);
  TRACEPIPE_TRACE(Three, big, 2, text);
  TRACEPIPE_TRACE(Three, 9u, static_cast<void*>(nullptr), "xy");
  TRACEPIPE_TRACE(Three, ImplicitInt{}, true, std::string_view("tag"));
  const auto rt = drain(traced), re = drain(emitted);
  REQUIRE(rt.size() == 3);
  REQUIRE(re.size() == 3);
  for (size_t k = 0; k < 3; ++k) CHECK(rt[k].bytes == re[k].bytes);
  CHECK(rt[0].at<uint32_t>(Three::offsets[0]) == 7);
  CHECK(rt[0].at<uint8_t>(Three::offsets[1]) == 1);
  CHECK(std::string(reinterpret_cast<const char*>(rt[0].bytes.data()) + Three::offsets[2], 8) ==
        "abcdefgh");
  CHECK(rt[1].at<uint32_t>(Three::offsets[0]) == 9);
  CHECK(rt[1].at<uint8_t>(Three::offsets[1]) == 0);
  CHECK(std::string(reinterpret_cast<const char*>(rt[1].bytes.data()) + Three::offsets[2]) == "xy");
  CHECK(rt[2].at<uint32_t>(Three::offsets[0]) == 6);
  traced.enable(Three::desc(), false);
}
