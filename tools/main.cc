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
constexpr int kUsageExit = 2;  // as `tracepipe replay`'s usage errors
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // No subcommand at all: the usage with the list of subcommands, on
    // stderr, and exit 2 like the subcommands' usage errors (replay's). Other
    // parse errors keep CLI11's message and exit code (105 for a bad value).
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
      fmt::print(stderr, "{}", app.help());
      return kUsageExit;
    }
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tracepipe: {}\n", e.what());
    return 1;
  }
  return 0;
}
