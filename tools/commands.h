#pragma once
// Subcommands of the `tracepipe` command. Each is defined in <name>_cmd.cc;
// add_* registers its options on the CLI11 app and returns the callback state.
#include <CLI/CLI.hpp>

namespace tracepipe::tools {

/// Registers every subcommand on `app`. Defined in main.cc.
void add_all_commands(CLI::App& app);

}  // namespace tracepipe::tools
