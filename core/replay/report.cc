// format_result(): the table `tracepipe replay` prints.
#include <fmt/core.h>

#include <algorithm>

#include "tracepipe/core/replay/replay.h"

namespace tracepipe::replay {

namespace {

// The ROUTE cell: who runs the event's filter. A column of its own, so a long
// filter that is cut with "..." never hides it and the counts stay under
// their headers.
std::string_view route_text(const EventRow& e) {
  if (!e.replayed || e.soft_disabled || e.filter.empty()) return "-";
  switch (e.route) {
    case FilterRoute::instance:
      return "instance";
    case FilterRoute::replay_side:
      return "replay-side";
    case FilterRoute::none:
      break;
  }
  return "-";
}

}  // namespace

std::string format_result(const ReplayResult& r, bool timing) {
  std::string out;
  size_t wname = 5, wfilter = 6, wroute = 5;
  auto filter_text = [](const EventRow& e) -> std::string {
    if (!e.replayed) return "(not replayed)";
    if (e.soft_disabled) return "(soft-disabled)";
    if (e.filter.empty()) return "-";
    return e.filter;
  };
  for (const EventRow& e : r.events) {
    wname = std::max(wname, e.name.size());
    wfilter = std::max(wfilter, filter_text(e).size());
    wroute = std::max(wroute, route_text(e).size());
  }
  wfilter = std::min<size_t>(wfilter, 48);
  // An event with nothing replayed has no stage -> filter -> commit time to
  // show (its records were only routed past the instance).
  auto ns_per = [](const EventCounts& c) {
    const uint64_t n = c.replayed + c.skipped;
    return c.replayed == 0
               ? std::string("-")
               : fmt::format("{:.1f}", static_cast<double>(c.ns) / static_cast<double>(n));
  };
  out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}  {:>6}", "EVENT", wname,
                     "FILTER", wfilter, "ROUTE", wroute, "REPLAYED", "KEPT", "DISCARDED", "LOST");
  if (timing) out += fmt::format("  {:>8}", "NS/EVENT");
  out += '\n';
  auto row = [&](std::string_view name, std::string_view filter, std::string_view route,
                 const EventCounts& c) {
    std::string f(filter);
    if (f.size() > wfilter) {
      size_t cut = wfilter - 3;
      while (cut > 0 && (static_cast<unsigned char>(f[cut]) & 0xC0) == 0x80)
        --cut;  // not inside a UTF-8 character
      f = f.substr(0, cut) + "...";
    }
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}  {:>6}", name, wname, f,
                       wfilter, route, wroute, c.replayed, c.kept, c.discarded, c.lost);
    if (timing) out += fmt::format("  {:>8}", ns_per(c));
    out += '\n';
  };
  for (const EventRow& e : r.events) row(e.name, filter_text(e), route_text(e), e.counts);
  row("total", "", "", r.total);

  const uint64_t read = r.total.replayed + r.total.skipped + r.unknown;
  out += fmt::format(
      "\n{} records read from {} CPU buffer(s): {} replayed, {} kept, {} discarded, {} lost", read,
      r.cpus, r.total.replayed, r.total.kept, r.total.discarded, r.total.lost);
  if (r.total.skipped != 0)
    out += fmt::format(", {} records of events not replayed", r.total.skipped);
  if (r.unknown != 0) out += fmt::format(", {} records of unknown event IDs", r.unknown);
  out += '\n';
  out += fmt::format("time: {:.3f} ms wall, {:.3f} ms CPU: {:.2f} M events/s (wall)\n",
                     r.wall_s * 1e3, r.cpu_s * 1e3, r.events_per_s() * 1e-6);
  if (r.input_discarded != 0 || r.input_lost != 0)
    out += fmt::format(
        "input: {} discarded records (padding) skipped, {} events lost by the recorder\n",
        r.input_discarded, r.input_lost);
  for (const EventRow& e : r.events)
    if (!e.note.empty()) out += fmt::format("note: {}: {}\n", e.name, e.note);
  for (const std::string& w : r.warnings) out += fmt::format("warning: {}\n", w);
  return out;
}

}  // namespace tracepipe::replay
