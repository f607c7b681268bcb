# Installing zapgram as a library (included from the top-level CMakeLists.txt).
#
# `cmake --install build [--prefix P]` puts down
#   include/zapgram/*.h                      the public headers, listed one by one
#   lib/libzapgram.a                         the static library
#   lib/libzapgram.so.X.Y.Z (+ .so.X, .so)   the shared library, SONAME libzapgram.so.X
#   bin/zapgram                              the command-line tool
#   lib/cmake/zapgram/                       the CMake package: zapgramConfig.cmake,
#                                            its version file, the exported targets
#                                            zapgram::zapgram (shared) and
#                                            zapgram::zapgram_static
#   lib/pkgconfig/zapgram.pc                 for pkg-config (--static for the .a)
# Both the package and zapgram.pc locate the prefix from where they lie, so an
# installed tree can be moved (the consumer tests install into a temporary
# folder). The public headers include abseil, so abseil is a public
# dependency; ICU, the other abseil libraries and threads are private ones,
# named only for linking the static library; nlohmann-json (header-only) is
# not needed by consumers at all.
#
# Tests: scripts/test_install.sh installs into a temporary prefix and builds
# and runs tests/consumers/c (pkg-config) and tests/consumers/cpp
# (find_package) against it; scripts/check_exports.sh checks the shared
# library's exported symbols.
include(CMakePackageConfigHelpers)

set(ZAPGRAM_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/zapgram)

install(FILES
  include/zapgram/export.h
  include/zapgram/grammar.h
  include/zapgram/limits.h
  include/zapgram/matcher.h
  include/zapgram/zapgram.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/zapgram)

set(zapgram_library_targets zapgram_static)
if(ZAPGRAM_BUILD_SHARED)
  list(APPEND zapgram_library_targets zapgram_shared)
endif()
install(TARGETS ${zapgram_library_targets} EXPORT zapgramTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS zapgram RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT zapgramTargets NAMESPACE zapgram:: DESTINATION ${ZAPGRAM_CMAKE_PACKAGE_DIR})
configure_package_config_file(cmake/zapgramConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/zapgramConfig.cmake
  INSTALL_DESTINATION ${ZAPGRAM_CMAKE_PACKAGE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/zapgramConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/zapgramConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/zapgramConfigVersion.cmake
  DESTINATION ${ZAPGRAM_CMAKE_PACKAGE_DIR})

# From lib/pkgconfig back to the prefix ("../.." or "../../.." for a
# multiarch libdir), so zapgram.pc needs no absolute path.
file(RELATIVE_PATH ZAPGRAM_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" ZAPGRAM_PC_TO_PREFIX "${ZAPGRAM_PC_TO_PREFIX}")
configure_file(cmake/zapgram.pc.in ${CMAKE_CURRENT_BINARY_DIR}/zapgram.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/zapgram.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
