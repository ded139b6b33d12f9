// `tracepipe record [--config FILE] -o OUT.dat -- COMMAND ARGS...`: runs a
// program built with tracepipe so that it records into OUT.dat, without a
// change to its code (core/record/autostart.cc), as `trace-cmd record` runs
// a command. See docs/record.md.
//
// The command gets TRACEPIPE_CONFIG (the config file; without --config, one
// that enables every event of a drop-newest main instance) and
// TRACEPIPE_RECORD_OUTPUT (OUT.dat, absolute). SIGINT and SIGTERM go to the
// command; tracepipe waits for it and exits with its status. If the command
// wrote no valid trace.dat (it does not use tracepipe, or failed before
// recording), OUT.dat becomes an empty one, so the output is always a trace.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/core/config/config.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"
#include "tracepipe/tools/commands.h"

extern char** environ;

namespace tracepipe::tools {
namespace {

struct RecordCli {
  std::string config;
  std::string output;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
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

int run_record(const RecordCli& cli) {
  if (cli.command.empty()) throw std::runtime_error("record: no command (tracepipe record -o OUT.dat -- COMMAND ARGS)");
  const std::filesystem::path out = std::filesystem::absolute(cli.output);
  std::filesystem::path config;
  std::filesystem::path temp_config;
  if (!cli.config.empty()) {
    config = std::filesystem::absolute(cli.config);
    (void)load_config(config);  // errors now, with file and line, not in the command
  } else {
    temp_config = std::filesystem::temp_directory_path() / fmt::format("tracepipe_record_{}.toml", ::getpid());
    std::ofstream f(temp_config);
    f << "mode = \"drop_newest\"\n[events.\"*:*\"]\nenable = true\n[recording]\nmode = \"stream\"\n";
    if (!f) throw std::runtime_error("record: cannot write " + temp_config.string());
    config = temp_config;
  }
  std::error_code ec;
  std::filesystem::remove(out, ec);  // a stale file must not pass for this run's trace

  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "TRACEPIPE_CONFIG=", 17) == 0 || std::strncmp(*e, "TRACEPIPE_RECORD_OUTPUT=", 24) == 0)
      continue;
    env_store.emplace_back(*e);
  }
  env_store.push_back("TRACEPIPE_CONFIG=" + config.string());
  env_store.push_back("TRACEPIPE_RECORD_OUTPUT=" + out.string());
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cli.command;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  pid_t pid = 0;
  const int err = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (err != 0) {
    if (!temp_config.empty()) std::filesystem::remove(temp_config, ec);
    throw std::runtime_error(fmt::format("record: cannot run {}: {}", cli.command[0], std::strerror(err)));
  }
  g_child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (!temp_config.empty()) std::filesystem::remove(temp_config, ec);

  if (!valid_trace(out)) {
    // The command recorded nothing: an empty trace, one stream per CPU.
    TraceDatWriterConfig wc;
    wc.cpus = std::max(1u, std::thread::hardware_concurrency());
    TraceDatWriter(wc).write(out);
    fmt::print(stderr, "tracepipe record: {} recorded nothing (not built with tracepipe?); {} is an empty trace\n",
               cli.command[0], out.string());
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<RecordCli>();
  auto* sub = app.add_subcommand("record", "Run a command built with tracepipe and record its events into a trace.dat");
  sub->add_option("--config", cli->config, "Config file: instances, events, [recording] settings")
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", cli->output, "The trace.dat to write")->required();
  sub->add_option("command", cli->command, "The command and its arguments (after --)")->required();
  sub->callback([cli] { std::exit(run_record(*cli)); });
}};

}  // namespace
}  // namespace tracepipe::tools
