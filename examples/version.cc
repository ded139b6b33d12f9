// Prints the library version: the smallest program that links tracepipe.
#include <tracepipe/tracepipe.h>

#include <cstdio>

int main() {
  std::printf("tracepipe %s\n", tracepipe::version());
  return 0;
}
