// Differential test of the whole replay pipeline against Linux 6.18: for each
// accepted expression of the filter oracle (shared/data/kernel/filter-oracle),
//   tracepipe replay NNN/all.dat -F 'EVENT: EXPR' -o OUT.dat
// must keep exactly the events the kernel kept in NNN/kept.dat, compared as
// multisets of payload keys (time stamps and common_flags left out; see
// replay_test::record_key). OUT.dat is read back with the trace.dat reader, so
// this covers -F parsing, the instance's stage -> filter -> commit (or the
// replay-side filter for COMM / char * / .function), the ring, the drain and
// the writer. The replay's own counts must agree with the files.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "replay_test_util.h"
#include "test_support.h"
#include "tracepipe/core/replay/replay.h"

using namespace tracepipe;
using namespace tracepipe::replay;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

struct CaseResult {
  uint64_t all = 0, kernel_kept = 0, replay_kept = 0, output = 0;
  bool equal = false;
  std::string diff;
  std::vector<FilterRoute> routes;
};

CaseResult run_case(const std::filesystem::path& dir, const std::filesystem::path& kallsyms) {
  const std::string expr = trimmed(tp_test::read_file(dir / "expr.txt"));
  ReplayOptions o;
  o.input = dir / "all.dat";
  std::istringstream events(tp_test::read_file(dir / "event.txt"));
  std::string ev;
  while (std::getline(events, ev))
    if (!trimmed(ev).empty()) o.filter_args.push_back(trimmed(ev) + ": " + expr);
  replay_test::TempPath out("replay_oracle");
  o.output = out.path;
  o.kallsyms = kallsyms;
  o.progress = ProgressMode::off;
  o.trailing_operator =
      filters::TrailingOperator::ignore;  // the oracle's kernel build (v657): see 024
  const ReplayResult r = run_replay(o);

  CaseResult c;
  c.all = r.total.replayed;
  c.replay_kept = r.total.kept;
  c.output = r.output_records;
  for (const EventRow& e : r.events) c.routes.push_back(e.route);
  const replay_test::FileKeys ours = replay_test::keys_of(out.path);
  const replay_test::FileKeys kernel = replay_test::keys_of(dir / "kept.dat");
  c.kernel_kept = kernel.records;
  std::map<std::string, long> balance = ours.keys;
  for (const auto& [k, n] : kernel.keys) balance[k] -= n;
  size_t extra = 0, missing = 0;
  for (const auto& [k, v] : balance) {
    if (v > 0) extra += static_cast<size_t>(v);
    if (v < 0) missing += static_cast<size_t>(-v);
  }
  c.equal = extra == 0 && missing == 0 && ours.records == r.output_records;
  if (!c.equal)
    c.diff = std::to_string(extra) + " kept only by replay, " + std::to_string(missing) +
             " kept only by the kernel";
  return c;
}

}  // namespace

TEST_CASE(
    "replay oracle: replay -o keeps exactly the kernel's events for every accepted expression",
    "[replay][oracle]") {
  const auto root = tp_test::shared_data_or_skip("kernel/filter-oracle");
  // The capture's kallsyms, for 054 (call_site.function == __alloc_skb): the
  // .dat files carry none; 054/notes.txt gives the symbol and the next one.
  replay_test::TempPath ksyms("replay_kallsyms");
  {
    std::ofstream f(ksyms.path);
    f << "ffffffff81e3d520 T __alloc_skb\nffffffff81e3d6c0 T __pfx_napi_alloc_skb\n";
  }
  std::istringstream index(tp_test::read_file(root / "index.tsv"));
  std::string line;
  std::getline(index, line);  // header
  int cases = 0, matched = 0, replay_side = 0;
  uint64_t records = 0, kept = 0;
  while (std::getline(index, line)) {
    if (line.empty()) continue;
    const std::string id = line.substr(0, line.find('\t'));
    const CaseResult r = run_case(root / id, ksyms.path);
    INFO(id << ": " << trimmed(tp_test::read_file(root / id / "expr.txt")) << " | all " << r.all
            << " kernel kept " << r.kernel_kept << " replay kept " << r.replay_kept << " written "
            << r.output << " | " << r.diff);
    CHECK(r.equal);
    CHECK(r.replay_kept == r.kernel_kept);
    CHECK(r.output == r.replay_kept);
    ++cases;
    matched += r.equal;
    records += r.all;
    kept += r.replay_kept;
    replay_side += std::count(r.routes.begin(), r.routes.end(), FilterRoute::replay_side) > 0;
  }
  CHECK(cases == 69);
  WARN("replay oracle: " << matched << "/" << cases << " cases keep exactly the kernel's events ("
                         << records << " records replayed, " << kept << " kept; " << replay_side
                         << " cases needed the replay-side filter)");
}
