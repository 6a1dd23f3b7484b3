# SPDX-License-Identifier: Apache-2.0
# Run at build time, after a C unit test is linked (ins_unit_cases in tests.cmake):
#   cmake -DBIN=<test binary> -DOUT=<file> -DARGS=<its arguments, |-separated> -P unit_cases.cmake
# writes the binary's own `--list` (one case a line: `name [label,label]`) to OUT, which
# ctest reads to register one test per case. The list comes from the binary, so that a case
# added to a test's table is run without being named anywhere else.
string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND ${BIN} --list ${_args} OUTPUT_VARIABLE _out RESULT_VARIABLE _rc
                ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0 OR _out STREQUAL "")
  file(REMOVE ${OUT})
  message(FATAL_ERROR "${BIN} --list failed (${_rc}): ${_err}")
endif()
file(WRITE ${OUT}.tmp "${_out}")
file(RENAME ${OUT}.tmp ${OUT})
