# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/fuzz.cmake - the libFuzzer targets, one per parser that reads outside input:
#   fuzz_trace   inspector-replay's trace reader (tools/replay/trace_load.c)
#   fuzz_report  inspector-report's log line parser (tools/report/parse.c), its fast scanner
#                (scan.c) held to the jansson reference
#   fuzz_env     the plugin's environment parser (src/core/config.c)
# and, as ctests, one pass of each over its committed seeds (no fuzzing: a regression check
# that runs in seconds).
#
# Used two ways:
#  - tests/fuzz/CMakeLists.txt, a project of its own that `make fuzz` (tests/fuzz/run.sh)
#    configures with clang whatever compiler the main build uses;
#  - include()d from tests/CMakeLists.txt: then the targets exist only when the main build
#    itself uses clang (and not ThreadSanitizer, which libFuzzer's ASan cannot join).
# libFuzzer comes with clang (Debian: clang and libclang-rt-dev).
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(STATUS "fuzz targets need clang (libFuzzer); not built with ${CMAKE_C_COMPILER_ID}")
  return()
endif()
if(INSPECTOR_SANITIZE STREQUAL "thread")
  message(STATUS "fuzz targets are not built under ThreadSanitizer")
  return()
endif()

set(INS_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
get_filename_component(INS_FUZZ_ROOT ${CMAKE_CURRENT_LIST_DIR}/../.. ABSOLUTE)

find_package(ZLIB)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND AND NOT TARGET PkgConfig::JANSSON)
  pkg_check_modules(JANSSON IMPORTED_TARGET jansson)
endif()

# Every source of a fuzz target is instrumented (coverage and sanitizers), not only the
# target's own file: the parsers are what is being explored. -UNDEBUG: the targets check
# their invariants with assert() whatever the build type.
set(INS_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer -g -O1 -UNDEBUG)

function(ins_fuzz_target name)
  cmake_parse_arguments(F "" "" "SOURCES;INCLUDES;LIBS" ${ARGN})
  add_executable(${name} ${INS_FUZZ_DIR}/${name}.c ${F_SOURCES})
  target_include_directories(${name} PRIVATE ${F_INCLUDES})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_compile_options(${name} PRIVATE ${INS_FUZZ_FLAGS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${F_LIBS} m)
endfunction()

if(TARGET PkgConfig::JANSSON AND ZLIB_FOUND)
  # The loader and the trace builder; fuzz_trace.c brings its own rp_intern (intern.c's pool
  # never frees).
  ins_fuzz_target(fuzz_trace
    SOURCES ${INS_FUZZ_ROOT}/tools/replay/trace_load.c ${INS_FUZZ_ROOT}/tools/replay/trace.c
            ${INS_FUZZ_ROOT}/tools/replay/idmap.c
    INCLUDES ${INS_FUZZ_ROOT}/tools/replay
    LIBS PkgConfig::JANSSON ZLIB::ZLIB)
  ins_fuzz_target(fuzz_report
    SOURCES ${INS_FUZZ_ROOT}/tools/report/parse.c ${INS_FUZZ_ROOT}/tools/report/scan.c
            ${INS_FUZZ_ROOT}/src/core/utf8.c
    INCLUDES ${INS_FUZZ_ROOT}/tools/report ${INS_FUZZ_ROOT}/src
    LIBS PkgConfig::JANSSON)
else()
  message(STATUS "fuzz_trace and fuzz_report need zlib and jansson: not built")
endif()

# config.c and what it calls: the misspelled-setting check (env.c), the logger (stderr
# until NCCL gives one), what a warning may show of a value (redact.c) and, where present,
# the UTF-8 cleaner the host name goes through.
set(_env_sources ${INS_FUZZ_ROOT}/src/core/config.c ${INS_FUZZ_ROOT}/src/core/env.c
    ${INS_FUZZ_ROOT}/src/core/log.c)
if(EXISTS ${INS_FUZZ_ROOT}/src/core/redact.c)
  list(APPEND _env_sources ${INS_FUZZ_ROOT}/src/core/redact.c)
endif()
if(EXISTS ${INS_FUZZ_ROOT}/src/core/utf8.c)
  list(APPEND _env_sources ${INS_FUZZ_ROOT}/src/core/utf8.c)
endif()
ins_fuzz_target(fuzz_env SOURCES ${_env_sources} INCLUDES ${INS_FUZZ_ROOT}/src LIBS Threads::Threads)

if(BUILD_TESTING)
  # One pass over the committed seeds (-runs=0 runs each given input once).
  if(TARGET fuzz_trace)
    add_test(NAME fuzz:trace.edge COMMAND fuzz_trace -runs=0 ${INS_FUZZ_ROOT}/tests/data/edge)
    add_test(NAME fuzz:report.seeds COMMAND fuzz_report -runs=0 ${INS_FUZZ_DIR}/corpus/report)
    set_tests_properties(fuzz:trace.edge fuzz:report.seeds PROPERTIES LABELS "fuzz" TIMEOUT 60)
  endif()
  add_test(NAME fuzz:env.seeds COMMAND fuzz_env -runs=0 -close_fd_mask=2 ${INS_FUZZ_DIR}/corpus/env)
  set_tests_properties(fuzz:env.seeds PROPERTIES LABELS "fuzz" TIMEOUT 60)
endif()
