# SPDX-License-Identifier: Apache-2.0
# C unit tests (included from tests/CMakeLists.txt). Each lives where the code it tests lives:
# tests/unit/<floor>/test_<module>[_<what>].c for src/<floor>/<module>.c (core, io, net, sink,
# sink/json, sink/prom, sink/otlp, abi, trace), tests/unit/report/ and spank/ for tools/report and
# tools/spank, tests/unit/plugin/ for the whole plugin driven through its ABI table as NCCL
# would; tests/test_layers.py (layers.tests-layout) holds that rule. The headers the tests
# share (check.h, cases.h, one_op.h, ...) are in tests/unit itself.
include_directories(${CMAKE_CURRENT_LIST_DIR})
# (arguments after the labels: the test's command line)
function(ins_unit_test name source timeout labels)
  add_executable(inspector-unit-${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${source}
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-${name} PRIVATE _GNU_SOURCE
                             INSPECTOR_OTLP=$<BOOL:${INSPECTOR_OTLP}>)
  target_link_libraries(inspector-unit-${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  add_test(NAME unit_${name} COMMAND inspector-unit-${name} ${ARGN})
  set_tests_properties(unit_${name} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}")
  if("threads" IN_LIST labels)
    set_property(GLOBAL APPEND PROPERTY INS_THREADS_TARGETS inspector-unit-${name})
  endif()
endfunction()

# ins_unit_cases(<name> <timeout> <labels> [args...]): one ctest per case of the built binary
# inspector-unit-<name>, unit_<name>.<case>, each running `--case <case> args...`. The cases are
# the binary's own `--list` (cases.h list_case: a name, then the case's own labels), written
# beside the build when the binary is linked (unit_cases.cmake) and read by ctest, as CMake's
# gtest_discover_tests does: no case name is copied here, so none can be left out. A binary
# not built yet shows as one failing test, unit_<name>.NOT_BUILT. Every case may exit 77
# (skipped: cases.h CASE_SKIP).
function(ins_unit_cases name timeout labels)
  set(_list ${CMAKE_CURRENT_BINARY_DIR}/unit_${name}.cases)
  string(REPLACE ";" "|" _args "${ARGN}")
  add_custom_command(TARGET inspector-unit-${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:inspector-unit-${name}> -DOUT=${_list}
            "-DARGS=${_args}" -P ${INS_UNIT_DIR}/unit_cases.cmake
    VERBATIM)
  set(_bin $<TARGET_FILE:inspector-unit-${name}>)
  set(_quoted "")
  foreach(_a IN LISTS ARGN)
    string(APPEND _quoted " [==[${_a}]==]")
  endforeach()
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/unit_${name}_cases.cmake CONTENT "\
if(EXISTS [==[${_list}]==])
  file(STRINGS [==[${_list}]==] _ins_lines)
  foreach(_ins_l IN LISTS _ins_lines)
    if(_ins_l MATCHES \"^([A-Za-z0-9_.-]+)( ([A-Za-z0-9_,]+))?$\")
      set(_ins_case \"\${CMAKE_MATCH_1}\")
      string(REPLACE \",\" \";\" _ins_labels \"${labels};\${CMAKE_MATCH_3}\")
      add_test(unit_${name}.\${_ins_case} [==[${_bin}]==] --case \${_ins_case}${_quoted})
      set_tests_properties(unit_${name}.\${_ins_case} PROPERTIES TIMEOUT ${timeout}
                           LABELS \"\${_ins_labels}\" SKIP_RETURN_CODE 77)
    endif()
  endforeach()
else()
  add_test(unit_${name}.NOT_BUILT unit_${name}.NOT_BUILT)
endif()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
               ${CMAKE_CURRENT_BINARY_DIR}/unit_${name}_cases.cmake)
  # its cases' labels are known only once it is built: in the threads tier whatever they are
  set_property(GLOBAL APPEND PROPERTY INS_THREADS_TARGETS inspector-unit-${name})
endfunction()
set(INS_UNIT_DIR ${CMAKE_CURRENT_LIST_DIR})
# How the OTLP tests run tests/lib/otlp_receiver.py, their collector; without a python, their cases
# that need one are not listed (--no-receiver).
if(Python3_EXECUTABLE)
  set(INS_OTLP_RECEIVER_ARGS --python ${Python3_EXECUTABLE}
      --receiver ${PROJECT_SOURCE_DIR}/tests/lib/otlp_receiver.py)
else()
  set(INS_OTLP_RECEIVER_ARGS --no-receiver)
endif()

if(TARGET inspector_core)
  # formatters, names, config, ring, pool, tracker completion rules
  ins_unit_test(core core/test_core.c 120 "threads;unit")
  # the plugin's objects as the tests link them check their assert()s (no NDEBUG in a build of
  # the tests, the quick tier's included): a broken invariant aborts
  ins_unit_test(asserts_on plugin/test_asserts_on.c 60 "unit")
  # the Prometheus output: buckets, escaping, device fallback, window aggregation
  ins_unit_test(prom sink/prom/test_prom.c 60 "unit")
  # NCCL_INSPECTOR_PROM_DUMP_RANKS: per-rank and per-peer counters, their bound (the alert rules' input)
  ins_unit_test(prom_ranks sink/prom/test_prom_ranks.c 60 "unit")
  # a child forked from a process running the plugin exits at once
  ins_unit_test(fork plugin/test_fork.c 60 "threads;unit")
  # fork while the plugin's threads hold its locks: no child hangs (a hang is killed)
  ins_unit_test(fork_locks plugin/test_fork_locks.c 600 "threads;unit")
  # a forked child writes none of the parent's records, and its own to its own file
  ins_unit_test(dump_fork_records sink/test_dump_fork_records.c 300 "threads;unit")
  # the log file or its directory deleted while the job runs: a new file, one warning
  ins_unit_test(writer_deleted sink/json/test_writer_deleted.c 60 "unit")
  # the log file renamed while the job runs (logrotate): written on under its new name, no
  # batch twice, none lost, no deletion said
  ins_unit_test(writer_renamed sink/json/test_writer_renamed.c 60 "unit")
  # the log file appended to by 8 threads at once (finalizes, the dump thread): every record
  # once, whole, each thread's in order; its mutex held in the plain build too (TSan: threads)
  ins_unit_test(writer_threads sink/json/test_writer_threads.c 60 "threads;unit")
  # trace mode's file deleted while the job runs: a new file that starts with the live inits
  ins_unit_test(trace_deleted trace/test_trace_deleted.c 60 "unit;trace")
  # the dump directory (or a parent) deleted while the job runs and a link planted in its
  # place: not followed by the log, the trace file or the .prom files (one warning, counted);
  # the user's own links still are. One process per case: unit_dir_relinked.<case>
  add_executable(inspector-unit-dir_relinked ${CMAKE_CURRENT_LIST_DIR}/plugin/test_dir_relinked.c
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-dir_relinked PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-dir_relinked PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-dir_relinked PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  ins_unit_cases(dir_relinked 60 "unit")
  # the writer thread's queue with a stalled file system: depth, waits, order
  ins_unit_test(wqueue sink/json/test_wqueue.c 60 "threads;unit")
  # a finalize's lines, and its communicator's still queued, are written next, ahead of
  # other communicators' queued batches
  ins_unit_test(wqueue_now sink/json/test_wqueue_now.c 120 "threads;unit")
  # dump_stats over several dumps of one communicator: since_last_dump is per dump
  ins_unit_test(dump_stats sink/test_dump_stats.c 60 "unit")
  # time-window sampling: windows aligned to the Unix epoch, on a fake clock
  ins_unit_test(sampler core/test_sampler.c 60 "threads;unit")
  # a host that gives each communicator its own activation-mask word and frees it after
  # the finalize: the time-window sampler writes it no more (ASan, TSan: label threads)
  ins_unit_test(sampler_detach core/test_sampler_detach.c 60 "threads;unit")
  # calls NCCL never makes, refused without harm: starts and kernel events after finalize,
  # handles the plugin never gave (ASan+UBSan: each was a use after free, an overflow or a
  # misaligned access)
  ins_unit_test(adapter_misuse abi/test_adapter_misuse.c 60 "unit")
  # names that are not UTF-8: cleaning, JSON strings, label values, log messages
  ins_unit_test(utf8 core/test_utf8.c 60 "unit")
  # the GPU timer's unit (RCCL ticks or ns): snap, evidence, conversion
  ins_unit_test(timer core/test_timer.c 60 "unit")
  # whose timestamps: the judge's counts, holding back in order, the unverified
  ins_unit_test(judge core/test_judge.c 60 "unit")
  # the bounds of the ops the judge leaves out: [end of the right op before, start of the one after]
  ins_unit_test(judge_bounds core/test_judge_bounds.c 60 "unit")
  # what a message may show of text that may hold a credential (core/redact.c), and the
  # misspelling check's and the configuration's warnings, which show no value it withholds
  ins_unit_test(redact core/test_redact.c 60 "unit")
  # the OTLP sink: exponential histogram buckets, the OpenTelemetry SDK variables
  if(INSPECTOR_OTLP) # tests of the OTLP sink are registered only in a build with it
    ins_unit_test(otlp_sink sink/otlp/test_otlp_sink.c 60 "unit;otlp")
    # per rank and per peer (nccl.peer, its bound): what the alert rules compare, in OTLP
    ins_unit_test(otlp_peers sink/otlp/test_otlp_peers.c 60 "threads;unit;otlp")
  endif()
  # what a communicator holds: idle, with a backlog, drained; the process's cap; a ring
  # growing and shrinking under the dump thread (TSan: label threads)
  ins_unit_test(ring_memory core/test_ring_memory.c 120 "threads;unit")
  # no GPU runtime loaded: an init looks it up without a dlopen (no library path search)
  ins_unit_test(device_lookup sink/test_device_lookup.c 60 "unit")
  # the OTLP sink's exports in turns (every series, however many), its state after
  # shutdown, and the exporter's handle published to its thread (TSan: label threads)
  if(INSPECTOR_OTLP)
    ins_unit_test(otlp_collect sink/otlp/test_otlp_collect.c 60 "threads;unit;otlp")
    # exit_counts_undelivered runs the exporter against tests/lib/otlp_receiver.py (otlp_receiver.h)
    target_compile_definitions(inspector-unit-otlp_collect PRIVATE
                               INS_TEST_RECEIVER="${PROJECT_SOURCE_DIR}/tests/lib/otlp_receiver.py")
    if(Python3_EXECUTABLE)
      target_compile_definitions(inspector-unit-otlp_collect PRIVATE INS_TEST_PYTHON="${Python3_EXECUTABLE}")
    endif()
  endif()
  # an op's time from its channels: equal start and stop, the latest stop, stale channels
  ins_unit_test(op_timestamps core/test_op_timestamps.c 120 "unit")
  # a GPU clock that goes back (core/clock_step.h): proven, counted once, timed again; stale slots
  # never taken for a step; the proof's try-lock under two completing threads (TSan: threads)
  ins_unit_test(clock_step core/test_clock_step.c 120 "threads;unit")
  # a host that sends no Group events: every op written, one warning (core/op.c group_unknown)
  ins_unit_test(op_no_group core/test_op_no_group.c 120 "unit")
  # rings of 16 cells wrapping under the dump thread, two producers each (TSan: label threads)
  ins_unit_test(ring_stress core/test_ring_stress.c 300 "threads;unit")
  # the rings' positions at their edges: the span count past where the old bases wrapped,
  # a ring at its span's end moving to a new one, the last span, moves under load (TSan:
  # label threads). One process per case: unit_ring_spans.<case>
  add_executable(inspector-unit-ring_spans ${CMAKE_CURRENT_LIST_DIR}/core/test_ring_spans.c
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-ring_spans PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-ring_spans PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-ring_spans PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  ins_unit_cases(ring_spans 120 "unit")
  # a GPU's Prometheus counters add up over its communicators' reports
  ins_unit_test(prom_totals sink/prom/test_prom_totals.c 60 "unit")
  # rules at their bounds exactly: the timer's span, the largest values of variables
  ins_unit_test(limits plugin/test_limits.c 60 "unit")
  # the plain HTTP/1.1 client's connection: bytes after an answer (same read, or later while
  # idle) and a Transfer-Encoding other than chunked end it (src/net/ is built with OTLP only)
  if(INSPECTOR_OTLP)
    ins_unit_test(http1_conn net/test_http1_conn.c 60 "threads;unit;otlp")
  endif()
  # the OTLP transport's rules at their edges; a rejection starts the backoff afresh
  if(INSPECTOR_OTLP)
    ins_unit_test(otlp_rules sink/otlp/test_otlp_rules.c 60 "threads;unit;otlp")
  else()
    # a build without OTLP (-DINSPECTOR_OTLP=OFF): an OTLP setting gets one warning, and no sink
    ins_unit_test(no_otlp plugin/test_no_otlp.c 60 "unit")
  endif()
  # exit without finalize while records are held back (by the judge, or for the GPU timer's
  # unit under a HIP runtime: the fake one): every record is in the log after exit
  ins_unit_test(exit_held plugin/test_exit_held.c 60 "unit" $<TARGET_FILE:inspector-fake-hip>)
  add_dependencies(inspector-unit-exit_held inspector-fake-hip)
  # the log file deleted and another file made at its name: records go to a new file
  ins_unit_test(writer_replaced sink/json/test_writer_replaced.c 60 "unit")
  # what a user without NCCL_DEBUG sees: each problem they must hear of once on stderr (or as
  # NCCL's WARN where NCCL_DEBUG prints it), at most INS_NOTICE_MAX lines, nothing on a clean run
  ins_unit_test(log_notice core/test_log_notice.c 120 "unit")
  # the log's page layout pads only a line that would straddle a page
  ins_unit_test(writer_layout sink/json/test_writer_layout.c 60 "unit")
  # trace lines in time order, even for an event timed before lines already written
  ins_unit_test(trace_order trace/test_trace_order.c 60 "unit;trace")
  # fork() with a large trace backlog: the child's handlers touch none of it, the child's
  # own trace holds its lines only and replays (through the plugin and inspector-replay)
  if(TARGET inspector-replay AND TARGET rccl-profiler-inspector)
    ins_unit_test(trace_fork trace/test_trace_fork.c 120 "threads;unit;trace"
                  $<TARGET_FILE:inspector-replay> $<TARGET_FILE:rccl-profiler-inspector>)
  else()
    ins_unit_test(trace_fork trace/test_trace_fork.c 120 "threads;unit;trace")
  endif()
  # hang detection: ops in flight past NCCL_INSPECTOR_HANG_SECONDS said at once, again, and
  # resolved; idle communicators; the Prometheus and OTLP gauges; on the checks' own clock.
  # One process per case: unit_hang.<case> (TSan: label threads)
  add_executable(inspector-unit-hang ${CMAKE_CURRENT_LIST_DIR}/sink/test_hang.c
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-hang PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-hang PRIVATE _GNU_SOURCE
                             INSPECTOR_OTLP=$<BOOL:${INSPECTOR_OTLP}>)
  target_link_libraries(inspector-unit-hang PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  ins_unit_cases(hang 120 "threads;unit")
  # metadata.job_id in every line of the JSON log, from the batch system's variables, read
  # back by jansson: which variable wins, none set (no key), a hostile value (escaped, made
  # UTF-8, cut). One process per case: unit_config_job_id.<case> (TSan: label threads: the dump
  # thread reads what the init thread set)
  if(TARGET PkgConfig::JANSSON)
    add_executable(inspector-unit-config_job_id ${CMAKE_CURRENT_LIST_DIR}/core/test_config_job_id.c
                   $<TARGET_OBJECTS:inspector_core>)
    target_include_directories(inspector-unit-config_job_id PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(inspector-unit-config_job_id PRIVATE _GNU_SOURCE)
    target_link_libraries(inspector-unit-config_job_id PRIVATE PkgConfig::JANSSON Threads::Threads ${CMAKE_DL_LIBS} m)
    ins_unit_cases(config_job_id 60 "threads;unit")
  endif()
  # inits and finalizes while the dump thread drains (or a .prom file is written): none
  # waits for another communicator's drain; a finalize's records in the file, in order;
  # the registry's adds and removes O(1) (a wait that should end at once is bounded)
  ins_unit_test(comm_registry core/test_comm_registry.c 300 "threads;unit")
endif()

# The Slurm SPANK plugin's parts (tools/spank/), each built from its own source, where the plugin
# is (slurm/spank.h found); none calls Slurm. conf and tmpl are pure (one process each); dir and
# report touch files and processes, one ctest per case (unit_spank_dir.<case>, ...). Their cases
# about other users' files and the report's drop from root to the job's user need root (the CI
# container's), and exit 77, skipped, without it.
if(TARGET inspector-spank)
  foreach(_mod conf tmpl dir report)
    add_executable(inspector-unit-spank_${_mod} ${CMAKE_CURRENT_LIST_DIR}/spank/test_spank_${_mod}.c
                   ${PROJECT_SOURCE_DIR}/tools/spank/spank_${_mod}.c)
    target_include_directories(inspector-unit-spank_${_mod} PRIVATE ${PROJECT_SOURCE_DIR}/tools/spank)
    target_compile_definitions(inspector-unit-spank_${_mod} PRIVATE _GNU_SOURCE)
  endforeach()
  foreach(_mod conf tmpl)
    add_test(NAME unit_spank_${_mod} COMMAND inspector-unit-spank_${_mod})
    set_tests_properties(unit_spank_${_mod} PROPERTIES TIMEOUT 60 LABELS "unit")
  endforeach()
  ins_unit_cases(spank_dir 60 "unit")
  ins_unit_cases(spank_report 120 "unit")
endif()

# inspector-report's line parser, built from its sources (the tool's own target is a program):
# test_report_scan holds the fast scanner to the jansson reference on the fixtures and edge
# lines; bench_report_parse measures both and is no test (it prints MB/s for a file).
if(TARGET inspector-report)
  foreach(_src report/test_report_scan.c report/bench_report_parse.c)
    string(REGEX REPLACE "^report/(test_)?(.*)[.]c$" "\\2" _name ${_src})
    add_executable(inspector-unit-${_name} ${CMAKE_CURRENT_LIST_DIR}/${_src}
                   ${PROJECT_SOURCE_DIR}/tools/report/parse.c ${PROJECT_SOURCE_DIR}/tools/report/scan.c
                   ${PROJECT_SOURCE_DIR}/src/core/utf8.c)
    target_include_directories(inspector-unit-${_name} PRIVATE ${PROJECT_SOURCE_DIR}/tools/report
                               ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(inspector-unit-${_name} PRIVATE _GNU_SOURCE)
    target_link_libraries(inspector-unit-${_name} PRIVATE PkgConfig::JANSSON ZLIB::ZLIB m)
  endforeach()
  add_test(NAME unit_report_scan COMMAND inspector-unit-report_scan ${PROJECT_SOURCE_DIR}/tests/data)
  set_tests_properties(unit_report_scan PROPERTIES TIMEOUT 120 LABELS "unit")
endif()

# inspector-report's per-thread tables (tools/report/acc.c): a few probes per line whatever the
# traffic's shape (all-pairs P2P, one peer, many sizes, communicators, processes), counted, not timed
if(TARGET inspector-report)
  set(_rpt ${PROJECT_SOURCE_DIR}/tools/report)
  add_executable(inspector-unit-report_acc_probes ${CMAKE_CURRENT_LIST_DIR}/report/test_report_acc_probes.c
                 ${_rpt}/acc.c ${_rpt}/acc_merge.c ${_rpt}/parse.c ${_rpt}/scan.c ${_rpt}/intern.c ${_rpt}/qsketch.c ${_rpt}/job.c
                 ${PROJECT_SOURCE_DIR}/src/core/utf8.c)
  target_include_directories(inspector-unit-report_acc_probes PRIVATE ${_rpt} ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-report_acc_probes PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-report_acc_probes PRIVATE PkgConfig::JANSSON Threads::Threads m)
  add_test(NAME unit_report_acc_probes COMMAND inspector-unit-report_acc_probes)
  set_tests_properties(unit_report_acc_probes PROPERTIES TIMEOUT 60 LABELS "unit;report")
endif()

# inspector-report's merge (tools/report/acc_merge.c): the op sample in one order fixed by content,
# whatever the read order and the readers (what makes the report the same for any --threads)
if(TARGET inspector-report)
  set(_rpt ${PROJECT_SOURCE_DIR}/tools/report)
  add_executable(inspector-unit-report_acc_merge_order ${CMAKE_CURRENT_LIST_DIR}/report/test_report_acc_merge_order.c
                 ${_rpt}/acc.c ${_rpt}/acc_merge.c ${_rpt}/parse.c ${_rpt}/scan.c ${_rpt}/intern.c ${_rpt}/qsketch.c ${_rpt}/job.c
                 ${PROJECT_SOURCE_DIR}/src/core/utf8.c)
  target_include_directories(inspector-unit-report_acc_merge_order PRIVATE ${_rpt} ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-report_acc_merge_order PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-report_acc_merge_order PRIVATE PkgConfig::JANSSON Threads::Threads m)
  add_test(NAME unit_report_acc_merge_order COMMAND inspector-unit-report_acc_merge_order)
  set_tests_properties(unit_report_acc_merge_order PROPERTIES TIMEOUT 60 LABELS "unit;report")
endif()

# inspector-report's plain-file reader past 4 GiB (tools/report/input.c): chunks read at offsets
# beyond 2^32 of a reservation whose untouched pages fault, lines of RPT_LINE_MAX rejected unread
if(TARGET inspector-report)
  set(_rpt ${PROJECT_SOURCE_DIR}/tools/report)
  add_executable(inspector-unit-report_input_big ${CMAKE_CURRENT_LIST_DIR}/report/test_report_input_big.c
                 ${_rpt}/input.c ${_rpt}/acc.c ${_rpt}/acc_merge.c ${_rpt}/parse.c ${_rpt}/scan.c ${_rpt}/intern.c ${_rpt}/qsketch.c
                 ${_rpt}/job.c ${PROJECT_SOURCE_DIR}/src/core/utf8.c)
  target_include_directories(inspector-unit-report_input_big PRIVATE ${_rpt} ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-report_input_big PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-report_input_big PRIVATE PkgConfig::JANSSON ZLIB::ZLIB Threads::Threads m)
  ins_unit_cases(report_input_big 60 "unit;report")
endif()

# inspector-report's HTML page and Perfetto trace (tools/report/out_html.c, out_trace.c) written
# from a job built by hand: the trace read back by a strict JSON parser, log strings escaped
if(TARGET inspector-report)
  set(_rpt ${PROJECT_SOURCE_DIR}/tools/report)
  add_executable(inspector-unit-report_out_html ${CMAKE_CURRENT_LIST_DIR}/report/test_report_out_html.c
                 ${_rpt}/out_html.c ${_rpt}/out_trace.c ${_rpt}/out_text.c ${_rpt}/qsketch.c ${_rpt}/intern.c
                 ${PROJECT_SOURCE_DIR}/src/core/utf8.c)
  target_sources(inspector-unit-report_out_html PRIVATE ${_rpt}/outfile.c) # the writers' safe file creation
  target_sources(inspector-unit-report_out_html PRIVATE ${_rpt}/html_svg.c ${_rpt}/html_charts.c ${_rpt}/html_style.c
                 ${_rpt}/html_findings.c) # out_html.c's kit, charts, style, findings
  target_include_directories(inspector-unit-report_out_html PRIVATE ${_rpt} ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-report_out_html PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-report_out_html PRIVATE Threads::Threads m)
  add_test(NAME unit_report_out_html COMMAND inspector-unit-report_out_html)
  set_tests_properties(unit_report_out_html PROPERTIES TIMEOUT 60 LABELS "unit;report")
endif()

# The OTLP request encoders (src/sink/otlp/otlp_pb.c): bytes worked out by hand; bodies decoded
# and re-encoded by protoc with the official schema (tests/data/otlp-proto, the first
# argument) and read back by Python's json (the second). Exit 77, skipped, without protoc
# (Debian: protobuf-compiler) or python3. Linked like ins_unit_test, which takes no arguments.
if(TARGET inspector_core AND INSPECTOR_OTLP)
  add_executable(inspector-unit-otlp_pb ${CMAKE_CURRENT_LIST_DIR}/sink/otlp/test_otlp_pb.c
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-otlp_pb PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-otlp_pb PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-otlp_pb PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  set(_ins_py python3)
  if(Python3_EXECUTABLE)
    set(_ins_py ${Python3_EXECUTABLE})
  endif()
  add_test(NAME unit_otlp_pb COMMAND inspector-unit-otlp_pb
           ${PROJECT_SOURCE_DIR}/tests/data/otlp-proto ${_ins_py})
  set_tests_properties(unit_otlp_pb PROPERTIES TIMEOUT 60 LABELS "unit" SKIP_RETURN_CODE 77)
endif()

# The OTLP exporter and its transport, one test per module: sink/otlp/test_otlp_export.c (the
# exporter), test_otlp_config.c, test_otlp_rules_spec.c; net/test_url.c, test_httpdate.c,
# test_http1_resp.c, test_http1_deadline.c (http1.c's deadline), test_http.c, test_curl.c,
# test_resolve.c. One ctest per case, unit_<test>.<case> (unit_url.url_parse, ...); their main
# is otlp_cases.h's, whose `--list` names the cases. A case that runs a thread (the exporter's,
# or a server of the test's own) carries "threads"; one that needs tests/lib/otlp_receiver.py on
# 127.0.0.1 is listed only with a python (INS_OTLP_RECEIVER_ARGS, given to each of these tests).
# One ins_unit_cases line each, written out: tests/test_layers.py (layers.registered) reads them.
if(TARGET inspector_core AND INSPECTOR_OTLP)
  foreach(_src sink/otlp/test_otlp_export.c sink/otlp/test_otlp_config.c sink/otlp/test_otlp_rules_spec.c
          net/test_url.c net/test_httpdate.c net/test_http1_resp.c net/test_http1_deadline.c
          net/test_http.c net/test_curl.c net/test_resolve.c)
    string(REGEX REPLACE "^.*/test_(.*)[.]c$" "\\1" _name ${_src})
    add_executable(inspector-unit-${_name} ${CMAKE_CURRENT_LIST_DIR}/${_src} $<TARGET_OBJECTS:inspector_core>)
    target_include_directories(inspector-unit-${_name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(inspector-unit-${_name} PRIVATE _GNU_SOURCE)
    target_link_libraries(inspector-unit-${_name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  endforeach()
  set(_otlp_scale 1)
  if(INS_TEST_TIMEOUT_SCALE)
    set(_otlp_scale ${INS_TEST_TIMEOUT_SCALE})
  endif()
  math(EXPR _otlp_timeout "120 * ${_otlp_scale}")
  ins_unit_cases(otlp_export ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(otlp_config ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(otlp_rules_spec ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(url ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(httpdate ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(http1_resp ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(http1_deadline ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(http ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(curl ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
  ins_unit_cases(resolve ${_otlp_timeout} "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
endif()

# No credential printed: the plugin run whole through its ABI (init, an op, finalize, exit) with a
# secret in an endpoint's userinfo, path or host, in headers a collector echoes, in names and values
# of variables; what it printed and wrote searched for it (plugin/test_otlp_secrets.c). One ctest per case,
# unit_otlp_secrets.<case>; the cases with a collector need python3 (tests/lib/otlp_receiver.py).
if(TARGET inspector_core AND INSPECTOR_OTLP)
  add_executable(inspector-unit-otlp_secrets ${CMAKE_CURRENT_LIST_DIR}/plugin/test_otlp_secrets.c
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-otlp_secrets PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-otlp_secrets PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-otlp_secrets PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  ins_unit_cases(otlp_secrets 120 "unit;otlp" ${INS_OTLP_RECEIVER_ARGS})
endif()

# A plugin loaded and unloaded again and again with the JSON log and OTLP on (NCCL unloads
# it with its last communicator): no memory, descriptor, mapping or exit handler left behind
# per cycle. Each cycle replays a fixture through the replay driver's engine (tools/replay,
# less its main and command line); ASan builds add LeakSanitizer's exact check at exit.
if(TARGET inspector-replay AND TARGET rccl-profiler-inspector)
  file(GLOB _reload_rp ${PROJECT_SOURCE_DIR}/tools/replay/*.c)
  list(REMOVE_ITEM _reload_rp ${PROJECT_SOURCE_DIR}/tools/replay/main.c ${PROJECT_SOURCE_DIR}/tools/replay/cli.c)
  add_executable(inspector-unit-plugin_reload ${CMAKE_CURRENT_LIST_DIR}/plugin/test_plugin_reload.c ${_reload_rp})
  target_include_directories(inspector-unit-plugin_reload PRIVATE ${PROJECT_SOURCE_DIR}/tools/replay
                             ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-plugin_reload PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-plugin_reload PRIVATE ZLIB::ZLIB PkgConfig::JANSSON Threads::Threads
                        ${CMAKE_DL_LIBS} m)
  add_dependencies(inspector-unit-plugin_reload rccl-profiler-inspector)
  add_test(NAME unit_plugin_reload
           COMMAND inspector-unit-plugin_reload $<TARGET_FILE:rccl-profiler-inspector>
                   ${PROJECT_SOURCE_DIR}/tests/data/nccl-2.28.9-h200x2/torch-1735.jsonl.gz 40)
  set_property(GLOBAL APPEND PROPERTY INS_THREADS_TARGETS inspector-unit-plugin_reload)
  set_tests_properties(unit_plugin_reload PROPERTIES TIMEOUT 300 LABELS "threads;unit;otlp")
endif()

# The plugin loaded and unloaded again and again in trace mode, with callbacks from threads that
# live through every cycle: each cycle's trace whole, and nothing left behind (malloc's bytes, the
# trace file's descriptor; LeakSanitizer's check at exit in ASan builds)
if(TARGET rccl-profiler-inspector)
  add_executable(inspector-unit-trace_reload ${CMAKE_CURRENT_LIST_DIR}/trace/test_trace_reload.c)
  target_include_directories(inspector-unit-trace_reload PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-trace_reload PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-trace_reload PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  add_dependencies(inspector-unit-trace_reload rccl-profiler-inspector)
  add_test(NAME unit_trace_reload
           COMMAND inspector-unit-trace_reload $<TARGET_FILE:rccl-profiler-inspector> 20)
  set_property(GLOBAL APPEND PROPERTY INS_THREADS_TARGETS inspector-unit-trace_reload)
  set_tests_properties(unit_trace_reload PROPERTIES TIMEOUT 120 LABELS "threads;unit;trace")
endif()

# Loading an optional library at run time (src/io/dynlib.c), and the reasons libcurl's and zlib's
# users give when the library lacks their functions: one ctest per case, unit_dynlib.<case>
if(TARGET inspector_core)
  add_executable(inspector-unit-dynlib ${CMAKE_CURRENT_LIST_DIR}/io/test_dynlib.c $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-dynlib PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-dynlib PRIVATE _GNU_SOURCE INSPECTOR_OTLP=$<BOOL:${INSPECTOR_OTLP}>)
  target_link_libraries(inspector-unit-dynlib PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  ins_unit_cases(dynlib 60 "unit")
  # INS_DYNLIB_SYM refuses a slot of another type at compile time: the right type compiles
  # (.right), the wrong one does not (.wrong, WILL_FAIL), with the build's compiler
  foreach(_v right wrong)
    set(_def "")
    if(_v STREQUAL "wrong")
      set(_def -DWRONG_TYPE)
    endif()
    add_test(NAME unit_dynlib.typecheck_${_v}
             COMMAND ${CMAKE_C_COMPILER} -std=c11 -Wall -Wextra -Werror -fsyntax-only ${_def}
                     -I${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_LIST_DIR}/dynlib_typecheck.c)
    set_tests_properties(unit_dynlib.typecheck_${_v} PROPERTIES TIMEOUT 60 LABELS "unit")
  endforeach()
  set_tests_properties(unit_dynlib.typecheck_wrong PROPERTIES WILL_FAIL TRUE)
endif()
