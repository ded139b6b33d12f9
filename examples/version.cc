// Prints the library version: the smallest program that links tracepipe.
#include <cstdio>

#include <tracepipe/tracepipe.h>

int main() {
  std::printf("tracepipe %s\n", tracepipe::version());
  return 0;
}
