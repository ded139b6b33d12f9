// tracepipe: ftrace's event pipeline in user space.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "tracepipe/core/instance/version.h"
#include "tracepipe/tools/commands.h"

namespace tracepipe::tools {
std::vector<AddCommand>& command_table() {
  static std::vector<AddCommand> table;
  return table;
}
}  // namespace tracepipe::tools

namespace {
// Usage errors (a bad option or value) of every subcommand, as CLI11 and
// getopt tools exit; a failure once running exits 1 (record: 125, see
// record_cmd.cc).
constexpr int kUsageExit = 2;
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tracepipe: the Linux ftrace event pipeline in user space"};
  app.set_version_flag("--version", tracepipe::version());
  app.require_subcommand(1);
  for (auto& add : tracepipe::tools::command_table()) add(app);
  // `record` ends its options at the command (prefix_command): CLI11 also
  // hands what follows the command to the top level, which must not refuse
  // it. Each subcommand keeps refusing its own extras (allow_extras is
  // copied into a subcommand when it is added, above).
  app.allow_extras();
  // Which subcommand a message comes from: one prefix per subcommand
  // ("tracepipe record: "), "tracepipe: " before one is known.
  const auto prefix = [&app] {
    const auto subs = app.get_subcommands();
    return subs.empty() ? std::string("tracepipe: ")
                        : "tracepipe " + subs.front()->get_name() + ": ";
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are not errors.
    if (e.get_exit_code() == 0) return app.exit(e);
    // No subcommand at all: the usage with the list of subcommands.
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      fmt::print(stderr, "{}", app.help());
      return kUsageExit;
    }
    // Every other parse error (unknown option, bad value, missing file) is a
    // usage error: one line, and exit 2 as getopt-style tools do.
    fmt::print(stderr, "{}{}\n", prefix(), e.what());
    return kUsageExit;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}{}\n", prefix(), e.what());
    return 1;
  }
  return 0;
}
