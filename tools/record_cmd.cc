// `tracepipe record [--config FILE] (-o OUT.dat | -N HOST:PORT) [--format
// perfetto|ctf] [--] COMMAND ARGS...`: runs a program built with tracepipe
// so that it records into OUT.dat (with --format, a Perfetto file or a CTF
// trace directory OUT), or to `trace-cmd listen` at HOST:PORT, without a change to
// its code (core/record/autostart.cc), as `trace-cmd record [-N]` runs a
// command. Options end at the command, as trace-cmd's do: what follows
// COMMAND is its own; an unknown option before it is a usage error. See
// docs/record.md.
//
// Before the command runs, what can be checked here is (trace-cmd refuses
// before it starts tracing): the options (a usage error: exit 2), the
// config and the syntax of its filters, the options with the config, and
// the output, written as a probe beside it by a recorder of the same
// options (exit kRecordFailed, nothing left behind). What needs the
// command's events (an unknown event, a filter's fields) is checked by the
// command's recorder.
//
// The command gets TRACEPIPE_CONFIG (the config file; without --config, one
// that enables every event of a drop-newest main instance of 4096 KiB per
// CPU), TRACEPIPE_RECORD_BLOCK with --block[=US],
// TRACEPIPE_RECORD_OUTPUT (OUT.dat, absolute) or TRACEPIPE_RECORD_COLLECTOR,
// TRACEPIPE_RECORD_FORMAT with --format,
// and TRACEPIPE_RECORD_STATUS (a temp file its recorder writes when done:
// "ok N" or "failed CAUSE"). The terminal's Ctrl-C reaches the command
// itself (same process group), whose recorder stops, drains and finalizes
// before the command ends; SIGINT or SIGTERM sent to tracepipe alone is
// passed on to the command (one inherited ignored stays ignored, in the
// command too, as a shell leaves it). tracepipe waits for the command and exits with
// its status, or with kRecordFailed (125, as env and timeout do when they
// fail themselves) when the recording failed (the command printed the
// cause). If the command wrote no status (it does not use tracepipe, or
// died before recording), OUT.dat becomes an empty trace if it is not a
// valid one (a Perfetto or CTF output: if it is missing), or, with -N,
// tracepipe sends an empty trace itself.
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/core/config/config.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/record/net_sink.h"
#include "tracepipe/core/record/recorder.h"
#include "tracepipe/core/record/trace_file.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"
#include "tracepipe/filters/parser.h"
#include "tracepipe/tools/commands.h"
#include "tracepipe/tools/same_file.h"

extern char** environ;

