# Install-time script (CMakeLists.txt runs it after installing the docs): the relative links of
# the installed Markdown files, rewritten for the installed layout.
#
# In the sources README.md links examples/ and grafana/README.md, and docs/ link
# ../tests/data/README.md; installed, README.md is in share/doc/nccl-inspector/, the examples
# and the dashboard in share/nccl-inspector/ and tests/data/README.md is
# share/doc/nccl-inspector/docs/trace-format.md, so those links would point at nothing. Each
# link is resolved in the source tree, the file it names is looked up in INS_DOC_MAP, and the
# link is made relative to where the linking file is installed. A link to a file that is not
# installed is left as it is (tests/test_package.py checks that every relative link of the
# installed docs resolves). Idempotent: read again, a rewritten link resolves outside the
# source tree (left alone) or to where it already points, so installing twice changes nothing.
#
# In: INS_DOC_MAP, a list of pairs: a path of the source tree (a file, or a folder and all it
# holds) and where it is installed, relative to the prefix; CMAKE_INSTALL_PREFIX and DESTDIR,
# as cmake --install and cpack set them.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20) # an install script runs with no policy set (IN_LIST needs CMP0057)
set(_root "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")

# The installed path (relative to the prefix) of a path of the source tree, or "".
function(_ins_installed src out)
  set(_m ${INS_DOC_MAP})
  set(${out} "" PARENT_SCOPE)
  while(_m)
    list(POP_FRONT _m _s _d)
    if(src STREQUAL _s)
      set(${out} "${_d}" PARENT_SCOPE)
      return()
    endif()
    string(LENGTH "${_s}/" _n)
    string(SUBSTRING "${src}" 0 ${_n} _head)
    if(_head STREQUAL "${_s}/")
      string(SUBSTRING "${src}" ${_n} -1 _tail)
      set(${out} "${_d}/${_tail}" PARENT_SCOPE)
      return()
    endif()
  endwhile()
endfunction()

# Rewrites the links of one installed file: src, its path in the sources; dst, installed.
function(_ins_fix_links src dst)
  set(_file "${_root}/${dst}")
  if(NOT EXISTS "${_file}")
    return()
  endif()
  file(READ "${_file}" _text)
  set(_new "${_text}")
  get_filename_component(_src_dir "${src}" DIRECTORY)
  get_filename_component(_dst_dir "${dst}" DIRECTORY)
  # the link targets: "](TARGET)" found as ">(TARGET)" (a square bracket in a CMake list element
  # keeps the list from splitting)
  string(REPLACE "[" "<" _flat "${_text}")
  string(REPLACE "]" ">" _flat "${_flat}")
  string(REGEX MATCHALL ">\\([^)<> ]+\\)" _links "${_flat}")
  list(REMOVE_DUPLICATES _links)
  foreach(_l IN LISTS _links)
    string(REGEX REPLACE "^>\\((.*)\\)$" "\\1" _t "${_l}")
    set(_l "](${_t})")
    if(_t MATCHES "^[A-Za-z][A-Za-z0-9+.-]*:" OR _t MATCHES "^[#/]")
      continue() # a URL, an anchor of this page, an absolute path
    endif()
    string(REGEX MATCH "#.*$" _frag "${_t}")
    string(REGEX REPLACE "#.*$" "" _path "${_t}")
    set(_slash "")
    if(_path MATCHES "/$")
      set(_slash "/")
    endif()
    if(_src_dir)
      set(_target "${_src_dir}/${_path}")
    else()
      set(_target "${_path}")
    endif()
    cmake_path(NORMAL_PATH _target)
    string(REGEX REPLACE "/$" "" _target "${_target}")
    if(_target MATCHES "^\\.\\.(/|$)")
      continue() # outside the source tree: already rewritten
    endif()
    _ins_installed("${_target}" _inst)
    if(NOT _inst)
      continue()
    endif()
    file(RELATIVE_PATH _rel "/r/${_dst_dir}" "/r/${_inst}")
    if(NOT "${_rel}${_slash}" STREQUAL _path)
      string(REPLACE "${_l}" "](${_rel}${_slash}${_frag})" _new "${_new}")
    endif()
  endforeach()
  if(NOT _new STREQUAL _text)
    message(STATUS "Links rewritten for the installed layout: ${_file}")
    file(WRITE "${_file}" "${_new}")
  endif()
endfunction()

# Files first, then folders, less the files installed into them under another name (which
# would otherwise be read as a file of the folder's source).
set(_m ${INS_DOC_MAP})
set(_file_dsts "")
while(_m)
  list(POP_FRONT _m _s _d)
  if(_s MATCHES "\\.md$")
    _ins_fix_links("${_s}" "${_d}")
    list(APPEND _file_dsts "${_d}")
  endif()
endwhile()
set(_m ${INS_DOC_MAP})
while(_m)
  list(POP_FRONT _m _s _d)
  if(NOT _s MATCHES "\\.md$" AND IS_DIRECTORY "${_root}/${_d}")
    file(GLOB_RECURSE _mds RELATIVE "${_root}/${_d}" "${_root}/${_d}/*.md")
    foreach(_f IN LISTS _mds)
      if(NOT "${_d}/${_f}" IN_LIST _file_dsts)
        _ins_fix_links("${_s}/${_f}" "${_d}/${_f}")
      endif()
    endforeach()
  endif()
endwhile()
cmake_policy(POP)
