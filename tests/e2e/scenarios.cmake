# One ctest entry per scenario of an end-to-end script (tests/e2e/harness.sh, "scenarios").
#
# hftrain_add_e2e_scenarios(SCRIPT NAME [LABELS label...] [ENVIRONMENT VAR=value...])
#   adds "e2e: NAME: SCENARIO" for each name `bash tests/e2e/SCRIPT --list` prints, each running
#   `bash SCRIPT <hftrain> SCENARIO` with those labels and that environment. The list is read when
#   CMake configures, and a change to the script configures again, so a scenario added to the
#   script's `scenarios` line is an entry of its own at the next build.
set(HFTRAIN_E2E_DIR ${CMAKE_CURRENT_LIST_DIR})

function(hftrain_add_e2e_scenarios script name)
  cmake_parse_arguments(PARSE_ARGV 2 E2E "" "" "LABELS;ENVIRONMENT")
  set(path ${HFTRAIN_E2E_DIR}/${script})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path} ${HFTRAIN_E2E_DIR}/harness.sh)
  execute_process(COMMAND ${HFTRAIN_BASH} ${path} --list
                  OUTPUT_VARIABLE scenarios ERROR_VARIABLE error RESULT_VARIABLE result)
  string(STRIP "${scenarios}" scenarios)
  if(NOT result EQUAL 0 OR scenarios STREQUAL "")
    message(FATAL_ERROR "tests/e2e/${script} --list named no scenarios (exit ${result}): ${error}")
  endif()
  string(REPLACE "\n" ";" scenarios "${scenarios}")
  foreach(scenario IN LISTS scenarios)
    add_test(NAME "e2e: ${name}: ${scenario}" COMMAND ${HFTRAIN_BASH} ${path} $<TARGET_FILE:hftrain> ${scenario})
    set_tests_properties("e2e: ${name}: ${scenario}" PROPERTIES LABELS "${E2E_LABELS}"
                         ENVIRONMENT "${E2E_ENVIRONMENT}")
  endforeach()
endfunction()