namespace tracepipe::tools {
namespace {

struct RecordCli {
  std::string config;
  std::string output;
  std::string collector;  // -N
  int file_version = 0;   // --file-version (0: the config's)
  std::string compression;
  std::string block;   // --block[=US]: "inf" or microseconds ("" = not given)
  std::string format;  // --format ("" = the config's)
  bool quiet = false;
  std::vector<std::string> command;
};

// tracepipe record's own failure (the recording failed, whatever the
// command's status), as env(1) and timeout(1) exit 125 when they fail.
constexpr int kRecordFailed = 125;
// A usage error (a bad option, a missing -o): exit 2 as every subcommand's
// (tools/main.cc) and getopt tools'.
constexpr int kUsageError = 2;

volatile sig_atomic_t g_child = 0;

// A signal from the terminal (si_code SI_KERNEL: Ctrl-C, Ctrl-\\) reached the
// whole foreground process group, the command included: passing it on would
// make it a second one (which ends the command at once). A signal sent to
// tracepipe alone (kill, systemd) goes to the command.
void forward(int sig, siginfo_t* si, void*) {
  if (si != nullptr && si->si_code == SI_KERNEL) return;
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

// The status line the command's recorder left ("" when none).
std::string read_status(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  return line;
}

// True if `p` is a trace.dat our reader opens.
bool valid_trace(const std::filesystem::path& p) {
  try {
    (void)TraceDatReader::open(p);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// The command's environment: ours without any TRACEPIPE_* recording
// variable, then the recording's.
std::vector<std::string> child_environment(const RecordCli& cli,
                                           const std::filesystem::path& config,
                                           const std::filesystem::path& out,
                                           const std::filesystem::path& status_file) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TRACEPIPE_CONFIG=", 17) == 0 ||
        std::strncmp(*e, "TRACEPIPE_RECORD_", 17) == 0)
      continue;
    env.emplace_back(*e);
  }
  env.push_back("TRACEPIPE_CONFIG=" + config.string());
  if (cli.file_version != 0)
    env.push_back(fmt::format("TRACEPIPE_RECORD_FILE_VERSION={}", cli.file_version));
  if (!cli.compression.empty()) {
    env.push_back("TRACEPIPE_RECORD_COMPRESSION=" + cli.compression);
    if (cli.file_version == 0)
      env.push_back("TRACEPIPE_RECORD_FILE_VERSION=7");  // compression needs 7
  }
  if (!cli.block.empty()) env.push_back("TRACEPIPE_RECORD_BLOCK=" + cli.block);
  if (!cli.format.empty()) env.push_back("TRACEPIPE_RECORD_FORMAT=" + cli.format);
  if (!cli.collector.empty())
    env.push_back("TRACEPIPE_RECORD_COLLECTOR=" + cli.collector);
  else
    env.push_back("TRACEPIPE_RECORD_OUTPUT=" + out.string());
  env.push_back("TRACEPIPE_RECORD_STATUS=" + status_file.string());
  if (cli.quiet) env.push_back("TRACEPIPE_RECORD_QUIET=1");
  return env;
}

// Runs the command with `env`, SIGINT and SIGTERM passed on (forward()),
// and returns its wait status, or the shell's 127 / 126 (negated) when it
// could not run.
int spawn_and_wait(const RecordCli& cli, std::vector<std::string> env) {
  std::vector<char*> envp, argv;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cli.command;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  struct sigaction old_int {
  }, old_term{};
  // SIGINT and SIGTERM are held until the command's pid is known: one that
  // arrives while it starts is passed on then, not dropped. The command
  // starts with the mask tracepipe had.
  sigset_t held, old_mask;
  sigemptyset(&held);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &held, &old_mask);
  // An ignored SIGINT or SIGTERM (a background job of a script, nohup) stays
  // ignored, as a shell leaves it for its children: a handler here would be
  // reset to the default in the command by exec, so ^C or a kill meant for
  // others would stop it.
  ::sigaction(SIGINT, nullptr, &old_int);
  ::sigaction(SIGTERM, nullptr, &old_term);
  if (old_int.sa_handler != SIG_IGN) ::sigaction(SIGINT, &sa, nullptr);
  if (old_term.sa_handler != SIG_IGN) ::sigaction(SIGTERM, &sa, nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &old_mask);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int err = ::posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  int status = 0;
  if (err == 0) g_child = pid;
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (err == 0) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (err == 0) return status;
  // The shell's and env(1)'s convention: 127 when the command is not
  // found, 126 when it is found but cannot run.
  fmt::print(stderr, "tracepipe record: cannot run {}: {}\n", cli.command[0], std::strerror(err));
  return err == ENOENT ? -127 : -126;
}

// Why the command left no status: killed by a signal before its recorder
// wrote one (before it started, or before it finalized); gone without its
// exit handlers after its recording `started` (the output exists: _exit(),
// quick_exit(), an exec); or it never started one (not linked with the C++
// library, whose autostart reads TRACEPIPE_CONFIG).
std::string no_status_cause(const RecordCli& cli, int status, bool started) {
  if (WIFSIGNALED(status)) {
    const char* abbrev = ::sigabbrev_np(WTERMSIG(status));
    return fmt::format("{} was killed by signal {} (SIG{}) before its recording ended",
                       cli.command[0], WTERMSIG(status), abbrev != nullptr ? abbrev : "?");
  }
  if (started)
    return fmt::format(
        "warning: {} ended (exit status {}) without finishing its recording: _exit(), "
        "quick_exit() or an exec skip the exit handlers that write out the events still in its "
        "buffers, which are lost",
        cli.command[0], WEXITSTATUS(status));
  return cli.command[0] + " recorded nothing (not linked with tracepipe::tracepipe?)";
}

// The command recorded nothing (no status: not linked with tracepipe, or
// dead before it recorded): the output is still a trace. Killed after it
// recorded, what it wrote stays (a valid trace at every moment), and
// that is said: no summary was printed.
// `v7_cut`: the command was killed while it rewrote its recording as
// version 7 (a second Ctrl-C), and the rewrite's temporary file was removed.
int record_nothing(const RecordCli& cli, const std::filesystem::path& out,
                   record::OutputFormat format, int status, bool v7_cut) {
  const bool started =
      format != record::OutputFormat::tracedat
          ? std::filesystem::exists(format == record::OutputFormat::ctf ? out / "metadata" : out)
          : cli.collector.empty() && valid_trace(out);
  const std::string cause = no_status_cause(cli, status, started);
  if (format != record::OutputFormat::tracedat) {
    // What the command left stays; a missing output becomes an empty trace.
    if (started) {
      fmt::print(stderr, "tracepipe record: {}; {} holds what was written until then\n", cause,
                 out.string());
      return 0;
    }
    InstanceOptions io;
    io.cpus = std::max(1u, std::thread::hardware_concurrency());
    Instance empty(io);
    record::RecorderOptions ro;
    ro.output = out;
    ro.format = format;
    record::Recorder rec(empty, ro);
    (void)rec.stop();
    if (rec.error()) return kRecordFailed;
    fmt::print(stderr, "tracepipe record: {}; {} is an empty trace\n", cause, out.string());
  } else if (!cli.collector.empty()) {
    // The collector gets an empty trace.
    InstanceOptions io;
    io.cpus = std::max(1u, std::thread::hardware_concurrency());
    Instance empty(io);
    record::RecorderOptions ro;
    ro.collector = cli.collector;
    if (cli.file_version == 7 || !cli.compression.empty()) ro.file_version = 7;
    if (!cli.compression.empty()) ro.compression = cli.compression;
    record::Recorder rec(empty, ro);  // a fault is printed once (on_error's default)
    (void)rec.stop();
    if (rec.error()) return kRecordFailed;
    fmt::print(stderr, "tracepipe record: {}; {} got an empty trace\n", cause, cli.collector);
  } else {
    // The rewrite reads the recording in place and renames its own file
    // over it only when complete: the recording is what it was before.
    const std::string cut = v7_cut
                                ? fmt::format(" (its version 7 rewrite was cut short: {} removed)",
                                              record::TraceFile::v7_temp_path(out).string())
                                : std::string();
    if (!started) {
      // An empty trace, one stream per CPU.
      TraceDatWriterConfig wc;
      wc.cpus = std::max(1u, std::thread::hardware_concurrency());
      TraceDatWriter(wc).write(out);
      fmt::print(stderr, "tracepipe record: {}; {} is an empty trace{}\n", cause, out.string(),
                 cut);
    } else {
      // Never finished, so never compacted: each CPU's region is still a hole.
      fmt::print(stderr,
                 "tracepipe record: {}; {} holds what was written until then (a sparse file: ls "
                 "-l shows the space reserved for each CPU, du what it holds; cp --sparse=always "
                 "keeps it small){}\n",
                 cause, out.string(), cut);
    }
  }
  return 0;
}

// This run's files in the temp folder: tracepipe_record_PID.status (the
// command's TRACEPIPE_RECORD_STATUS) and .toml (the config made when none
// is given).
constexpr std::string_view kTempPrefix = "tracepipe_record_";
std::filesystem::path temp_file(std::string_view ext) {
  return std::filesystem::temp_directory_path() /
         fmt::format("{}{}{}", kTempPrefix, ::getpid(), ext);
}

// The temp files a tracepipe record killed by SIGKILL left: removed once
// their pid is gone. A pid reused by another process keeps them until it ends.
void remove_stale_files(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string ext = e.path().extension().string();
    if (!name.starts_with(kTempPrefix) || (ext != ".status" && ext != ".toml")) continue;
    const std::string pid =
        name.substr(kTempPrefix.size(), name.size() - kTempPrefix.size() - ext.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9)
      continue;
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      std::filesystem::remove(e.path(), rm);
    }
  }
}

