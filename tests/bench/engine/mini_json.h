#pragma once
// A small strict JSON reader for the bench tests (RFC 8259 values; numbers
// as double). Throws std::runtime_error with the byte offset on bad input.
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mini_json {

struct Value;
using Object = std::map<std::string, Value>;
using Array = std::vector<Value>;

struct Value {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>>
      v;
  bool is_null() const { return v.index() == 0; }
  bool is_bool() const { return v.index() == 1; }
  bool is_number() const { return v.index() == 2; }
  bool is_string() const { return v.index() == 3; }
  bool is_array() const { return v.index() == 4; }
  bool is_object() const { return v.index() == 5; }
  bool boolean() const { return std::get<1>(v); }
  double number() const { return std::get<2>(v); }
  const std::string& str() const { return std::get<3>(v); }
  const Array& array() const { return *std::get<4>(v); }
  const Object& object() const { return *std::get<5>(v); }
  bool has(const std::string& k) const { return is_object() && object().count(k) != 0; }
  const Value& operator[](const std::string& k) const {
    auto it = object().find(k);
    if (it == object().end()) throw std::runtime_error("json: missing key " + k);
    return it->second;
  }
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}
  Value parse_document() {
    Value v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("json: " + why + " at byte " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(std::string_view w) {
    if (s_.substr(i_, w.size()) == w) {
      i_ += w.size();
      return true;
    }
    return false;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("bad escape");
      char e = s_[i_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("bad \\u escape");
          unsigned cp = std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16);
          i_ += 4;
          if (cp < 0x80) {
            out += char(cp);
          } else if (cp < 0x800) {
            out += char(0xC0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3F));
          } else {
            out += char(0xE0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3F));
            out += char(0x80 | (cp & 0x3F));
          }
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
  Value value() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      auto obj = std::make_shared<Object>();
      if (!eat('}')) {
        do {
          ws();
          std::string k = string();
          expect(':');
          if (obj->count(k)) fail("duplicate key " + k);
          (*obj)[k] = value();
        } while (eat(','));
        expect('}');
      }
      return Value{obj};
    }
    if (c == '[') {
      ++i_;
      auto arr = std::make_shared<Array>();
      if (!eat(']')) {
        do arr->push_back(value());
        while (eat(','));
        expect(']');
      }
      return Value{arr};
    }
    if (c == '"') return Value{string()};
    if (word("true")) return Value{true};
    if (word("false")) return Value{false};
    if (word("null")) return Value{nullptr};
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[i_]))) fail("bad value");
    while (i_ < s_.size() && (isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    std::string num(s_.substr(start, i_ - start));
    char* end = nullptr;
    double d = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size()) fail("bad number " + num);
    return Value{d};
  }

  std::string_view s_;
  size_t i_ = 0;
};

inline Value parse(std::string_view s) { return Parser(s).parse_document(); }

}  // namespace mini_json
