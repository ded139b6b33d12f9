#include "tracepipe/core/config/key_suggest.h"

#include <algorithm>
#include <vector>

namespace tracepipe {
namespace {

std::string fold(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '-') c = '_';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Edits (insert, delete, substitute one character) turning a into b.
size_t levenshtein(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];  // row[i-1][j-1]
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

constexpr size_t kMaxDistance = 2;
constexpr size_t kMinPrefix = 3;
constexpr size_t kNotClose = ~size_t{0};

// 0..kMaxDistance for an edit distance, kMaxDistance + 1 for a prefix match,
// kNotClose otherwise.
size_t closeness(const std::string& name, const std::string& cand) {
  const size_t d = levenshtein(name, cand);
  if (d <= kMaxDistance && d < name.size()) return d;
  const size_t shorter = std::min(name.size(), cand.size());
  if (shorter >= kMinPrefix && name.compare(0, shorter, cand, 0, shorter) == 0)
    return kMaxDistance + 1;
  return kNotClose;
}

}  // namespace

std::optional<std::string_view> closest_name(std::string_view name,
                                             std::span<const std::string_view> valid) {
  const std::string n = fold(name);
  size_t best = kNotClose;
  std::optional<std::string_view> pick;
  bool tie = false;
  for (std::string_view v : valid) {
    const size_t c = closeness(n, fold(v));
    if (c < best) {
      best = c;
      pick = v;
      tie = false;
    } else if (c == best && c != kNotClose) {
      tie = true;
    }
  }
  if (tie) return std::nullopt;
  return pick;
}

std::string either_of(std::span<const std::string_view> valid) {
  std::string out;
  for (size_t i = 0; i < valid.size(); ++i) {
    if (i != 0) out += i + 1 == valid.size() ? " or " : ", ";
    out += valid[i];
  }
  return out;
}

std::string unknown_key_message(std::string_view key, std::span<const std::string_view> valid) {
  std::string msg = "unknown key (expected " + either_of(valid) + ")";
  if (auto s = closest_name(key, valid)) msg += "; did you mean '" + std::string(*s) + "'?";
  return msg;
}

}  // namespace tracepipe