// A command-line mistake: "tracepipe record: MESSAGE", exit kUsageError,
// the command not run.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Recording cannot start (the config, a filter, the output, the options
// with the config): "tracepipe record: MESSAGE", exit kRecordFailed, the
// command not run.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The command line alone: every mistake is a UsageError.
void check_usage(const RecordCli& cli, bool after_dashes) {
  // An unknown option before the command: CLI11's prefix_command takes the
  // first word it does not know, option or not, for the command.
  if (!cli.command.empty() && !after_dashes && cli.command[0].size() > 1 &&
      cli.command[0][0] == '-')
    throw UsageError("unknown option " + cli.command[0] +
                     "; the command starts at the first word that is not an option, or after --");
  if (cli.command.empty())
    throw UsageError("no command (tracepipe record -o OUT.dat [--] COMMAND ARGS...)");
  if (cli.output.empty() == cli.collector.empty())
    throw UsageError("give -o OUT.dat or -N HOST:PORT (one of them)");
  if (!cli.collector.empty() && !record::parse_collector(cli.collector))
    throw UsageError("-N " + cli.collector + ": expected HOST:PORT (or PORT for localhost)");
  if (!cli.collector.empty() && !cli.format.empty() && cli.format != "tracedat")
    throw UsageError("--format " + cli.format +
                     " with -N: trace-cmd listen takes trace.dat only (record to a file with -o)");
  if (!cli.format.empty() && cli.format != "tracedat" &&
      (cli.file_version != 0 || !cli.compression.empty()))
    throw UsageError("--format " + cli.format +
                     ": --file-version and --compression are trace.dat's");
  // The stale output is removed before the command runs: not the command
  // itself, nor the config it reads.
  for (const auto& [in, what] : {std::pair{command_file(cli.command[0]), "the command"},
                                 std::pair{std::filesystem::path(cli.config), "the config"}})
    if (const std::string e = output_is_input("-o", cli.output, in, what); !e.empty())
      throw UsageError(e);
}

