#pragma once
// The checkout's and the build's folders, for tests that read data files.
// Force-included into every test (tests/CMakeLists.txt) and defined once in
// test_paths.cc: a test object then does not depend on where the checkout
// lies, so ccache reuses it in another clone or worktree of the same tree.
namespace tp_test {
const char* source_dir();       // the checkout (PROJECT_SOURCE_DIR)
const char* binary_dir();       // the build folder (PROJECT_BINARY_DIR)
const char* shared_data_dir();  // the shared data folder (-DTP_SHARED_DATA)
}  // namespace tp_test
#define TP_SOURCE_DIR (::tp_test::source_dir())
#define TP_BINARY_DIR (::tp_test::binary_dir())
#define TP_SHARED_DATA (::tp_test::shared_data_dir())
