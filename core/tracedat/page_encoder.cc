#include "tracepipe/core/tracedat/page_encoder.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tracepipe::kpage {

namespace {
constexpr uint32_t align4(uint32_t n) noexcept { return (n + 3) & ~3u; }
constexpr uint64_t kMax59 = uint64_t{1} << 59;
}  // namespace

PageEncoder::PageEncoder(PageLayout layout) : layout_(layout) {
  if (layout.commit_size != 4 && layout.commit_size != 8)
    throw std::invalid_argument("page commit size must be 4 or 8");
  if (layout.page_size < layout.header_size() + 64 || layout.page_size > (1u << 27))
    throw std::invalid_argument("page size must be in [header + 64, 2^27] bytes");
  page_.assign(layout.page_size, std::byte{0});
}

uint32_t PageEncoder::record_size(uint32_t payload_size) noexcept {
  const uint32_t len = align4(std::max<uint32_t>(payload_size, 1));
  return kEventHeaderSize + len + (len > kMaxSmallData ? 4 : 0);
}

uint32_t PageEncoder::max_payload(const PageLayout& layout) noexcept {
  // Room for: a time stamp/extend record (8), the long-data length word (4),
  // the header word (4), and the stored lost count (a long).
  const uint32_t cap = layout.data_capacity();
  const uint32_t overhead = 8 + 4 + 4 + layout.commit_size;
  return cap > overhead ? (cap - overhead) & ~3u : 0;
}

namespace detail {

bool encode_record_slow(std::byte* stream, uint32_t room, uint32_t& used, uint64_t& running,
                        bool first, uint64_t ts, const std::byte* payload, uint32_t plen) noexcept {
  const uint32_t len = align4(std::max<uint32_t>(plen, 1));
  uint32_t delta = 0;
  enum class Stamp { none, extend, absolute } stamp = Stamp::none;
  uint64_t big = 0;
  if (first) {
    // First record: the page timestamp carries the time; delta 0.
  } else if (ts >= running && ts - running <= kTsMask) {
    delta = static_cast<uint32_t>(ts - running);
  } else if (ts >= running && ts - running < kMax59) {
    stamp = Stamp::extend;
    big = ts - running;
  } else {
    stamp = Stamp::absolute;  // time went backwards, or an enormous gap
    big = ts & (kMax59 - 1);
  }
  const uint32_t need = PageEncoder::record_size(plen) + (stamp == Stamp::none ? 0 : 8);
  if (used + need > room) return false;
  auto put = [&](uint32_t w) {
    std::memcpy(stream + used, &w, 4);
    used += 4;
  };
  if (stamp != Stamp::none) {
    const uint32_t type = stamp == Stamp::extend ? kTypeTimeExtend : kTypeTimeStamp;
    put((static_cast<uint32_t>(big & kTsMask) << kTypeLenBits) | type);
    put(static_cast<uint32_t>(big >> kTsShift));
  }
  if (len <= kMaxSmallData) {
    put((delta << kTypeLenBits) | (len / kAlignment));
  } else {
    put(delta << kTypeLenBits);  // type_len 0
    put(len + 4);                // array[0] counts itself
  }
  copy_payload(stream + used, payload, plen, len);
  used += len;
  running = ts;
  return true;
}

}  // namespace detail

bool PageEncoder::try_append(uint64_t ts, std::span<const std::byte> payload) noexcept {
  if (payload.size() > max_payload(layout_)) return false;
  const bool first = records_ == 0;
  if (!encode_record(page_.data() + layout_.header_size(), layout_.data_capacity(), used_, running_,
                     first, ts, payload.data(), static_cast<uint32_t>(payload.size())))
    return false;
  if (first) page_ts_ = ts;
  ++records_;
  return true;
}

void PageEncoder::mark_missed(std::optional<uint64_t> count) noexcept {
  missed_ = true;
  if (count) lost_ = lost_.value_or(0) + *count;
}

std::span<const std::byte> PageEncoder::finish() noexcept {
  uint64_t commit = used_;
  const uint32_t hdr = layout_.header_size();
  std::memset(page_.data() + hdr + used_, 0, layout_.page_size - hdr - used_);
  if (missed_) {
    commit |= kMissedEvents;
    if (lost_ && used_ + layout_.commit_size <= layout_.data_capacity()) {
      std::memcpy(page_.data() + hdr + used_, &*lost_, layout_.commit_size);  // little endian
      commit |= kMissedStored;
    }
  }
  std::memcpy(page_.data(), &page_ts_, 8);
  std::memcpy(page_.data() + 8, &commit, layout_.commit_size);
  return page_;
}

void PageEncoder::reset() noexcept {
  used_ = 0;
  records_ = 0;
  page_ts_ = 0;
  running_ = 0;
  missed_ = false;
  lost_.reset();
}

}  // namespace tracepipe::kpage
