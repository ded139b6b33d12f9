#include <tracepipe/core/version.h>

#include <cstdio>

int main() {
  std::printf("tracepipe %s\n", tracepipe::version());
  return 0;
}
