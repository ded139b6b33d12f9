#include "tracepipe/core/replay/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace tracepipe::replay {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string human_bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, unit[u]);
}

}  // namespace

ProgressBar::ProgressBar(bool enabled, uint64_t total_bytes, std::FILE* out)
    : enabled_(enabled),
      total_(total_bytes == 0 ? 1 : total_bytes),
      out_(out),
      start_ns_(now_ns()) {
  if (enabled_) thread_ = std::thread([this] { loop(); });
}

ProgressBar::~ProgressBar() { stop(); }

bool ProgressBar::wanted(uint64_t total_bytes, std::FILE* out) {
  return total_bytes >= kLargeFile && isatty(fileno(out)) != 0;
}

void ProgressBar::stop() {
  if (!enabled_) return;
  {
    std::lock_guard lk(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
}

void ProgressBar::loop() {
  std::unique_lock lk(mu_);
  while (!cv_.wait_for(lk, std::chrono::milliseconds(200), [this] { return stop_; })) draw(false);
}

void ProgressBar::draw(bool) {
  const uint64_t b = bytes_.load(std::memory_order_relaxed);
  const uint64_t r = records_.load(std::memory_order_relaxed);
  const double frac = b >= total_ ? 1.0 : static_cast<double>(b) / static_cast<double>(total_);
  constexpr int kWidth = 30;
  const int fill = static_cast<int>(frac * kWidth);
  const double secs = static_cast<double>(now_ns() - start_ns_) * 1e-9;
  const std::string bar = std::string(static_cast<size_t>(fill), '#') +
                          std::string(static_cast<size_t>(kWidth - fill), '.');
  fmt::print(out_, "\rreplay [{}] {:3.0f}%  {} / {}  {:.1f} M events/s\x1b[K", bar, frac * 100,
             human_bytes(static_cast<double>(b)), human_bytes(static_cast<double>(total_)),
             secs > 0 ? static_cast<double>(r) / secs * 1e-6 : 0.0);
  std::fflush(out_);
}

}  // namespace tracepipe::replay
