#include "tracepipe/core/events/event_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

namespace tracepipe {
namespace {

constexpr std::string_view kWhitespace = " \t\r\n";

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(kWhitespace);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(kWhitespace);
  return s.substr(b, e - b + 1);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string printable(std::string_view line) {
  std::string out;
  for (char c : line.substr(0, 120)) {
    const auto u = static_cast<unsigned char>(c);
    if (u == '\t')
      out += "\\t";
    else if (u < 0x20 || u >= 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  if (line.size() > 120) out += "...";
  return out;
}

[[noreturn, gnu::cold]] void fail(uint32_t line_no, std::string_view line, std::string_view why) {
  throw FormatError(fmt::format("format line {}: {}: '{}'", line_no, why, printable(line)),
                    line_no);
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// Reads "key:VALUE;" at the front of `rest` (after optional whitespace) and
// advances past the semicolon.
std::optional<uint64_t> take_attr(std::string_view& rest, std::string_view key, uint32_t line_no,
                                  std::string_view line, bool required) {
  std::string_view r = trim(rest);
  if (!starts_with(r, key)) {
    if (required) fail(line_no, line, fmt::format("expected '{}'", key));
    return std::nullopt;
  }
  r.remove_prefix(key.size());
  const auto semi = r.find(';');
  if (semi == std::string_view::npos) fail(line_no, line, fmt::format("'{}' lacks ';'", key));
  const auto v = parse_u64(r.substr(0, semi));
  if (!v || *v > std::numeric_limits<uint32_t>::max())
    fail(line_no, line, fmt::format("'{}' is not a 32-bit number", key));
  rest = r.substr(semi + 1);
  return v;
}

// Where a print fmt that starts at text[from] ends: at the first newline
// outside a string or character literal (or the end of the text). The
// kernel prints the format string verbatim, so a '\n' inside a string of the
// source (ext4_fc_stats, ext4_getfsmap_*) arrives as a real newline inside
// the quotes; libtraceevent's tokenizer keeps such a newline in the string.
// A literal still open at the end of the text is no multi-line string but a
// malformed one: the print fmt then ends at its own line, as before, and any
// text on later lines is refused by the caller with its line number.
struct PrintFmtExtent {
  size_t end;         // index of the terminating '\n', or text.size()
  uint32_t newlines;  // newlines inside literals before `end`
};

PrintFmtExtent print_fmt_extent(std::string_view text, size_t from) {
  const size_t own_line_end = std::min(text.find('\n', from), text.size());
  char quote = 0;  // '"' or '\'' while inside a literal
  uint32_t newlines = 0;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0) {
      if (c == '\n') return {i, newlines};
      if (c == '"' || c == '\'') quote = c;
    } else if (c == '\\') {
      if (i + 1 < text.size() && text[i + 1] == '\n') ++newlines;
      ++i;  // the escaped character, whatever it is
    } else if (c == quote) {
      quote = 0;
    } else if (c == '\n') {
      ++newlines;
    }
  }
  if (quote != 0) return {own_line_end, 0};  // unterminated: not a multi-line string
  return {text.size(), newlines};
}

// "\r\n" -> "\n" inside a multi-line print fmt (the parser accepts CRLF text).
std::string without_cr_before_newline(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')) out += s[i];
  return out;
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

// ---------------------------------------------------------------- FormatField

bool FormatField::is_dynamic() const noexcept {
  return starts_with(type, "__data_loc") || starts_with(type, "__rel_loc");
}

bool FormatField::is_rel_loc() const noexcept { return starts_with(type, "__rel_loc"); }

bool FormatField::is_array() const noexcept { return type.find('[') != std::string::npos; }

std::optional<uint32_t> FormatField::array_length() const noexcept {
  if (is_dynamic()) return std::nullopt;
  const auto open = type.find('[');
  if (open == std::string::npos) return std::nullopt;
  const auto close = type.find(']', open);
  if (close == std::string::npos || close == open + 1) return std::nullopt;
  const auto v = parse_u64(std::string_view(type).substr(open + 1, close - open - 1));
  if (!v || *v > std::numeric_limits<uint32_t>::max()) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::string FormatField::element_type() const {
  std::string_view t = type;
  if (starts_with(t, "__data_loc"))
    t.remove_prefix(10);
  else if (starts_with(t, "__rel_loc"))
    t.remove_prefix(9);
  const auto open = t.find('[');
  if (open != std::string_view::npos) t = t.substr(0, open);
  return std::string(trim(t));
}

bool FormatField::is_string() const noexcept {
  // filter_assign_type: dynamic or bracketed type that mentions "char".
  return (is_dynamic() || is_array()) && type.find("char") != std::string::npos;
}

// ---------------------------------------------------------------- EventFormat

const FormatField* EventFormat::find_field(std::string_view n) const noexcept {
  for (const auto& f : fields)
    if (f.name == n) return &f;
  for (const auto& f : common_fields)
    if (f.name == n) return &f;
  return nullptr;
}

uint32_t EventFormat::fixed_size() const noexcept {
  uint32_t m = 0;
  for (const auto* v : {&common_fields, &fields})
    for (const auto& f : *v) m = std::max(m, f.offset + f.size);
  return m;
}

// ---------------------------------------------------------------- parsing

FormatField parse_format_field(std::string_view line, uint32_t line_no) {
  std::string_view rest = trim(line);
  if (!starts_with(rest, "field:")) fail(line_no, line, "expected 'field:'");
  rest.remove_prefix(6);
  const auto semi = rest.find(';');
  if (semi == std::string_view::npos) fail(line_no, line, "field declaration lacks ';'");
  const std::string_view decl = trim(rest.substr(0, semi));
  rest = rest.substr(semi + 1);

  // decl = TYPE NAME[dims]: the name is the last token.
  const auto sp = decl.find_last_of(" \t");
  if (sp == std::string_view::npos)
    fail(line_no, line, "field declaration needs a type and a name");
  std::string type(trim(decl.substr(0, sp)));
  std::string_view name_tok = decl.substr(sp + 1);
  while (!name_tok.empty() && name_tok.front() == '*') {  // "char *p" -> type "char *"
    type += " *";
    name_tok.remove_prefix(1);
  }
  std::string_view name = name_tok;
  const auto bracket = name_tok.find('[');
  if (bracket != std::string_view::npos) {
    if (name_tok.back() != ']') fail(line_no, line, "malformed array dimension");
    name = name_tok.substr(0, bracket);
    type += name_tok.substr(bracket);  // kernel stores "char[16]"
  }
  if (type.empty() || name.empty() || !std::all_of(name.begin(), name.end(), is_ident_char))
    fail(line_no, line, "field name is not an identifier");

  FormatField f;
  f.type = std::move(type);
  f.name = std::string(name);
  f.offset = static_cast<uint32_t>(*take_attr(rest, "offset:", line_no, line, true));
  f.size = static_cast<uint32_t>(*take_attr(rest, "size:", line_no, line, true));
  const auto sgn = take_attr(rest, "signed:", line_no, line, false);
  if (sgn && *sgn > 1) fail(line_no, line, "'signed:' must be 0 or 1");
  f.is_signed = sgn.value_or(0) == 1;
  if (uint64_t{f.offset} + f.size > std::numeric_limits<uint32_t>::max())
    fail(line_no, line, "offset + size overflows 32 bits");
  if (!trim(rest).empty()) fail(line_no, line, "unexpected text after the field attributes");
  return f;
}

namespace {
EventFormat parse_event_format_impl(std::string_view text, std::string_view system);
}  // namespace

EventFormat parse_event_format(std::string_view text, std::string_view system) {
  try {
    return parse_event_format_impl(text, system);
  } catch (const FormatError& e) {
    // Prefix "<system>/<name>" (the name, when the text has one, for context).
    std::string name = "?";
    if (const auto p = text.find("name:"); p != std::string_view::npos) {
      const auto e2 = text.find('\n', p);
      name = std::string(trim(text.substr(p + 5, e2 == std::string_view::npos ? e2 : e2 - p - 5)));
    }
    throw FormatError(fmt::format("{}/{}: {}", system, printable(name), e.what()), e.line());
  }
}

namespace {
EventFormat parse_event_format_impl(std::string_view text, std::string_view system) {
  EventFormat ev;
  ev.system = std::string(system);
  enum class Stage { header, common, fields, done } stage = Stage::header;
  bool have_name = false, have_id = false, have_format = false, have_print = false;
  bool saw_blank_in_fields = false;
  uint32_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view raw = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    const std::string_view line = trim(raw);

    if (starts_with(line, "print fmt:")) {
      if (!have_format) fail(line_no, raw, "'print fmt:' before 'format:'");
      if (have_print) fail(line_no, raw, "second 'print fmt:'");
      const size_t body_at =
          static_cast<size_t>(raw.data() - text.data()) + raw.find("print fmt:") + 10;
      const PrintFmtExtent ext = print_fmt_extent(text, body_at);
      std::string_view body = text.substr(body_at, ext.end - body_at);
      if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
      while (!body.empty() && (body.back() == '\r')) body.remove_suffix(1);
      ev.print_fmt = without_cr_before_newline(body);
      line_no += ext.newlines;
      pos = ext.end + 1;
      have_print = true;
      stage = Stage::done;
      continue;
    }
    if (line.empty()) {
      if (stage == Stage::common && !ev.common_fields.empty())
        stage = Stage::fields;
      else if (stage == Stage::fields)
        saw_blank_in_fields = true;
      continue;
    }
    switch (stage) {
      case Stage::header:
        if (starts_with(line, "name:")) {
          if (have_name) fail(line_no, raw, "second 'name:'");
          ev.name = std::string(trim(line.substr(5)));
          if (ev.name.empty()) fail(line_no, raw, "empty event name");
          have_name = true;
        } else if (starts_with(line, "ID:")) {
          if (have_id) fail(line_no, raw, "second 'ID:'");
          const auto v = parse_u64(line.substr(3));
          if (!v || *v > std::numeric_limits<uint32_t>::max())
            fail(line_no, raw, "ID is not a 32-bit number");
          ev.id = static_cast<uint32_t>(*v);
          have_id = true;
        } else if (line == "format:") {
          have_format = true;
          stage = Stage::common;
        } else {
          fail(line_no, raw, "expected 'name:', 'ID:' or 'format:'");
        }
        break;
      case Stage::common:
        ev.common_fields.push_back(parse_format_field(raw, line_no));
        break;
      case Stage::fields:
        if (saw_blank_in_fields)
          fail(line_no, raw, "field after the blank line closing the field list");
        ev.fields.push_back(parse_format_field(raw, line_no));
        break;
      case Stage::done:
        fail(line_no, raw, "text after 'print fmt:'");
    }
  }
  if (!have_name) throw FormatError("format: missing 'name:' line", 0);
  if (!have_id) throw FormatError(fmt::format("format {}: missing 'ID:' line", ev.name), 0);
  if (!have_format) throw FormatError(fmt::format("format {}: missing 'format:' line", ev.name), 0);
  // Without a separating blank line every field landed in common_fields:
  // split them by the kernel's "common_" prefix instead.
  if (stage != Stage::fields && ev.fields.empty()) {
    auto it =
        std::stable_partition(ev.common_fields.begin(), ev.common_fields.end(),
                              [](const FormatField& f) { return starts_with(f.name, "common_"); });
    ev.fields.assign(std::make_move_iterator(it), std::make_move_iterator(ev.common_fields.end()));
    ev.common_fields.erase(it, ev.common_fields.end());
  }
  return ev;
}
}  // namespace

// ---------------------------------------------------------------- printing

std::string to_format_field_line(const FormatField& f) {
  // f_show: arrays print as "ELEM NAME[dims]"; dynamic fields keep their type.
  const auto bracket = f.is_dynamic() ? std::string::npos : f.type.find('[');
  std::string decl;
  if (bracket == std::string::npos) {
    decl = fmt::format("{} {}", f.type, f.name);
  } else {
    decl = fmt::format("{} {}{}", std::string_view(f.type).substr(0, bracket), f.name,
                       std::string_view(f.type).substr(bracket));
  }
  return fmt::format("\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n", decl, f.offset, f.size,
                     f.is_signed ? 1 : 0);
}

std::string to_format_text(const EventFormat& ev) {
  std::string out = fmt::format("name: {}\nID: {}\nformat:\n", ev.name, ev.id);
  for (const auto& f : ev.common_fields) out += to_format_field_line(f);
  out += '\n';
  for (const auto& f : ev.fields) out += to_format_field_line(f);
  out += "\nprint fmt: ";
  out += ev.print_fmt;
  out += '\n';
  return out;
}

const std::vector<FormatField>& kernel_common_fields() {
  static const std::vector<FormatField> common = {
      {"unsigned short", "common_type", 0, 2, false},
      {"unsigned char", "common_flags", 2, 1, false},
      {"unsigned char", "common_preempt_count", 3, 1, false},
      {"int", "common_pid", 4, 4, true},
  };
  return common;
}

}  // namespace tracepipe
