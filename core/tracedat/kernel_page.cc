#include "tracepipe/core/tracedat/kernel_page.h"

#include <fmt/format.h>

#include <array>

namespace tracepipe::kpage {
namespace {

constexpr std::array<std::string_view, 7> kPageErrText = {
    "no error",
    "page shorter than its header",
    "committed length exceeds the page",
    "record header crosses the end of the committed data",
    "record length word crosses the end of the committed data",
    "record length is invalid",
    "record extends past the end of the committed data",
};
static_assert(kPageErrText.size() == static_cast<size_t>(PageErr::record_overruns) + 1,
              "one message per PageErr");

}  // namespace

std::string_view page_error_text(PageErr e) noexcept {
  const auto i = static_cast<size_t>(e);
  return i < kPageErrText.size() ? kPageErrText[i] : "unknown page error";
}

std::string header_page_text(const PageLayout& layout) {
  // ring_buffer_print_page_header: timestamp, commit (a long), "overwrite"
  // (the byte holding the missed-events flags, printed at commit's offset
  // with size 1), then data for the rest of the page. Our own layout structs
  // give the offsets; char is unsigned in kernels built with -funsigned-char
  // (6.2+), which is what the kernel prints today.
  const uint32_t commit_off = 8;
  static_assert(offsetof(PageHeader64, commit) == 8 && offsetof(PageHeader32, commit) == 8);
  const uint32_t data_off = layout.header_size();
  return fmt::format(
      "\tfield: u64 timestamp;\toffset:{};\tsize:{};\tsigned:0;\n"
      "\tfield: local_t commit;\toffset:{};\tsize:{};\tsigned:1;\n"
      "\tfield: int overwrite;\toffset:{};\tsize:1;\tsigned:1;\n"
      "\tfield: char data;\toffset:{};\tsize:{};\tsigned:0;\n",
      offsetof(PageHeader64, timestamp), sizeof(PageHeader64::timestamp), commit_off,
      layout.commit_size, commit_off, data_off, layout.page_size - data_off);
}

std::string header_event_text() {
  return fmt::format(
      "# compressed entry header\n"
      "\ttype_len    :    {} bits\n"
      "\ttime_delta  :   {} bits\n"
      "\tarray       :   32 bits\n"
      "\n"
      "\tpadding     : type == {}\n"
      "\ttime_extend : type == {}\n"
      "\ttime_stamp : type == {}\n"
      "\tdata max type_len  == {}\n",
      kTypeLenBits, kTsShift, kTypePadding, kTypeTimeExtend, kTypeTimeStamp, kTypeDataMax);
}

PageParse parse_page_untrusted(std::span<const std::byte> page, const PageLayout& layout) noexcept {
  PageParse r;
  const uint32_t hdr = layout.header_size();
  if (page.size() < hdr) {
    r.error = {PageErr::short_page, 0};
    return r;
  }
  PageView v;
  std::memcpy(&v.timestamp, page.data(), 8);
  uint64_t commit = 0;
  if (layout.commit_size == 8) {
    std::memcpy(&commit, page.data() + 8, 8);
  } else {
    uint32_t c32;
    std::memcpy(&c32, page.data() + 8, 4);
    commit = c32;
  }
  const uint64_t len = commit & kCommitMask;
  const uint64_t avail = std::min<uint64_t>(page.size(), layout.page_size) - hdr;
  if (len > avail) {
    r.error = {PageErr::commit_too_large, 8};
    return r;
  }
  v.data = page.subspan(hdr, static_cast<size_t>(len));
  v.data_offset = hdr;
  v.missed_events = (commit & kMissedEvents) != 0;
  if (v.missed_events && (commit & kMissedStored)) {
    // The count sits right after the data, as a kernel long.
    if (len + layout.commit_size <= avail) {
      if (layout.commit_size == 8) {
        uint64_t n;
        std::memcpy(&n, page.data() + hdr + len, 8);
        v.lost_events = n;
      } else {
        uint32_t n;
        std::memcpy(&n, page.data() + hdr + len, 4);
        v.lost_events = n;
      }
    }
  }
  r.page = v;
  return r;
}

std::nullopt_t PageCursor::fail(PageErr e) noexcept {
  if (error_.code == PageErr::none) error_ = {e, data_offset_ + pos_};
  pos_ = end_;  // stop: nothing after a bad record can be trusted
  return std::nullopt;
}

bool PageCursor::next_slow(uint32_t type_len, uint32_t delta) noexcept {
  // Every case below needs the 4-byte word after the header, except the
  // "empty rest of page" padding.
  if (type_len == kTypePadding && delta == 0) {
    pos_ = end_;  // rb_null_event: nothing useful follows
    return false;
  }
  if (pos_ + 8 > end_) {
    fail(PageErr::truncated_length);
    return false;
  }
  uint32_t arg;
  std::memcpy(&arg, base_ + pos_ + 4, 4);
  switch (type_len) {
    case 0: {  // data, length in array[0] (includes the length word)
      if (arg < 4) {
        fail(PageErr::bad_length);
        return false;
      }
      const uint32_t len = (arg - 4 + 3) & ~3u;  // kbuffer rounds up to 4
      const uint64_t start = uint64_t{pos_} + 8;
      if (start + len > end_) {
        fail(PageErr::record_overruns);
        return false;
      }
      ts_ += delta;
      pending_ = true;
      pending_start_ = static_cast<uint32_t>(start);
      pending_len_ = len;
      pos_ = static_cast<uint32_t>(start + len);
      return true;
    }
    case kTypePadding: {  // discarded event: array[0] = bytes after the header word
      const uint64_t next = uint64_t{pos_} + 4 + arg;
      if (arg < 4 || next > end_) {
        fail(arg < 4 ? PageErr::bad_length : PageErr::record_overruns);
        return false;
      }
      ts_ += delta;  // kbuffer keeps the discarded event's delta
      ++counts_.discarded;
      pos_ = static_cast<uint32_t>(next);
      return true;
    }
    case kTypeTimeExtend:
      ts_ += (uint64_t{arg} << kTsShift) | delta;
      ++counts_.time_extends;
      pos_ += 8;
      return true;
    case kTypeTimeStamp: {
      // rb_fix_abs_ts: the record holds 59 bits; the top 5 come from the
      // running time, carrying into them if the low part wrapped.
      constexpr uint64_t kLow = (uint64_t{1} << 59) - 1;
      uint64_t abs = (uint64_t{arg} << kTsShift) | delta;
      const uint64_t msb = ts_ & ~kLow;
      if (msb) {
        abs |= msb;
        if (abs < ts_) abs += uint64_t{1} << 59;
      }
      ts_ = abs;
      ++counts_.time_stamps;
      pos_ += 8;
      return true;
    }
    default:
      break;
  }
  fail(PageErr::bad_length);
  return false;
}

PageCheck check_page_untrusted(std::span<const std::byte> page, const PageLayout& layout) noexcept {
  PageCheck c;
  const auto p = parse_page_untrusted(page, layout);
  if (!p.page) {
    c.error = p.error;
    return c;
  }
  PageCursor cur(*p.page);
  while (const auto rec = cur.next()) c.last_ts = rec->ts;
  c.counts = cur.counts();
  c.error = cur.error();
  return c;
}

}  // namespace tracepipe::kpage
