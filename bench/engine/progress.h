#pragma once
// The progress line `tracepipe bench` keeps on stderr while it runs.
//
// On a terminal it is one line redrawn in place ("\r...\x1b[K") and erased at
// the end; otherwise (a log, a test) it prints one line per completed
// repetition, so logs stay short. Disabled entirely by --quiet.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tracepipe::bench {

class Progress {
 public:
  enum class Style { off, live, lines };
  /// `style` live redraws one line; lines prints per repetition; off nothing.
  explicit Progress(Style style, std::FILE* out = stderr) : style_(style), out_(out) {}
  /// live if `out` is a terminal, else lines; off if `quiet`.
  static Style auto_style(bool quiet, std::FILE* out = stderr);

  /// Starts a phase ("hackbench", "overwrite series") of `total` timed runs.
  /// `fraction_of`: the steps are fractions of something else, named here
  /// ("of the 201 rounds"), and are reported as "3/10 of the 201 rounds
  /// done" rather than as repetitions and runs.
  void begin(std::string_view phase, uint64_t total, std::string_view fraction_of = {});
  /// One run of `label` finished in `seconds`; `rep` is its repetition (0-based).
  void step(std::string_view label, uint32_t rep, uint32_t reps, double seconds);
  /// Ends the phase (erases the live line).
  void end();

 private:
  Style style_;
  std::FILE* out_;
  std::string phase_;
  std::string fraction_of_;
  uint64_t total_ = 0;
  uint64_t done_ = 0;
  uint64_t start_ns_ = 0;
  uint32_t last_rep_printed_ = UINT32_MAX;
};

}  // namespace tracepipe::bench
