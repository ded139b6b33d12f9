#pragma once
// pid -> comm, as the kernel's saved_cmdlines file lists them
// (Instance::cmdlines(), the sideband's task names).
#include <cstdint>
#include <string>

namespace tracepipe {

/// One saved command line, as the kernel's saved_cmdlines file lists them.
struct Cmdline {
  int32_t pid;
  std::string comm;
};

}  // namespace tracepipe
