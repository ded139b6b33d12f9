// tracepipe: ftrace's event pipeline in user space.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <exception>

#include "core/version.h"
#include "tools/commands.h"

namespace tracepipe::tools {
std::vector<AddCommand>& command_table() {
  static std::vector<AddCommand> table;
  return table;
}
}  // namespace tracepipe::tools

int main(int argc, char** argv) {
  CLI::App app{"tracepipe: the Linux ftrace event pipeline in user space"};
  app.set_version_flag("--version", tracepipe::version());
  app.require_subcommand(1);
  for (auto& add : tracepipe::tools::command_table()) add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tracepipe: {}\n", e.what());
    return 1;
  }
  return 0;
}
