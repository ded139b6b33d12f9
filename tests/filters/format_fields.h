#pragma once
// Test helper: the fields of a kernel `format` file as filters::FieldDesc,
// without depending on core/ (filters tests link tracepipe_filters only).
#include <charconv>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "test_support.h"
#include "tracepipe/filters/field.h"

namespace tp_test {

/// Parses "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;" lines.
/// The array dimension moves to the type ("char[16]"), as the kernel stores it.
inline std::vector<tracepipe::filters::FieldDesc> fields_from_format_text(const std::string& text) {
  std::vector<tracepipe::filters::FieldDesc> out;
  std::istringstream in(text);
  std::string line;
  auto number = [](std::string_view l, std::string_view key) -> uint32_t {
    const size_t k = l.find(key);
    if (k == std::string_view::npos) return 0;
    uint32_t v = 0;
    std::from_chars(l.data() + k + key.size(), l.data() + l.size(), v);
    return v;
  };
  while (std::getline(in, line)) {
    const size_t f = line.find("field:");
    if (f == std::string::npos) continue;
    const size_t semi = line.find(';', f);
    std::string decl = line.substr(f + 6, semi - f - 6);
    std::string dim;
    if (!decl.empty() && decl.back() == ']') {
      const size_t b = decl.rfind('[');
      dim = decl.substr(b);
      decl.resize(b);
    }
    const size_t sp = decl.find_last_of(" *");
    std::string name = decl.substr(sp + 1);
    std::string type = decl.substr(0, decl[sp] == '*' ? sp + 1 : sp) + dim;
    out.push_back(tracepipe::filters::make_field(
        type, name, number(line, "offset:"), number(line, "size:"), number(line, "signed:") != 0));
  }
  return out;
}

/// Fields of ../shared/data/kernel/formats/SYSTEM__EVENT.format ("sched:sched_switch").
inline std::vector<tracepipe::filters::FieldDesc> kernel_fields(std::string_view event) {
  std::string file(event);
  file.replace(file.find(':'), 1, "__");
  return fields_from_format_text(
      read_file(shared_data_or_skip("kernel/formats/" + file + ".format")));
}

}  // namespace tp_test
