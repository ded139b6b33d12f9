# Runs emit cases of the microbench (about a second in all) and checks the
# target report on stderr and the library's table on stdout. Met or not is
# timing: not asserted.

# Runs the microbench with one filter (and any further flags); sets `out` and
# `err` in the caller.
function(run_bench filter)
  execute_process(COMMAND ${BENCH} "--benchmark_filter=${filter}" ${ARGN}
    OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "microbench (${filter}) exited ${rc}: ${e}")
  endif()
  set(out "${o}" PARENT_SCOPE)
  set(err "${e}" PARENT_SCOPE)
endfunction()

# Fails unless stderr matches every pattern given.
function(expect_stderr label)
  foreach(want ${ARGN})
    if(NOT err MATCHES "${want}")
      message(FATAL_ERROR "${label}: stderr lacks '${want}':\n${err}")
    endif()
  endforeach()
endfunction()

# Two single cases: exactly the two targets they make are judged, and stdout
# holds the benchmark table only.
run_bench("^emit/(no_filter|staged_discard/per_thread)/min")
expect_stderr("single cases" "emit targets" "staged discard \\(ns\\)" "commit \\(ns\\)" "of 2 targets met")
if(err MATCHES "adaptive")
  message(FATAL_ERROR "a target whose cases did not run was judged:\n${err}")
endif()
if(out MATCHES "emit targets" OR NOT out MATCHES "emit/no_filter/min_time")
  message(FATAL_ERROR "stdout should hold the benchmark table only:\n${out}")
endif()

# A paired case alone: its counters judge the one ratio target it holds.
run_bench("^emit/paired/accept_0/")
expect_stderr("paired case" "adaptive 0% kept / better policy" "paired: quartiles" "staged_discard [0-9.]+"
  "of 1 targets met")
if(NOT out MATCHES "adaptive_0/better=")
  message(FATAL_ERROR "paired run: stdout lacks the ratio counter:\n${out}")
endif()

# --benchmark_format=json: the library's JSON on stdout and no judgement
# (main.cc reads the flag before the library takes it out of argv).
run_bench("^emit/no_filter/min" "--benchmark_format=json")
if(NOT out MATCHES "^{" OR NOT out MATCHES "\"name\": \"emit/no_filter/min_time:0.200\"")
  message(FATAL_ERROR "json run: stdout is not the library's JSON:\n${out}")
endif()
if(err MATCHES "emit targets")
  message(FATAL_ERROR "json run: the judgement was printed:\n${err}")
endif()

# The overwrite / drop-newest pair: both legs' costs and the difference are
# printed, and the drop-newest leg did not fill (it reports an error if it
# did, which the library prints in place of the counters).
run_bench("^buffer_mode/paired/no_filter" "--benchmark_min_time=0.05")
if(out MATCHES "ERROR" OR NOT out MATCHES "overwrite-drop_newest_ns=[0-9.]+"
   OR NOT out MATCHES "overwrite_ns=[0-9.]+" OR NOT out MATCHES "drop_newest_ns=[0-9.]+")
  message(FATAL_ERROR "buffer_mode pair: counters missing or the run failed:\n${out}\n${err}")
endif()
