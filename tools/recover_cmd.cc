// `tracepipe recover [DIR|FILE] -o OUT.dat`: a flight file (an instance built
// with flight_recorder) to a trace.dat, after its process died, or with
// --live while it runs. The work is core/recover; see docs/flight.md.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "tracepipe/core/flight/flight_file.h"
#include "tracepipe/core/recover/recover.h"
#include "tracepipe/tools/commands.h"
#include "tracepipe/tools/same_file.h"

namespace tracepipe::tools {
namespace {

struct RecoverCli {
  std::string path = flight::kDefaultDir;
  std::string output = "trace.dat";
  int pid = 0;
  bool live = false;
  bool strict = false;
  bool list = false;
};

bool process_running(int32_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

std::filesystem::path pick_file(const RecoverCli& cli) {
  const std::filesystem::path p(cli.path);
  if (!std::filesystem::is_directory(p)) return p;
  std::vector<std::filesystem::path> files;
  for (const auto& f : recover::find_flight_files(p)) {
    if (cli.pid != 0 &&
        f.filename().string().find("-" + std::to_string(cli.pid) + ".") == std::string::npos)
      continue;
    files.push_back(f);
  }
  if (files.empty())
    throw std::runtime_error(fmt::format("no flight files{} in {}",
                                         cli.pid != 0 ? fmt::format(" of pid {}", cli.pid) : "",
                                         p.string()));
  if (files.size() > 1) {
    std::string names;
    for (const auto& f : files) names += "\n  " + f.string();
    throw std::runtime_error(fmt::format("{} flight files in {}; name one (or --pid):{}",
                                         files.size(), p.string(), names));
  }
  return files.front();
}

void list_files(const RecoverCli& cli) {
  for (const auto& f : recover::find_flight_files(cli.path)) {
    try {
      const auto t = recover::recover_file(f, {.live = true});
      fmt::print("{}  pid {} ({}) instance {} {} records {}\n", f.string(), t.pid, t.comm,
                 t.instance, process_running(t.pid) ? "running" : "gone", t.records());
    } catch (const std::exception& e) {
      fmt::print("{}  unreadable: {}\n", f.string(), e.what());
    }
  }
}

void run(const RecoverCli& cli) {
  if (cli.list) return list_files(cli);
  const std::filesystem::path file = pick_file(cli);
  if (const std::string e = output_is_input("-o", cli.output, file, "the flight file"); !e.empty())
    throw CLI::ValidationError(e);
  recover::RecoverOptions o;
  o.live = cli.live;
  o.strict = cli.strict;
  recover::RecoveredTrace t = recover::recover_file(file, o);
  if (!cli.live && t.state == flight::FileState::live && process_running(t.pid))
    throw std::runtime_error(
        fmt::format("{}: process {} ({}) is still running; --live takes a snapshot of its "
                    "buffers without stopping it",
                    file.string(), t.pid, t.comm));
  for (const std::string& w : t.warnings)
    fmt::print(stderr, "tracepipe recover: warning: {}: {}\n", file.string(), w);
  recover::write_trace_dat(t, cli.output);
  uint64_t overrun = 0, lost = 0, raced = 0;
  for (const auto& c : t.cpus) {
    overrun += c.counters.overrun;
    lost += c.counters.lost();
    raced += c.raced;
  }
  fmt::print(
      stderr,
      "tracepipe recover: {}: pid {} ({}), instance {}, {} CPUs: {} records written to {}; "
      "{} uncommitted reservations skipped, {} sub-buffers cut short, {} overrun, {} lost{}\n",
      file.string(), t.pid, t.comm, t.instance, t.cpus.size(), t.records(), cli.output,
      t.uncommitted(), t.cut_short(), overrun, lost,
      cli.live ? fmt::format(", {} sub-buffers overwritten while read", raced) : "");
}

Registrar reg{[](CLI::App& app) {
  auto opts = std::make_shared<RecoverCli>();
  auto* sub = app.add_subcommand(
      "recover", "Turn a flight recorder file (crashed or live process) into a trace.dat");
  sub->add_option("path", opts->path, "Flight file, or the directory holding it")
      ->capture_default_str();
  sub->add_option("-o,--output", opts->output, "trace.dat to write")->capture_default_str();
  sub->add_option("--pid", opts->pid, "In a directory: the file of this process");
  sub->add_flag("--live", opts->live,
                "The process may still run: snapshot its buffers without stopping it");
  sub->add_flag("--strict", opts->strict,
                "Damage inside a sub-buffer or the metadata is an error, not a warning");
  sub->add_flag("--list", opts->list, "List the flight files in the directory");
  sub->callback([opts] { run(*opts); });
}};

}  // namespace
}  // namespace tracepipe::tools
