#pragma once
// The fields of an EventDecl (core/instance/event_decl.h): Int, Chars and
// Str, how each lays out its bytes in the record and describes itself in
// the format file, and the short copies their put() uses.
//
// Record layout (what the kernel's TRACE_EVENT macro would produce for the
// same struct): the 8-byte common header, then the fields in declaration
// order, each aligned to its natural alignment (integers to their size, char
// arrays to 1, __data_loc words to 4), the fixed part padded to its largest
// alignment; then the dynamic strings, in declaration order, each with its
// NUL. A __data_loc word holds (length << 16) | offset-from-record-start,
// length including the NUL. Mirrors include/trace/trace_events.h:
// __dynamic_array / __string and __assign_str.
//
// Values: integers are stored as given (converted to the field's type);
// Chars<N> copies at most N bytes and zero-fills the rest (no NUL when the
// text has N bytes or more, as the kernel's memcpy does); Str copies at most
// kMaxStrLen bytes of the text, then a NUL.
#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tracepipe/core/instance/inline_lambda.h"

namespace tracepipe {

/// A string usable as a template argument: EventDecl<"sys", "name", ...>.
template <size_t N>
struct FixedString {
  char data[N] = {};
  constexpr FixedString(const char (&s)[N]) { std::copy_n(s, N, data); }
  constexpr std::string_view view() const { return {data, N - 1}; }
};

/// Longest text a Str field stores (bytes, without the NUL); longer text is
/// truncated. Keeps every record well inside a 4 KiB sub-buffer.
inline constexpr uint32_t kMaxStrLen = 1023;

namespace detail {

template <class T>
concept FieldInteger = (std::integral<T> || std::is_enum_v<T>)&&(sizeof(T) == 1 || sizeof(T) == 2 ||
                                                                 sizeof(T) == 4 || sizeof(T) == 8);

template <class T>
constexpr std::string_view kernel_int_type() {
  using U = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                        std::type_identity<T>>::type;
  if constexpr (std::is_same_v<U, bool>)
    return "bool";
  else if constexpr (std::is_same_v<U, char>)
    return "char";
  else if constexpr (std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1)
      return "s8";
    else if constexpr (sizeof(U) == 2)
      return "s16";
    else if constexpr (sizeof(U) == 4)
      return "s32";
    else
      return "s64";
  } else {
    if constexpr (sizeof(U) == 1)
      return "u8";
    else if constexpr (sizeof(U) == 2)
      return "u16";
    else if constexpr (sizeof(U) == 4)
      return "u32";
    else
      return "u64";
  }
}

template <class T>
constexpr std::string_view printf_conv() {
  using U = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                        std::type_identity<T>>::type;
  if constexpr (sizeof(U) == 8)
    return std::is_signed_v<U> ? "%lld" : "%llu";
  else
    return std::is_signed_v<U> ? "%d" : "%u";
}

constexpr uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

/// memcpy for short runtime lengths without a library call: overlapping
/// 16-, 8- or 4-byte moves up to 64 bytes, a call beyond. (A library call
/// here would make the whole out-of-line trace path keep its arguments in
/// callee-saved registers: pushes and pops on every event.)
[[gnu::always_inline]] inline void copy_short(std::byte* dst, const char* src, size_t n) noexcept {
  if (n > 16 && n <= 64) {
    struct B16 {
      uint64_t a, b;
    };
    B16 x, y;
    std::memcpy(&x, src, 16);
    std::memcpy(&y, src + n - 16, 16);
    if (n > 32) {
      B16 p, q;
      std::memcpy(&p, src + 16, 16);
      std::memcpy(&q, src + n - 32, 16);
      std::memcpy(dst + 16, &p, 16);
      std::memcpy(dst + n - 32, &q, 16);
    }
    std::memcpy(dst, &x, 16);
    std::memcpy(dst + n - 16, &y, 16);
  } else if (n >= 8 && n <= 16) {
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
  } else if (n < 4) {
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<std::byte>(src[i]);
  } else {
    std::memcpy(dst, src, n);
  }
}

/// The first n <= 16 bytes of src as two little-endian words, zero-filled
/// past n, read without touching a byte at or after src + n (overlapping
/// loads, as copy_short). Chars<N <= 16> stores these words: each record
/// byte then comes from one store, so a filter's load of the field (8 or 16
/// bytes, filters/program.h: eval_single_string) is forwarded from the store
/// buffer; zero-filling and then copying over it made such a load span two
/// stores, which cannot be forwarded (a stall on every event).
// GCC 12 clones trace_slow_path for a call site whose Chars argument is a
// short string literal, and then warns about the n >= 8 branch's loads
// (-Warray-bounds), a branch that cannot run for that length.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
[[gnu::always_inline]] inline void load_short(const char* src, size_t n,
                                              uint64_t (&w)[2]) noexcept {
  w[1] = 0;
  if (n >= 8) {
    uint64_t b;
    std::memcpy(&w[0], src, 8);
    std::memcpy(&b, src + n - 8, 8);
    if (n > 8) w[1] = b >> (8 * (16 - n));  // bytes [8, n) of src, n <= 16
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    w[0] = uint64_t{a} | (uint64_t{b} << (8 * (n - 4)));  // the overlap ORs equal bytes
  } else if (n > 0) {
    const auto at = [&](size_t i) {
      return uint64_t{static_cast<unsigned char>(src[i])} << (8 * i);
    };
    w[0] = at(0) | at(n / 2) | at(n - 1);
  } else {
    w[0] = 0;
  }
}
#pragma GCC diagnostic pop

/// Zeroes N bytes (a compile-time size) with explicit 16/8/4/2/1-byte stores.
/// Not memset: where GCC optimises a block for size (a path it guesses is
/// rare, e.g. a soft-disabled event's staging) it expands a constant memset
/// to `rep stos`, whose start-up costs far more than these few stores.
template <size_t N>
[[gnu::always_inline]] inline void zero_fixed(std::byte* p) noexcept {
  struct Z16 {
    uint64_t a, b;
  };
  constexpr Z16 z16{};
  constexpr uint64_t z8 = 0;
  constexpr uint32_t z4 = 0;
  constexpr uint16_t z2 = 0;
  [&]<size_t... I>(std::index_sequence<I...>) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    (std::memcpy(p + 16 * I, &z16, 16), ...);
  }
  (std::make_index_sequence<N / 16>{});
  constexpr size_t t = N / 16 * 16;
  if constexpr ((N & 8) != 0) std::memcpy(p + t, &z8, 8);
  if constexpr ((N & 4) != 0) std::memcpy(p + t + (N & 8), &z4, 4);
  if constexpr ((N & 2) != 0) std::memcpy(p + t + (N & 12), &z2, 2);
  if constexpr ((N & 1) != 0) p[N - 1] = std::byte{0};
}

}  // namespace detail

