// record::LocalCollector: the trace-cmd listen that tests, the record bench
// and examples/record_collector.cc start; its failure to start is reported,
// its directory is kept or removed as documented, and kill() ends it.
#include "tracepipe/core/record/local_collector.h"

#include <signal.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "test_support.h"

using tracepipe::record::LocalCollector;

TEST_CASE("local collector: listens on its port, and kill() ends it", "[record][net]") {
  if (!LocalCollector::available())
    TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  std::filesystem::path dir;
  {
    LocalCollector col;
    REQUIRE(col.ok());
    CHECK(col.why().empty());
    dir = col.dir();
    CHECK(std::filesystem::is_directory(dir));
    CHECK(col.address() == "localhost:" + std::to_string(col.port()));
    CHECK(tracepipe::record::tcp_listening(col.port()));
    CHECK_FALSE(col.busy());  // no session yet
    CHECK_FALSE(col.wait_file(std::chrono::milliseconds(10)).has_value());
    col.kill();
    CHECK_FALSE(col.ok());
    CHECK_FALSE(tracepipe::record::tcp_listening(col.port()));
    col.kill();  // idempotent
  }
  CHECK_FALSE(std::filesystem::exists(dir));  // the directory it made is removed
}

TEST_CASE("local collector: a directory given by the caller is kept", "[record][net]") {
  if (!LocalCollector::available())
    TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tp_lc_kept_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    LocalCollector col(dir);
    REQUIRE(col.ok());
    CHECK(col.dir() == dir);
  }
  CHECK(std::filesystem::exists(dir / "listen.log"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("local collector: trace-cmd missing from PATH is reported, not hung on",
          "[record][net]") {
  const char* old = ::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", "/nonexistent", 1);
  LocalCollector col({}, std::chrono::seconds(5));
  ::setenv("PATH", saved.c_str(), 1);
  CHECK_FALSE(col.ok());
  CHECK(col.why().find("trace-cmd listen exited at start") == 0);
  CHECK(col.port() != 0);
  CHECK_FALSE(tracepipe::record::tcp_listening(col.port()));
}
