// Fuzz target: print fmt compilation and rendering on untrusted text and
// payloads (a trace.dat's formats and records are both untrusted).
//
// Input layout: <print fmt text> '\0' <payload bytes>. The event has a fixed
// set of fields of every kind (ints of each width, char array, __data_loc
// and __rel_loc strings, a dynamic u8 array, a pointer) so the fuzzer can
// reach every helper. Property: PrintFmt never throws (besides bad_alloc),
// never reads outside the payload (ASan), never hangs; render_field_list too.
//
// The sources are compiled in so they carry coverage and ASan checks (see
// tracedat_reader_fuzz.cc).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "tracepipe/core/events/event_format.cc"
#include "tracepipe/core/tracedat/print_fmt.cc"
#include "tracepipe/core/tracedat/print_fmt_parse.cc"
#include "tracepipe/core/tracedat/trace_symbols.cc"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracepipe;
  const auto* text = reinterpret_cast<const char*>(data);
  const void* nul = std::memchr(text, 0, size);
  const size_t fmt_len = nul ? static_cast<size_t>(static_cast<const char*>(nul) - text) : size;
  static const EventFormat base = [] {
    EventFormat f;
    f.system = "fz";
    f.name = "ev";
    f.id = 1;
    f.common_fields = kernel_common_fields();
    f.fields = {{"int", "i", 8, 4, true},
                {"unsigned long", "ul", 16, 8, false},
                {"short", "s", 24, 2, true},
                {"unsigned char", "c", 26, 1, false},
                {"char[8]", "comm", 27, 8, false},
                {"__data_loc char[]", "str", 36, 4, false},
                {"__rel_loc char[]", "rstr", 40, 4, false},
                {"__data_loc u8[]", "arr", 44, 4, false},
                {"const char *", "ptr", 48, 8, false},
                {"unsigned long[4]", "args", 56, 32, false},
                {"u8[16]", "ip6", 88, 16, false},
                {"char[]", "rest", 104, 0, false}};
    return f;
  }();
  EventFormat f = base;
  f.print_fmt.assign(text, fmt_len);
  const std::span<const std::byte> payload(
      reinterpret_cast<const std::byte*>(data) + std::min(size, fmt_len + 1),
      size - std::min(size, fmt_len + 1));
  static const KallsymsTable ks("ffffffff81000000 T _stext\nffffffff81001000 t other\n");
  static const PrintkTable pk("0xffffffff82000000 : \"str\"\n");
  const PrintFmt p(f);
  fmt::memory_buffer out;
  p.render(payload, out, PrintContext{&ks, &pk});
  render_field_list(f, payload, out);
  return 0;
}
