# `docs`: the API reference from include/aobj/ with Doxygen (Debian package doxygen), as HTML
# in <build>/docs/html. Not part of `all`; not checked in.
find_program(DOXYGEN_EXECUTABLE doxygen)
set(AOBJ_DOCS_OUT ${CMAKE_CURRENT_BINARY_DIR}/docs)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/docs/Doxyfile.in ${AOBJ_DOCS_OUT}/Doxyfile @ONLY)
if(DOXYGEN_EXECUTABLE)
  add_custom_target(docs
    COMMAND ${DOXYGEN_EXECUTABLE} ${AOBJ_DOCS_OUT}/Doxyfile
    COMMENT "API reference -> ${AOBJ_DOCS_OUT}/html/index.html" VERBATIM)
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo "docs: install doxygen (scripts/install-deps.sh)"
    COMMAND ${CMAKE_COMMAND} -E false VERBATIM)
endif()
