#include "tracepipe/bench/engine/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include "tracepipe/bench/engine/workload.h"

namespace tracepipe::bench {

Progress::Style Progress::auto_style(bool quiet, std::FILE* out) {
  if (quiet) return Style::off;
  return isatty(fileno(out)) ? Style::live : Style::lines;
}

void Progress::begin(std::string_view phase, uint64_t total, std::string_view fraction_of) {
  phase_ = phase;
  fraction_of_ = fraction_of;
  total_ = total;
  done_ = 0;
  start_ns_ = detail::now_ns();
  last_rep_printed_ = UINT32_MAX;
}

void Progress::step(std::string_view label, uint32_t rep, uint32_t reps, double seconds) {
  ++done_;
  if (style_ == Style::off) return;
  const double elapsed = double(detail::now_ns() - start_ns_) * 1e-9;
  const double eta = done_ ? elapsed / double(done_) * double(total_ - done_) : 0;
  if (!fraction_of_.empty()) {
    if (style_ == Style::live)
      fmt::print(out_, "\r{}: {}/{} {} done, eta {:.0f} s\x1b[K", phase_, done_, total_,
                 fraction_of_, eta);
    else
      fmt::print(out_, "{}: {}/{} {} done ({:.1f} s, eta {:.0f} s)\n", phase_, done_, total_,
                 fraction_of_, elapsed, eta);
    std::fflush(out_);
    return;
  }
  if (style_ == Style::live) {
    fmt::print(out_, "\r{}: run {}/{} (repetition {}/{}) {} {:.3f} s, eta {:.0f} s\x1b[K", phase_,
               done_, total_, rep + 1, reps, label, seconds, eta);
    std::fflush(out_);
    return;
  }
  // lines: one line when a repetition completes (the last step of a pass).
  const bool rep_done = done_ * reps % total_ == 0;
  if (rep_done && rep != last_rep_printed_) {
    last_rep_printed_ = rep;
    fmt::print(out_, "{}: repetition {}/{} done ({}/{} runs, {:.1f} s, eta {:.0f} s)\n", phase_,
               rep + 1, reps, done_, total_, elapsed, eta);
    std::fflush(out_);
  }
}

void Progress::end() {
  if (style_ == Style::live) {
    fmt::print(out_, "\r\x1b[K");
    std::fflush(out_);
  }
}

}  // namespace tracepipe::bench
