#pragma once
// Helpers shared by all tests.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tp_test {

/// Prints "SKIPPED: reason" and exits with 77, which CTest reports as
/// "Skipped". Use only for missing external inputs (data, tracefs), never to
/// hide a failure.
[[noreturn]] void skip(const std::string& reason);

/// ../shared/data/<rel>, or skip() with a clear reason when it is absent.
std::filesystem::path shared_data_or_skip(const std::string& rel);

/// True if /sys/kernel/tracing is present and writable by this process.
bool tracefs_writable();

/// Reads a whole file; throws std::runtime_error naming the path on failure.
std::string read_file(const std::filesystem::path& p);

/// Creates (or truncates) `p` as a sparse file of `size` bytes, which costs
/// no disk space; returns p.
std::filesystem::path sparse_file(const std::filesystem::path& p, uint64_t size);

/// Exit status (-1 if it did not exit) and what a command wrote.
struct CommandResult {
  int status = -1;
  std::string out, err;
};
/// `s` quoted for /bin/sh.
std::string shell_quote(const std::string& s);
/// Runs argv (no shell interpretation of the arguments) with stdin from
/// /dev/null under `timeout timeout_s`, capturing stdout and stderr in
/// files under `scratch_dir`.
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& scratch_dir,
                          int timeout_s = 120);

}  // namespace tp_test

#define TP_SKIP(reason) ::tp_test::skip(reason)
