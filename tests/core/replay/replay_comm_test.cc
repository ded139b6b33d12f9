// COMM in `tracepipe replay` against the kernel's own verdicts: for each
// capture in data/ (comm_rename: tasks renaming themselves and each other;
// comm_exec: exec, fexecve, a thread's exec) and each COMM filter the kernel
// applied while recording (data/*/filters.tsv),
//   tracepipe replay all.dat -F 'sched,task,syscalls: FILTER' -o OUT.dat
// must keep exactly the records the kernel kept in fNN.dat, compared as
// multisets of payload keys (replay_test::record_key). The captures come
// from this repository (data/README.md): nothing here needs ../shared.
#include <catch2/catch.hpp>
#include <sstream>

#include "replay_test_util.h"
#include "test_support.h"
#include "tracepipe/core/replay/replay.h"

using namespace tracepipe;
using namespace tracepipe::replay;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(TP_SOURCE_DIR) / "tests/core/replay/data";

struct Verdict {
  std::string id, expr;
  uint64_t all = 0, kernel_kept = 0, replay_kept = 0;
  size_t only_replay = 0, only_kernel = 0;
  bool equal() const { return only_replay == 0 && only_kernel == 0 && replay_kept == kernel_kept; }
};

Verdict run_filter(const fs::path& dir, const std::string& id, const std::string& expr) {
  ReplayOptions o;
  o.input = dir / "all.dat";
  o.filter_args = {"sched,task,syscalls: " + expr};
  replay_test::TempPath out("replay_comm");
  o.output = out.path;
  o.progress = ProgressMode::off;
  o.timing = false;
  const ReplayResult r = run_replay(o);
  Verdict v{id, expr};
  v.all = r.total.replayed;
  v.replay_kept = r.total.kept;
  const replay_test::FileKeys ours = replay_test::keys_of(out.path);
  const replay_test::FileKeys kernel = replay_test::keys_of(dir / (id + ".dat"));
  v.kernel_kept = kernel.records;
  std::map<std::string, long> balance = ours.keys;
  for (const auto& [k, n] : kernel.keys) balance[k] -= n;
  for (const auto& [k, n] : balance) {
    if (n > 0) v.only_replay += static_cast<size_t>(n);
    if (n < 0) v.only_kernel += static_cast<size_t>(-n);
  }
  return v;
}

std::vector<std::pair<std::string, std::string>> filters_of(const fs::path& dir) {
  std::istringstream in(tp_test::read_file(dir / "filters.tsv"));
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::pair<std::string, std::string>> out;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t a = line.find('\t'), b = line.find('\t', a + 1);
    out.emplace_back(line.substr(0, a), line.substr(a + 1, b - a - 1));
  }
  return out;
}

void check_capture(const std::string& name) {
  const fs::path dir = kData / name;
  REQUIRE(fs::exists(dir / "all.dat"));
  const auto filters = filters_of(dir);
  REQUIRE(filters.size() == 14);
  int matched = 0;
  size_t records = 0, kept = 0;
  for (const auto& [id, expr] : filters) {
    const Verdict v = run_filter(dir, id, expr);
    INFO(name << " " << id << " " << expr << ": " << v.all << " records, kernel kept "
              << v.kernel_kept << ", replay kept " << v.replay_kept << " (" << v.only_replay
              << " only by replay, " << v.only_kernel << " only by the kernel)");
    CHECK(v.equal());
    matched += v.equal();
    records = v.all;
    kept += v.kernel_kept;
    WARN(name << " " << id << " " << expr << ": kernel " << v.kernel_kept << ", replay "
              << v.replay_kept << " of " << v.all
              << (v.equal() ? " (same records)" : " (DIFFERENT)"));
  }
  WARN(name << ": " << matched << "/" << filters.size()
            << " COMM filters keep exactly the kernel's records (" << records << " records, "
            << kept << " kept by the kernel over all filters)");
}

}  // namespace

TEST_CASE("replay COMM: tasks renaming themselves and each other, against the kernel's verdicts",
          "[replay][comm]") {
  check_capture("comm_rename");
}

TEST_CASE("replay COMM: exec, fexecve and a thread's exec, against the kernel's verdicts",
          "[replay][comm]") {
  check_capture("comm_exec");
}
