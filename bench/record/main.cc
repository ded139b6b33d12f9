// tracepipe_record_bench: the recording bench (record_bench.h).
#include "tracepipe/bench/record/record_bench.h"

int main(int argc, char** argv) {
  tracepipe::record_bench::Options o;
  if (const int rc = tracepipe::record_bench::parse_args(argc, argv, o); rc >= 0) return rc;
  return tracepipe::record_bench::run(o);
}
