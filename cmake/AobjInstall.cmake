# Installation and package export (issue 9; docs/api-stability.md says why it looks like this).
#
# The layer libraries stay static. All of them are installed and exported in one export set,
# each with its link interface, so `aobj::client` and `aobj::server` pull exactly the layers and
# system libraries they need; consumers get them with find_package(aobj) (aobjConfig.cmake) or
# pkg-config (aobj-client.pc, aobj-server.pc). Only include/aobj/ is installed as API; the
# store test kit is installed as include/aobj/testing/store_test_kit.h with the two wire headers
# it uses, behind the separate target aobj::store_test_kit.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(AOBJ_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/aobj)
set(_aobj_libs aobj_proto aobj_proto_grpc aobj_wire aobj_transport aobj_control aobj_session aobj_exec
    aobj_store aobj_store_rados aobj_client aobj_server)
foreach(lib ${_aobj_libs})
  string(REGEX REPLACE "^aobj_" "" _export_name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${_export_name})
endforeach()
add_library(aobj::client ALIAS aobj_client)
add_library(aobj::server ALIAS aobj_server)

# The store conformance kit (header-only GoogleTest; tests/store/store_test_kit.h).
add_library(aobj_store_test_kit INTERFACE)
set_target_properties(aobj_store_test_kit PROPERTIES EXPORT_NAME store_test_kit)
target_include_directories(aobj_store_test_kit INTERFACE
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/tests/store>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/aobj/testing>)
target_link_libraries(aobj_store_test_kit INTERFACE aobj_wire)

install(TARGETS ${_aobj_libs} aobj_store_test_kit
        EXPORT aobjTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/aobj
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/tests/store/store_test_kit.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aobj/testing)
# Private to the kit: it computes MD5 and CRC32C with the wire layer's helpers.
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/src/wire/checksum.h
              ${CMAKE_CURRENT_SOURCE_DIR}/src/wire/crypto.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aobj/testing/wire)
install(TARGETS aobj-server aobj aobj-data-worker RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# aobj(1), written by the CLI itself from its --help text (`aobj man`), so the two never differ.
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/aobj.1
                   COMMAND aobj man > ${CMAKE_CURRENT_BINARY_DIR}/aobj.1
                   DEPENDS aobj VERBATIM)
add_custom_target(aobj_man ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/aobj.1)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/aobj.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

install(EXPORT aobjTargets NAMESPACE aobj:: DESTINATION ${AOBJ_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/aobjConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/aobjConfig.cmake INSTALL_DESTINATION ${AOBJ_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API (docs/api-stability.md).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/aobjConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/aobjConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/aobjConfigVersion.cmake
        DESTINATION ${AOBJ_INSTALL_CMAKEDIR})

# pkg-config: the static archives in dependency order, then the system libraries.
set(AOBJ_PC_ABSL "absl_status absl_statusor absl_strings absl_str_format absl_span absl_synchronization absl_time absl_flat_hash_map absl_flat_hash_set")
file(RELATIVE_PATH AOBJ_PC_RELPREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
foreach(pc client server)
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/aobj-${pc}.pc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/aobj-${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/aobj-${pc}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/AobjDocs.cmake)
