#pragma once
// Subcommands of the `tracepipe` command. Each lives in its own <name>_cmd.cc
// and registers itself with a file-scope Registrar, so adding a command never
// touches another command's file:
//
//   static tracepipe::tools::Registrar reg{[](CLI::App& app) {
//     auto* sub = app.add_subcommand("report", "Print a trace.dat like trace-cmd report");
//     ...
//     sub->callback([opts] { run_report(*opts); });   // throw to fail
//   }};
//
// A callback reports failure by throwing (std::exception): main prints
// "tracepipe <name>: <what()>" and exits 1
// (a CLI::ParseError from the parse itself: exit 2, a usage error). A callback may also call
// std::exit.
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace tracepipe::tools {

using AddCommand = std::function<void(CLI::App&)>;

/// Every registered subcommand adder, in registration order.
std::vector<AddCommand>& command_table();

struct Registrar {
  explicit Registrar(AddCommand add) { command_table().push_back(std::move(add)); }
};

}  // namespace tracepipe::tools
