#pragma once
// Helpers shared by all tests.
#include <filesystem>
#include <string>

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

}  // namespace tp_test

#define TP_SKIP(reason) ::tp_test::skip(reason)
