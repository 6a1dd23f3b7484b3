# C unit tests of the plugin's internals (included from tests/CMakeLists.txt).
if(TARGET inspector_core)
  add_executable(inspector-unit-tests ${CMAKE_CURRENT_LIST_DIR}/test_core.c $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-tests PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-tests PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-tests PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  add_test(NAME unit_core COMMAND inspector-unit-tests)
  set_tests_properties(unit_core PROPERTIES TIMEOUT 120 LABELS "threads;unit")
endif()

# The Prometheus output: buckets, escaping, device fallback, window aggregation.
if(TARGET inspector_core)
  add_executable(inspector-unit-prom ${CMAKE_CURRENT_LIST_DIR}/test_prom.c $<TARGET_OBJECTS:inspector_core>)
  target_include_directories(inspector-unit-prom PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(inspector-unit-prom PRIVATE _GNU_SOURCE)
  target_link_libraries(inspector-unit-prom PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
  add_test(NAME unit_prom COMMAND inspector-unit-prom)
  set_tests_properties(unit_prom PROPERTIES TIMEOUT 60 LABELS "unit")
endif()