/// An integer (or enum) field: Int<"pid", int32_t>.
template <FixedString Name, detail::FieldInteger T>
struct Int {
  using value_type = T;
  using arg_type = T;
  static constexpr std::string_view name = Name.view();
  static constexpr uint32_t size = sizeof(T);
  static constexpr uint32_t align = alignof(T);
  static constexpr bool dynamic = false;
  static constexpr bool is_signed =
      std::is_signed_v<typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                                   std::type_identity<T>>::type>;
  static std::string type() { return std::string(detail::kernel_int_type<T>()); }
  static std::string print_arg() { return "REC->" + std::string(name); }
  static std::string_view conv() { return detail::printf_conv<T>(); }
  static constexpr uint32_t dyn_len(arg_type) noexcept { return 0; }
  [[gnu::always_inline]] static void put(std::byte* rec, uint32_t off, uint32_t& /*dyn*/,
                                         arg_type v) noexcept {
    std::memcpy(rec + off, &v, sizeof v);
  }
};

/// A fixed char array field: Chars<"comm", 16> is `char comm[16]`.
template <FixedString Name, uint32_t N>
struct Chars {
  static_assert(N > 0 && N <= 4096, "char array size must be 1..4096");
  using arg_type = std::string_view;
  static constexpr std::string_view name = Name.view();
  static constexpr uint32_t size = N;
  static constexpr uint32_t align = 1;
  static constexpr bool dynamic = false;
  static constexpr bool is_signed = false;
  static std::string type() { return "char[" + std::to_string(N) + "]"; }
  static std::string print_arg() { return "REC->" + std::string(name); }
  static std::string_view conv() { return "%s"; }
  static constexpr uint32_t dyn_len(arg_type) noexcept { return 0; }
  [[gnu::always_inline]] static void put(std::byte* rec, uint32_t off, uint32_t& /*dyn*/,
                                         arg_type v) noexcept {
    const size_t n = std::min<size_t>(v.size(), N);
    if constexpr (std::endian::native == std::endian::little) {
      // The first 16 bytes built in registers and stored once (see
      // load_short): a filter reads at most these from a char array on its
      // inline path; the rest zeroed, then copied over.
      uint64_t w[2];
      detail::load_short(v.data(), std::min<size_t>(n, 16), w);
      if constexpr (N <= 16) {
        std::memcpy(rec + off, w, N);
      } else {
        std::memcpy(rec + off, w, 16);
        detail::zero_fixed<N - 16>(rec + off + 16);
        if (n > 16) detail::copy_short(rec + off + 16, v.data() + 16, n - 16);
      }
    } else {
      detail::zero_fixed<N>(rec + off);  // a few vector stores
      detail::copy_short(rec + off, v.data(), n);
    }
  }
};

/// A dynamic string field: Str<"path"> is `__data_loc char[] path`.
template <FixedString Name>
struct Str {
  using arg_type = std::string_view;
  static constexpr std::string_view name = Name.view();
  static constexpr uint32_t size = 4;
  static constexpr uint32_t align = 4;
  static constexpr bool dynamic = true;
  static constexpr bool is_signed = false;
  static std::string type() { return "__data_loc char[]"; }
  static std::string print_arg() { return "__get_str(" + std::string(name) + ")"; }
  static std::string_view conv() { return "%s"; }
  [[gnu::always_inline]] static constexpr uint32_t dyn_len(arg_type v) noexcept {
    return static_cast<uint32_t>(std::min<size_t>(v.size(), kMaxStrLen)) + 1;
  }
  [[gnu::always_inline]] static void put(std::byte* rec, uint32_t off, uint32_t& dyn,
                                         arg_type v) noexcept {
    const uint32_t len = dyn_len(v);
    const uint32_t word = (len << 16) | dyn;
    std::memcpy(rec + off, &word, sizeof word);
    detail::copy_short(rec + dyn, v.data(), len - 1);
    rec[dyn + len - 1] = std::byte{0};
    dyn += len;
  }
};

namespace detail {
/// True for exactly the library's Int / Chars, not for a type derived from
/// them nor any other field type: the kinds whose put() stores the
/// argument's own bytes (Int) or its first N bytes zero-filled (Chars),
/// which EventDecl's reject-first step relies on ((D4), event_decl.h).
template <class F>
inline constexpr bool kIsLibraryInt = false;
template <auto Name, FieldInteger T>
inline constexpr bool kIsLibraryInt<Int<Name, T>> = true;
template <class F>
inline constexpr bool kIsLibraryChars = false;
template <auto Name, uint32_t N>
inline constexpr bool kIsLibraryChars<Chars<Name, N>> = true;
}  // namespace detail

}  // namespace tracepipe
