# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS in CMakeLists.txt): the archive's inspector.pc
# made relocatable again.
#
# Installed, inspector.pc names its absolute prefix (pkg-config --variable=libdir prints
# /usr/lib for the .deb, not /usr/lib/pkgconfig/../../lib). An archive (.tar.gz) is staged with
# the staging folder as its install prefix and unpacked anywhere: there the prefix is
# ${pcfiledir}/../.., so that pkg-config names the unpacked plugin wherever it lies.
file(GLOB_RECURSE _pcs "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/pkgconfig/inspector.pc")
foreach(_pc IN LISTS _pcs)
  file(READ "${_pc}" _text)
  set(_staged "prefix=${CPACK_TEMPORARY_INSTALL_DIRECTORY}\n")
  string(FIND "${_text}" "${_staged}" _at)
  if(_at GREATER -1)
    string(REPLACE "${_staged}" "prefix=\${pcfiledir}/../..\n" _text "${_text}")
    file(WRITE "${_pc}" "${_text}")
  endif()
endforeach()
