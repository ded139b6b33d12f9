# Runs two emit cases of the microbench (about half a second) and checks that
# the target report names both, judges exactly the two targets they make,
# and leaves stdout to the library's table. Met or not is timing: not asserted.
execute_process(COMMAND ${BENCH} "--benchmark_filter=^emit/(no_filter|staged_discard/per_thread)/min"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "microbench exited ${rc}: ${err}")
endif()
foreach(want "issue-5 targets" "staged discard \\(ns\\)" "commit \\(ns\\)" "of 2 targets met")
  if(NOT err MATCHES "${want}")
    message(FATAL_ERROR "stderr lacks '${want}':\n${err}")
  endif()
endforeach()
if(err MATCHES "adaptive")
  message(FATAL_ERROR "a target whose cases did not run was judged:\n${err}")
endif()
if(out MATCHES "issue-5 targets" OR NOT out MATCHES "emit/no_filter/min_time")
  message(FATAL_ERROR "stdout should hold the benchmark table only:\n${out}")
endif()

# A paired case alone: its counters judge the one ratio target it holds.
execute_process(COMMAND ${BENCH} "--benchmark_filter=^emit/paired/accept_0/"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "microbench exited ${rc}: ${err}")
endif()
foreach(want "adaptive 0% kept / better policy" "paired: quartiles" "staged_discard [0-9.]+" "of 1 targets met")
  if(NOT err MATCHES "${want}")
    message(FATAL_ERROR "paired run: stderr lacks '${want}':\n${err}")
  endif()
endforeach()
if(NOT out MATCHES "adaptive_0/better=")
  message(FATAL_ERROR "paired run: stdout lacks the ratio counter:\n${out}")
endif()
