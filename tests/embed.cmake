# Embedding checks (issue 9), included from tests/CMakeLists.txt.

# The server's configuration file parser (tools/config_file.cc).
add_executable(tools_tests ${CMAKE_CURRENT_SOURCE_DIR}/tools/config_file_test.cc
                           ${CMAKE_CURRENT_SOURCE_DIR}/tools/tool_util_test.cc
                           ${CMAKE_CURRENT_SOURCE_DIR}/tools/cli_select_test.cc)
target_include_directories(tools_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools)
target_link_libraries(tools_tests PRIVATE aobj_tool_util GTest::gtest GTest::gtest_main)
gtest_discover_tests(tools_tests DISCOVERY_TIMEOUT 60)
# The CLI's retry policy, with the client it reopens sessions of.
add_executable(cli_retry_tests ${CMAKE_CURRENT_SOURCE_DIR}/tools/cli_retry_test.cc
                               ${PROJECT_SOURCE_DIR}/tools/cli_retry.cc)
target_include_directories(cli_retry_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools)
target_link_libraries(cli_retry_tests PRIVATE aobj_client GTest::gtest GTest::gtest_main)
gtest_discover_tests(cli_retry_tests DISCOVERY_TIMEOUT 60)

# Every public header compiles on its own, with only include/ and absl on the include path (so a
# header that reaches into src/ or the generated protobuf headers fails here). One generated .cc
# per header, each including it twice (include guard checked too). Built by the ctest, not by
# `all`, so a broken header fails a test rather than every build.
file(GLOB _aobj_public_headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/include
     ${PROJECT_SOURCE_DIR}/include/aobj/*.h)
set(_srcs "")
foreach(h ${_aobj_public_headers})
  string(MAKE_C_IDENTIFIER ${h} id)
  set(src ${CMAKE_CURRENT_BINARY_DIR}/header_check/${id}.cc)
  file(GENERATE OUTPUT ${src} CONTENT "#include \"${h}\"\n#include \"${h}\"\n")
  list(APPEND _srcs ${src})
endforeach()
add_library(aobj_header_check OBJECT EXCLUDE_FROM_ALL ${_srcs})
target_include_directories(aobj_header_check PRIVATE ${PROJECT_SOURCE_DIR}/include)
foreach(lib ${AOBJ_ABSL})
  target_include_directories(aobj_header_check PRIVATE
                             $<TARGET_PROPERTY:${lib},INTERFACE_INCLUDE_DIRECTORIES>)
endforeach()
target_compile_options(aobj_header_check PRIVATE -Werror)
add_test(NAME public_headers_self_contained
         COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target aobj_header_check)

# cmake --install into a temporary prefix, then examples/embed-client and examples/embed-server
# built against it with plain cmake (find_package) and pkg-config, the store test kit run
# against the example's own store, and embed-client run against embed-server on 127.0.0.1.
add_test(NAME embed_examples
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/embed_test.sh ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/embed_examples)
set_tests_properties(embed_examples PROPERTIES TIMEOUT 900
                     ENVIRONMENT "UCX_NET_DEVICES=lo;UCX_WARN_UNUSED_ENV_VARS=n")
