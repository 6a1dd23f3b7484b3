# The git revision that the plugin records as metadata.git_rev and that every tool's --version
# prints (INSPECTOR_GIT_REV), from the source tree in INS_GIT_REV_SOURCE_DIR.
#
# Only the source tree's own repository counts: git is asked only when the source directory is
# the top of its git work tree. A source tarball unpacked inside some other checkout (a
# vendored copy, a packaging repository) would otherwise record that checkout's commit as its
# own. Else a file GIT_REV at the top of the sources (its first line, for whoever makes a
# tarball from a checkout) gives it, else it is "unknown".
#
# Included by CMakeLists.txt (sets INSPECTOR_GIT_REV), or run as a script, which prints it:
#   cmake -DINS_GIT_REV_SOURCE_DIR=DIR -P cmake/git_rev.cmake        (tools/demo.sh --version)
if(NOT INS_GIT_REV_SOURCE_DIR)
  set(INS_GIT_REV_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/..)
endif()
file(REAL_PATH "${INS_GIT_REV_SOURCE_DIR}" _ins_src)
set(INSPECTOR_GIT_REV "unknown")
find_program(INS_GIT_EXECUTABLE NAMES git)
set(_ins_top "")
if(INS_GIT_EXECUTABLE)
  execute_process(COMMAND ${INS_GIT_EXECUTABLE} -C "${_ins_src}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE _ins_top OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _ins_rc)
  if(_ins_rc EQUAL 0 AND _ins_top)
    file(REAL_PATH "${_ins_top}" _ins_top)
  else()
    set(_ins_top "")
  endif()
endif()
if(_ins_top STREQUAL _ins_src)
  execute_process(COMMAND ${INS_GIT_EXECUTABLE} -C "${_ins_src}" describe --always --dirty --abbrev=9
                  OUTPUT_VARIABLE _ins_rev OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _ins_rc)
  if(_ins_rc EQUAL 0 AND _ins_rev)
    set(INSPECTOR_GIT_REV "${_ins_rev}")
  endif()
elseif(EXISTS "${_ins_src}/GIT_REV")
  file(STRINGS "${_ins_src}/GIT_REV" _ins_rev LIMIT_COUNT 1 REGEX "^[0-9A-Za-z._+-]+$")
  if(_ins_rev)
    set(INSPECTOR_GIT_REV "${_ins_rev}")
  endif()
endif()
if(CMAKE_SCRIPT_MODE_FILE)
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${INSPECTOR_GIT_REV}")
endif()
