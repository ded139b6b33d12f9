file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(LAST_OUT "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BIN} --prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} -S ${SRC} -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release
    -DRECORD_APP_SRC=${RECORD_APP_SRC})
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer)
if(NOT LAST_OUT MATCHES "tracepipe 0.1.0 kept=1 discarded=1" OR NOT LAST_OUT MATCHES "convert: ConvertOutputError code=2")
  message(FATAL_ERROR "consumer printed: ${LAST_OUT}")
endif()
message(STATUS "consumer printed: ${LAST_OUT}")

# TRACEPIPE_BUILD_TOOLS installs the command beside the library.
if(TOOLS AND NOT EXISTS ${WORK}/prefix/bin/tracepipe)
  message(FATAL_ERROR "TRACEPIPE_BUILD_TOOLS is on but cmake --install put no bin/tracepipe")
endif()

# The installed `tracepipe record` on a program built against the installed
# package: a config's filter, trigger and hist apply (the triggers library
# registers itself before the recording applies the config, whatever the
# link order), the hist is printed at the end, the records are in the file.
if(RECORD_APP_SRC AND EXISTS ${WORK}/prefix/bin/tracepipe)
  file(WRITE ${WORK}/trig.toml "[events.\"app:request\"]\nenable = true\nfilter = \"latency_us >= 4000\"\n"
       "trigger = \"hist:keys=path:vals=latency_us\"\n[recording]\nprint_hist = true\n")
  execute_process(COMMAND ${WORK}/prefix/bin/tracepipe record --config ${WORK}/trig.toml -o ${WORK}/app.dat
                          ${WORK}/build/record_app --events 5000 --threads 1
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err MATCHES "Hits: 5000" OR NOT err MATCHES "tracepipe record: .*app.dat: 1000 records")
    message(FATAL_ERROR "tracepipe record on the installed package (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "tracepipe record on the installed package:\n${err}")
endif()
