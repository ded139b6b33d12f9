#include "test_paths.h"

namespace tp_test {
const char* source_dir() { return TP_SOURCE_DIR_VALUE; }
const char* binary_dir() { return TP_BINARY_DIR_VALUE; }
const char* shared_data_dir() { return TP_SHARED_DATA_VALUE; }
}  // namespace tp_test
