# C unit tests of the plugin's internals (included from tests/CMakeLists.txt), each linked
# against the plugin's objects.
function(ins_unit_test name source timeout labels)
  add_executable(inspector-unit-${name} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${source}
                 $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-${name} PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  add_test(NAME unit_${name} COMMAND inspector-unit-${name})
  set_tests_properties(unit_${name} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}")
endfunction()

if(TARGET inspector_core)
  # formatters, names, config, ring, pool, tracker completion rules
  ins_unit_test(core test_core.c 120 "threads;unit")
  # the Prometheus output: buckets, escaping, device fallback, window aggregation
  ins_unit_test(prom test_prom.c 60 "unit")
  # a child forked from a process running the plugin exits at once
  ins_unit_test(fork test_fork.c 60 "threads;unit")
  # the writer thread's queue with a stalled file system: depth, waits, order
  ins_unit_test(wqueue test_wqueue.c 60 "threads;unit")
  # dump_stats over several dumps of one communicator: since_last_dump is per dump
  ins_unit_test(dump_stats test_dump_stats.c 60 "unit")
  # time-window sampling: windows aligned to the Unix epoch, on a fake clock
  ins_unit_test(sampler test_sampler.c 60 "threads;unit")
  # names that are not UTF-8: cleaning, JSON strings, label values, log messages
  ins_unit_test(utf8 test_utf8.c 60 "unit")
  # the GPU timer's unit (RCCL ticks or ns): snap, evidence, conversion
  ins_unit_test(timer test_timer.c 60 "unit")
endif()
