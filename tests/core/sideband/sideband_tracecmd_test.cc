// End to end: a trace exported with the sideband cmdlines shows every
// writer's name in `trace-cmd report` (libtraceevent's own decoding), and
// the sideband events themselves print through their print fmts. Kept out of
// the sanitizer runs: most of the work here is trace-cmd's.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <thread>

#include "sideband_test_util.h"
#include "test_support.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_sideband_test;

namespace {

bool have_trace_cmd() { return std::system("trace-cmd list -c >/dev/null 2>&1") == 0; }

std::string run(const std::string& cmd) {
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  if (rc != 0)
    throw std::runtime_error("command failed (" + std::to_string(rc) + "): " + cmd + "\n" + out);
  return out;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    if (line.find(needle) != std::string::npos) v.push_back(std::move(line));
    pos = nl + 1;
  }
  return v;
}

// A thread that runs `body` and then waits until released.
struct Worker {
  std::atomic<int32_t> tid{0};
  std::atomic<bool> done{false}, stop{false};
  std::thread t;
  template <class F>
  explicit Worker(F body)
      : t([this, body] {
          tid = static_cast<int32_t>(gettid());
          body();
          done = true;
          while (!stop) std::this_thread::yield();
        }) {
    while (!done) std::this_thread::yield();
  }
  ~Worker() {
    stop = true;
    t.join();
  }
};

}  // namespace

TEST_CASE("sideband trace-cmd: report names every writer from the sideband cmdlines",
          "[sideband][trace-cmd]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  prepare_thread();
  Instance inst(small_options(1024));
  inst.enable(Seen::desc());
  enable_sideband(inst, false);

  Worker alpha([&] {
    pthread_setname_np(pthread_self(), "alpha-worker");
    announce_thread();  // what core hook H1 does on the first event
    for (uint32_t i = 0; i < 3; ++i) emit_seen(inst, i);
  });
  Worker beta([&] {
    pthread_setname_np(pthread_self(), "beta-old");
    for (uint32_t i = 0; i < 3; ++i) emit_seen(inst, 10 + i);
  });
  Worker gamma([&] {
    pthread_setname_np(pthread_self(), "gamma-old");
    for (uint32_t i = 0; i < 3; ++i) emit_seen(inst, 20 + i);
    pthread_setname_np(pthread_self(), "gamma-raw");  // behind tracepipe's back
  });
  // Renamed through the API by another thread: saved_cmdlines still has the
  // old name, the sideband record the new one.
  REQUIRE_FALSE(set_thread_name(beta.tid, "beta-worker"));
  const SynthesisReport rep = synthesize_sideband(inst);
  INFO(rep.summary());
  REQUIRE(rep.complete());

  TempPath with_sb("with_sideband.dat"), without_sb("without_sideband.dat");
  export_tracedat(inst, with_sb.path, sideband_cmdlines(inst));
  export_tracedat(inst, without_sb.path, inst.cmdlines());
  const std::string report = run("trace-cmd report '" + with_sb.path.string() + "'");
  const std::string plain = run("trace-cmd report '" + without_sb.path.string() + "'");
  INFO(report);

  // Each writer's three events carry its name in the comm column.
  const std::string a = "alpha-worker-" + std::to_string(alpha.tid.load());
  const std::string b = "beta-worker-" + std::to_string(beta.tid.load());
  const std::string g = "gamma-raw-" + std::to_string(gamma.tid.load());
  size_t na = 0, nb = 0, ng = 0;
  for (const auto& l : lines_with(report, " seen:")) {
    na += l.find(a) != std::string::npos;
    nb += l.find(b) != std::string::npos;
    ng += l.find(g) != std::string::npos;
  }
  CHECK(na == 3);
  CHECK(nb == 3);
  CHECK(ng == 3);
  CHECK(lines_with(report, "<...>").empty());
  // Without the sideband names the export shows what saved_cmdlines had.
  CHECK(lines_with(plain, "beta-old-" + std::to_string(beta.tid.load())).size() >= 3);
  CHECK(lines_with(plain, "gamma-old-" + std::to_string(gamma.tid.load())).size() >= 3);
  CHECK(lines_with(plain, b).empty());

  // The sideband events decode through their print fmts in libtraceevent.
  const auto newtasks = lines_with(report, " task_newtask:");
  CHECK(newtasks.size() == rep.threads);
  CHECK(lines_with(report, "comm=alpha-worker clone_flags=10900").size() == 1);
  const auto renames = lines_with(report, " task_comm:");
  CHECK(lines_with(report, "comm=beta-worker oldcomm=beta-old reason=rename").size() == 1);
  CHECK(lines_with(report, "comm=alpha-worker oldcomm= reason=announce").size() == 1);
  CHECK(renames.size() >= 2);
  const auto execs = lines_with(report, " process_exec:");
  REQUIRE(execs.size() == 1);
  CHECK(execs[0].find("filename=" + read_exe_path()) != std::string::npos);
  const auto mmaps = lines_with(report, " mmap:");
  CHECK(mmaps.size() == rep.mappings);
  CHECK(lines_with(report, "prot=r-xp").size() >= 1);
  CHECK(lines_with(report, "filename=" + read_exe_path()).size() >= 2);
  const auto done = lines_with(report, " synth_done:");
  REQUIRE(done.size() == 1);
  CHECK(done[0].find("synth=" + std::to_string(rep.synth) + " threads=" +
                     std::to_string(rep.threads) + " mappings=" + std::to_string(rep.mappings) +
                     " lost=0 records=" + std::to_string(rep.kept - 1)) != std::string::npos);
}

TEST_CASE("sideband trace-cmd: a trace.dat read back replays the same names, mappings and rounds",
          "[sideband][tracedat]") {
  prepare_thread();
  Instance inst(small_options(1024));
  inst.enable(Seen::desc());
  const SynthesisReport first = enable_sideband(inst);
  REQUIRE(first.complete());
  Worker w([&] {
    REQUIRE_FALSE(set_thread_name("readback-w"));
    emit_seen(inst, 1);
  });
  const SynthesisReport second = synthesize_sideband(inst);
  REQUIRE(second.complete());
  TempPath p("readback.dat");
  export_tracedat(inst, p.path, sideband_cmdlines(inst));

  const TraceDatReader reader = TraceDatReader::open(p.path);
  SidebandState from_file(reader.formats());
  SidebandState from_buffer(inst.registry());
  auto recs = reader.records();
  size_t n = 0;
  while (auto r = recs.next()) {
    from_file.observe(r->payload);
    ++n;
  }
  for (const Rec& r : snapshot(inst)) from_buffer.observe(r.span());
  CHECK(n == snapshot(inst).size());
  CHECK(from_file.malformed() == 0);
  CHECK(from_file.observed() == from_buffer.observed());
  CHECK(from_file.comm(w.tid) == "readback-w");
  CHECK(from_file.cmdlines().size() == from_buffer.cmdlines().size());
  CHECK(from_file.executable() == read_exe_path());
  CHECK(from_file.mappings().size() == from_buffer.mappings().size());
  const auto pc = reinterpret_cast<uint64_t>(&have_trace_cmd);
  REQUIRE(from_file.mapping_at(pc) != nullptr);
  CHECK(from_file.mapping_at(pc)->filename == read_exe_path());
  const auto rounds = from_file.rounds();
  REQUIRE(rounds.size() == 2);
  CHECK(rounds[0].complete());
  CHECK(rounds[1].complete());
  CHECK(rounds[1].synth == second.synth);
  // The file's cmdlines section holds the sideband names.
  CHECK(reader.comm(w.tid) == "readback-w");
}