// Each filter of the config, as far as it can be judged without the
// command's events (declared in the command, unknown here): the kernel's
// calc_stack errors (parentheses, quotes) come before any field is looked
// up, so an expression parsed against no fields fails on its first field
// when it is otherwise well formed ("Field not found": left to the command).
void check_filters(const Config& cfg) {
  const auto check = [](const EventSettings& es) {
    if (!es.filter || filters::clears_filter(*es.filter)) return;
    const filters::ParseResult r = filters::parse(*es.filter, {}, filters::CompileOptions{});
    if (r.ok() || r.error().code == filters::FilterErr::field_not_found) return;
    std::string render = r.error().render(*es.filter);
    while (!render.empty() && render.back() == '\n') render.pop_back();
    throw Refused(fmt::format("{}:{}: {}: {}", es.filter_where.file, es.filter_where.line,
                              es.filter_where.key, render));
  };
  for (const InstanceConfig& ic : cfg.instances) {
    for (const EventSettings& es : ic.systems) check(es);
    for (const EventSettings& es : ic.events) check(es);
  }
}

// Whether the output can be written as the command's recorder will write
// it: the path itself (a folder where a file goes, a device, no write
// permission), then a recorder on an instance of the config's geometry and
// mode (no events) writing a probe beside it, in the same folder and file
// system, stopped and removed at once. So a missing folder, /sys, a full
// disk, --block with an overwrite buffer or a flight recording of a
// drop-newest buffer are refused before the command runs, and an output
// that was there is left as it was.
void check_output(const RecordCli& cli, const Config* cfg, const std::filesystem::path& out,
                  record::OutputFormat format) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (fs::exists(st)) {
    if (format == record::OutputFormat::ctf && !fs::is_directory(st))
      throw Refused(out.string() + ": not a directory (--format ctf writes a trace directory)");
    if (format != record::OutputFormat::ctf && fs::is_directory(st))
      throw Refused(out.string() + ": is a directory");
    if (format != record::OutputFormat::ctf && !fs::is_regular_file(st))
      throw Refused(out.string() + ": not a regular file");
    if (::access(out.c_str(), W_OK) != 0)
      throw Refused(out.string() + ": cannot write it: " + std::strerror(errno));
  } else if (format == record::OutputFormat::ctf) {
    // The CTF writer makes its trace directory with its parents; a missing
    // folder above it is refused here, as for the other formats' files.
    const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec))
      throw Refused(out.string() + ": cannot create it: " + parent.string() +
                    " is not an existing folder");
  }
  InstanceOptions io = cfg != nullptr ? cfg->instances.front().options : InstanceOptions{};
  if (cfg == nullptr) io.mode = BufferMode::drop_newest;  // the default config's
  io.flight_recorder = false;                             // no flight file for a probe
  io.buffer_size_kb = uint64_t{io.subbuf_size_kb} * 8;    // the geometry, not the memory
  // What core/record/autostart.cc makes of the config and the variables
  // child_environment() sets.
  record::RecorderOptions ro;
  ro.format = format;
  if (cfg != nullptr && cfg->recording) {
    const RecordingConfig& rc = *cfg->recording;
    ro.mode = rc.flight_recorder ? record::RecordMode::flight_recorder : record::RecordMode::stream;
    ro.file_version = rc.file_version;
    ro.compression = rc.compression;
    if (rc.block_timeout_us != 0)
      ro.block_timeout = rc.block_timeout_us < 0 ? record::RecorderOptions::kBlockForever
                                                 : std::chrono::microseconds(rc.block_timeout_us);
  }
  if (!cli.block.empty())
    ro.block_timeout =
        cli.block == "inf"
            ? record::RecorderOptions::kBlockForever
            : std::chrono::microseconds(std::strtoll(cli.block.c_str(), nullptr, 10));
  if (cli.file_version != 0) ro.file_version = static_cast<uint32_t>(cli.file_version);
  if (!cli.compression.empty()) {
    ro.compression = cli.compression;
    if (cli.file_version == 0) ro.file_version = 7;
  }
  ro.output = out.parent_path() /
              fmt::format(".{}.tracepipe-probe-{}", out.filename().string(), ::getpid());
  std::string fault;
  ro.on_error = [&fault](const std::string& e) { fault = e; };
  try {
    Instance probe(io);
    record::Recorder rec(probe, ro);
    (void)rec.stop();
    if (const auto err = rec.error()) fault = *err;
  } catch (const std::exception& e) {
    fault = e.what();
  }
  fs::remove_all(ro.output, ec);
  if (fault.empty()) return;
  if (fault.starts_with("recorder: ")) fault.erase(0, 10);
  // The probe's name stands for the output's in the message.
  for (size_t at; (at = fault.find(ro.output.string())) != std::string::npos;)
    fault.replace(at, ro.output.string().size(), out.string());
  throw Refused(fault);
}

