#pragma once
// An output option that names one of the command's inputs (the same file
// under any name: the same path, a hard link, a symbolic link) is refused
// before anything is written: the input would be destroyed while, or before,
// it is read. convert maps its input and truncating it under the mapping is
// a SIGBUS; replay and recover rename their result over it; record removes
// a stale output before the command runs, which would remove the command
// itself or the config it is about to read.
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace tracepipe::tools {

/// The refusal when `out` (given as `option`) is the input `in` (`what`
/// names it: "the input trace", "the flight file", ...), else "". A path
/// that does not exist yet is no input.
inline std::string output_is_input(std::string_view option, const std::filesystem::path& out,
                                   const std::filesystem::path& in, std::string_view what) {
  std::error_code ec;
  if (out.empty() || in.empty() || !std::filesystem::equivalent(out, in, ec) || ec) return {};
  return fmt::format("{} {}: is {} ({}): writing it would destroy it; choose another output",
                     option, out.string(), what, in.string());
}

/// The file `command` runs, as posix_spawnp finds it: itself when it holds a
/// '/', else the first match in PATH ("" when none is found).
inline std::filesystem::path command_file(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const std::filesystem::path p =
        std::filesystem::path(dir.empty() ? "." : std::string(dir)) / command;
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace tracepipe::tools
