#pragma once
// "Did you mean" for unknown names: the message every unknown-key error of a
// config file carries (core/config/config.cc), written once so each table lists its
// valid keys the same way:
//
//   unknown key (expected enable, filter or soft_disable)
//   unknown key (expected buffer_size_kb, subbuf_size_kb, ... or instances); did you mean
//   'buffer_size_kb'?
//
// Pure functions on strings; no state, any thread.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tracepipe {

/// The one entry of `valid` close to `name`, for a hint; nullopt when none
/// is close or when two or more are equally close. Compared after folding
/// case and '-' to '_'. Close means a Levenshtein distance of at most 2 (and
/// less than the length of `name`, so "x" suggests nothing), or else one being
/// a prefix of the other with at least 3 characters in common ("buffer_size"
/// -> "buffer_size_kb"); a smaller distance wins over a prefix.
std::optional<std::string_view> closest_name(std::string_view name,
                                             std::span<const std::string_view> valid);

/// "a", "a or b", "a, b or c": `valid` in the given order.
std::string either_of(std::span<const std::string_view> valid);

/// "unknown key (expected <either_of(valid)>)", plus "; did you mean 'K'?"
/// when closest_name(key, valid) is K. `key` is the last segment of the
/// dotted path (the file's spelling, unquoted).
std::string unknown_key_message(std::string_view key, std::span<const std::string_view> valid);

}  // namespace tracepipe