int run_record(const RecordCli& cli, bool after_dashes) {
  check_usage(cli, after_dashes);
  const bool net = !cli.collector.empty();
  const std::filesystem::path out =
      net ? std::filesystem::path() : std::filesystem::absolute(cli.output);
  // The output's format: --format, else the config's [recording] format.
  record::OutputFormat format =
      record::parse_output_format(cli.format).value_or(record::OutputFormat::tracedat);
  remove_stale_files(std::filesystem::temp_directory_path());
  const std::filesystem::path status_file = temp_file(".status");
  std::filesystem::path config;
  std::filesystem::path temp_config;
  std::optional<Config> cfg;
  if (!cli.config.empty()) {
    config = std::filesystem::absolute(cli.config);
    cfg = load_config(config);  // errors now, with file and line, not in the command
    if (cli.format.empty() && cfg->recording)
      format = record::parse_output_format(cfg->recording->format)
                   .value_or(record::OutputFormat::tracedat);
    if (net && format != record::OutputFormat::tracedat)
      throw Refused(config.string() + ": [recording] format = \"" + cfg->recording->format +
                    "\" with -N: trace-cmd listen takes trace.dat only");
    check_filters(*cfg);
  }
  // What the output and the options with the config allow: refused now,
  // before the command runs. A collector is not tried (trace-cmd listen
  // takes one connection per recording): the options are, with a probe
  // in the temp folder.
  check_output(cli, cfg ? &*cfg : nullptr,
               net ? std::filesystem::temp_directory_path() / "tracepipe-record.dat" : out, format);
  if (cli.config.empty()) {
    temp_config = temp_file(".toml");
    std::ofstream f(temp_config);
    // 4096 KiB per CPU, not the kernel's 1408: what a recording needs to
    // outlast its recorder's late wake-ups (docs/record.md, "The recording buffer").
    f << "mode = \"drop_newest\"\nbuffer_size_kb = 4096\n[events.\"*:*\"]\nenable = "
         "true\n[recording]\nmode = \"stream\"\n";
    if (!f) throw Refused("cannot write " + temp_config.string());
    config = temp_config;
  }
  std::error_code ec;
  // A stale output must not pass for this run's trace (a CTF directory's
  // streams are replaced by the recorder; its metadata tells it is there).
  if (!net)
    std::filesystem::remove(format == record::OutputFormat::ctf ? out / "metadata" : out, ec);
  std::filesystem::remove(status_file, ec);
  const int status = spawn_and_wait(cli, child_environment(cli, config, out, status_file));
  if (!temp_config.empty()) std::filesystem::remove(temp_config, ec);
  if (status < 0) return -status;  // could not run
  // A command killed while it rewrote its recording as version 7 (a second
  // Ctrl-C) leaves the rewrite's temporary file beside the output
  // (core/record/trace_file.cc: TraceFile::finalize_v7).
  const bool v7_cut = !net && format == record::OutputFormat::tracedat &&
                      std::filesystem::remove(record::TraceFile::v7_temp_path(out), ec);
  const std::string rec_status = read_status(status_file);
  std::filesystem::remove(status_file, ec);
  if (rec_status.starts_with("failed")) {  // the command named the cause
    // A recording that failed before its headers were written (the disk
    // filled since the check) leaves a file no reader opens: removed.
    if (!net && format == record::OutputFormat::tracedat &&
        std::filesystem::is_regular_file(out, ec) && !valid_trace(out))
      std::filesystem::remove(out, ec);
    return kRecordFailed;
  }
  // "ok N": finalized, the summary printed; none: the command recorded nothing.
  if (rec_status.empty() && record_nothing(cli, out, format, status, v7_cut) != 0)
    return kRecordFailed;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<RecordCli>();
  auto* sub =
      app.add_subcommand("record",
                         "Run a command built with tracepipe and record its events into a "
                         "trace.dat, a Perfetto trace or a CTF trace (or to trace-cmd listen)");
  sub->add_option("--config", cli->config, "Config file: instances, events, [recording] settings")
      ->check(CLI::ExistingFile);
  auto* o =
      sub->add_option("-o,--output", cli->output,
                      "The trace.dat to write (with --format: the Perfetto file or CTF directory)");
  auto* n = sub->add_option(
      "-N", cli->collector,
      "Send the recording to `trace-cmd listen` at HOST:PORT (as trace-cmd record -N)");
  o->excludes(n);
  n->excludes(o);
  sub->add_option("--file-version", cli->file_version,
                  "trace.dat version: 6 (default) or 7 (as trace-cmd record)")
      ->check(CLI::IsMember({6, 7}));
  sub->add_option("--compression", cli->compression,
                  "Version 7's compression: zstd (default), zlib or none")
      ->check(CLI::IsMember({"zstd", "zlib", "none"}));
  // A flag that may carry a value (--block or --block=US): it never takes the
  // command that follows it for its value.
  sub->add_flag(
         "--block{inf}", cli->block,
         "Blocking mode: a writer that finds its buffer full waits for the recorder up to US "
         "microseconds (--block or --block=inf: no bound) instead of dropping, as LTTng's "
         "--blocking-timeout")
      ->check([](const std::string& v) -> std::string {
        if (v.empty() || v == "inf") return {};
        char* end = nullptr;
        const long long us = std::strtoll(v.c_str(), &end, 10);
        if (*end != '\0' || us < 0) return "expected microseconds or inf, got '" + v + "'";
        return {};
      });
  sub->add_option("--format", cli->format,
                  "Output format: tracedat (default), perfetto (-o names the file) or ctf (-o "
                  "names the trace "
                  "directory); written as the recording goes")
      ->check(CLI::IsMember({"tracedat", "perfetto", "ctf"}));
  sub->add_flag("-q,--quiet", cli->quiet, "No summary at the end (as trace-cmd record -q)");
  // Options end at the command (trace-cmd's rule): COMMAND ARGS... are the
  // command's, with or without a "--" before them.
  sub->prefix_command();
  sub->footer("COMMAND ARGS...: the command to run and record, with its own arguments");
  sub->callback([cli, sub, &app] {
    // Without "--", CLI11 leaves COMMAND ARGS with the subcommand; after
    // "--", with the top level (which allows them: tools/main.cc).
    cli->command = sub->remaining();
    const bool after_dashes = cli->command.empty();
    if (after_dashes) cli->command = app.remaining();
    try {
      std::exit(run_record(*cli, after_dashes));
    } catch (const UsageError& e) {
      fmt::print(stderr, "tracepipe record: {}\n", e.what());
      std::exit(kUsageError);
    } catch (const std::exception& e) {  // Refused, a ConfigError: recording cannot start
      fmt::print(stderr, "tracepipe record: {}\n", e.what());
      std::exit(kRecordFailed);
    }
  });
}};

}  // namespace
}  // namespace tracepipe::tools
