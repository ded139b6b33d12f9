// The protobuf encoder's bytes, the field layouts both writers read records
// with (bounds included), and TSDL names.
#include "tracepipe/core/convert/proto_encoder.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "tracepipe/core/convert/ctf_writer.h"
#include "tracepipe/core/convert/event_layout.h"

namespace cv = tracepipe::convert;

namespace {
// Reads one varint at `p`, advancing it.
uint64_t read_varint(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}
}  // namespace

TEST_CASE("proto encoder: varints, negative int64, strings") {
  cv::ProtoBuffer b;
  b.field_varint(1, 300);
  b.field_int(2, -1);
  b.field_string(3, "hi");
  const std::vector<uint8_t> want = {0x08, 0xac, 0x02, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0x01, 0x1a, 0x02, 'h',  'i'};
  CHECK(std::vector<uint8_t>(b.data(), b.data() + b.size()) == want);
}

TEST_CASE(
    "proto encoder: a nested message's length is back-patched, widened past 127 and 16383 bytes") {
  for (const size_t body : {0u, 1u, 127u, 128u, 200u, 16383u, 16384u, 70000u}) {
    cv::ProtoBuffer b;
    b.field_varint(1, 7);
    const size_t m = b.begin(2);
    const std::string s(body >= 3 ? body - 3 : 0, 'x');
    if (body >= 3) b.field_string(5, s);
    b.end(m);
    b.field_varint(3, 9);
    const uint8_t* p = b.data();
    CHECK(read_varint(p) == ((1u << 3) | 0));
    CHECK(read_varint(p) == 7);
    CHECK(read_varint(p) == ((2u << 3) | 2));
    const uint64_t len = read_varint(p);
    const size_t expect_len =
        body >= 3 ? 1 + (s.size() >= 128 ? (s.size() >= 16384 ? 3 : 2) : 1) + s.size() : 0;
    CHECK(len == expect_len);
    p += len;
    CHECK(read_varint(p) == ((3u << 3) | 0));
    CHECK(read_varint(p) == 9);
    CHECK(p == b.data() + b.size());
  }
}

TEST_CASE("proto encoder: padded lengths are 4-byte redundant varints") {
  cv::ProtoBuffer b;
  const size_t m = b.begin_padded(1);
  const std::string s(1000, 'y');
  b.raw(s.data(), s.size());
  b.end_padded(m);
  const uint8_t* p = b.data();
  CHECK(read_varint(p) == ((1u << 3) | 2));
  const uint8_t* before = p;
  CHECK(read_varint(p) == 1000);
  CHECK(p - before == 4);
}

TEST_CASE("event layout: kinds, hex, dynamic fields read within the record only") {
  const auto fmt = tracepipe::parse_event_format(
      "name: demo\nID: 7\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:char comm[16];\toffset:16;\tsize:16;\tsigned:0;\n"
      "\tfield:__data_loc char[] name;\toffset:32;\tsize:4;\tsigned:0;\n"
      "\tfield:__data_loc u32[] ids;\toffset:36;\tsize:4;\tsigned:0;\n"
      "\tfield:short adj;\toffset:40;\tsize:2;\tsigned:1;\n\n"
      "print fmt: \"x\"\n",
      "demo");
  const auto l = cv::EventLayout::build(fmt);
  REQUIRE(l.fields.size() == 9);
  CHECK(l.common_count == 4);
  CHECK(l.fields[4].kind == cv::FieldKind::integer);
  CHECK(l.fields[4].hex);
  CHECK(l.fields[5].kind == cv::FieldKind::fixed_string);
  CHECK(l.fields[6].kind == cv::FieldKind::dynamic_string);
  CHECK(l.fields[7].kind == cv::FieldKind::dynamic_array);
  CHECK(l.fields[7].elem_size == 4);
  CHECK(l.fields[8].is_signed);
  CHECK(l.has_dynamic);

  std::vector<std::byte> rec(56, std::byte{0});
  const uint32_t name_loc = (4u << 16) | 44u;  // "abc\0" at 44
  std::memcpy(rec.data() + 32, &name_loc, 4);
  std::memcpy(rec.data() + 44, "abc", 4);
  const uint32_t ids_loc = (8u << 16) | 48u;  // two u32 at 48
  std::memcpy(rec.data() + 36, &ids_loc, 4);
  const auto name = cv::field_bytes(l.fields[6], rec);
  REQUIRE(name.present);
  CHECK(cv::as_text(name) == "abc");
  CHECK(cv::field_bytes(l.fields[7], rec).data.size() == 8);
  // A loc word pointing past the record, and a record shorter than the format.
  const uint32_t bad = (100u << 16) | 44u;
  std::memcpy(rec.data() + 36, &bad, 4);
  CHECK_FALSE(cv::field_bytes(l.fields[7], rec).present);
  CHECK_FALSE(cv::field_bytes(l.fields[8], std::span<const std::byte>(rec).first(41)).present);
  CHECK(cv::load_int(reinterpret_cast<const std::byte*>("\xff\xff"), 2, true) == ~0ull);
}

TEST_CASE("TSDL names: keywords and leading underscores get one more underscore") {
  CHECK(cv::CtfWriter::tsdl_name("prev_comm") == "prev_comm");
  CHECK(cv::CtfWriter::tsdl_name("event") == "_event");
  CHECK(cv::CtfWriter::tsdl_name("_x") == "__x");
  CHECK(cv::CtfWriter::tsdl_name("9lives") == "_9lives");
}

TEST_CASE("proto encoder: 2-byte lengths, redundant below 128, widened past 16383") {
  for (const size_t body : {0u, 5u, 127u, 128u, 16383u, 16384u, 40000u}) {
    cv::ProtoBuffer b;
    const size_t m = b.begin2(4);
    const std::string s(body, 'z');
    b.raw(s.data(), s.size());
    b.end2(m);
    b.field_varint(6, 1);
    const uint8_t* p = b.data();
    CHECK(read_varint(p) == ((4u << 3) | 2));
    const uint8_t* before = p;
    CHECK(read_varint(p) == body);
    CHECK(p - before == (body < 16384 ? 2 : 3));
    CHECK(std::string(reinterpret_cast<const char*>(p), body) == s);
    p += body;
    CHECK(read_varint(p) == ((6u << 3) | 0));
    CHECK(read_varint(p) == 1);
    CHECK(p == b.data() + b.size());
  }
}
