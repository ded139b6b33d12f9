// tracepipe: ftrace's event pipeline in user space.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <exception>

#include "core/version.h"
#include "tools/commands.h"

namespace tracepipe::tools {
// Subcommands register here; each lives in its own file.
void add_all_commands(CLI::App& app) { (void)app; }
}  // namespace tracepipe::tools

int main(int argc, char** argv) {
  CLI::App app{"tracepipe: the Linux ftrace event pipeline in user space"};
  app.set_version_flag("--version", tracepipe::version());
  app.require_subcommand(1);
  tracepipe::tools::add_all_commands(app);
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
