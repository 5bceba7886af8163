# The installable library and its CMake package (docs/api.md, "Installing and linking").
#
#   prism_shared → libprism.so (exported as prism::prism)
#   prism_static → libprism.a  (exported as prism::prism_static)
#
# Both are made from the objects of the module libraries (prism_base … prism_pipeline, listed by
# prism_add_library in src/CMakeLists.txt; the CLI is not part of them): the modules are compiled
# once, position-independent, and the per-module targets prism::<module> stay what the tests link.
#
#   cmake --install build --prefix /opt/prism
#   # consumer: find_package(prism CONFIG REQUIRED)  target_link_libraries(app PRIVATE prism::prism)
include(CMakePackageConfigHelpers)

get_property(_prism_modules GLOBAL PROPERTY PRISM_MODULE_TARGETS)
set(_prism_objects)
set(_prism_external)  # what the modules link outside prism (absl, z3, Boost, nvrtc, dl, ...)
foreach(_t IN LISTS _prism_modules)
  list(APPEND _prism_objects $<TARGET_OBJECTS:${_t}>)
  get_target_property(_libs ${_t} LINK_LIBRARIES)
  foreach(_l IN LISTS _libs)
    if(_l AND NOT _l MATCHES "^prism(::|_)")
      list(APPEND _prism_external ${_l})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES _prism_external)

# What the public headers need from their users (absl::Status, absl::StatusOr, absl::Span).
set(_prism_public_deps absl::status absl::statusor absl::strings absl::span)

# Under the sanitizers nothing links the bundles (no install test, no Python module there):
# they are built only on request, which saves two large links on CI.
set(_prism_bundle_all)
if(PRISM_SANITIZE OR PRISM_FUZZ)
  set(_prism_bundle_all EXCLUDE_FROM_ALL)
endif()
add_library(prism_shared SHARED ${_prism_bundle_all} ${_prism_objects})
add_library(prism_static STATIC ${_prism_bundle_all} ${_prism_objects})
foreach(_t prism_shared prism_static)
  target_include_directories(${_t} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                          $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${_t} PUBLIC ${_prism_public_deps} PRIVATE ${_prism_external})
  target_compile_features(${_t} INTERFACE cxx_std_20)
  set_target_properties(${_t} PROPERTIES OUTPUT_NAME prism
                        ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
                        LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
endforeach()
set_target_properties(prism_shared PROPERTIES EXPORT_NAME prism VERSION ${PROJECT_VERSION}
                      SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                      # keep e.g. /usr/local/cuda/lib64 (libnvrtc) in the installed RPATH
                      INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(prism_static PROPERTIES EXPORT_NAME prism_static)
add_library(prism::prism ALIAS prism_shared)
add_library(prism::prism_static ALIAS prism_static)

if(NOT PRISM_INSTALL)
  return()
endif()

set(PRISM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/prism)
set(PRISM_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/prism)

install(TARGETS prism_shared EXPORT prismTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT prism)
install(TARGETS prism_static EXPORT prismStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT prism)
# The command: like libprism.so it keeps the CUDA library directory (libnvrtc) in its RPATH.
set_target_properties(prism PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS prism RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT prism)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/prism DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT prism)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/smt_theories ${PROJECT_SOURCE_DIR}/kernels
        DESTINATION ${PRISM_INSTALL_DATADIR} COMPONENT prism)
install(EXPORT prismTargets NAMESPACE prism:: DESTINATION ${PRISM_INSTALL_CMAKEDIR}
        COMPONENT prism)
install(EXPORT prismStaticTargets NAMESPACE prism:: DESTINATION ${PRISM_INSTALL_CMAKEDIR}
        COMPONENT prism)

# The imported targets prism::prism_static's link interface names (aliases resolved, as the
# export writes them): the package config checks for each before defining the target.
set(PRISM_CONFIG_STATIC_TARGETS)
foreach(_l IN LISTS _prism_external)
  if(TARGET ${_l})
    get_target_property(_real ${_l} ALIASED_TARGET)
    if(_real)
      set(_l ${_real})
    endif()
    list(APPEND PRISM_CONFIG_STATIC_TARGETS ${_l})
  endif()
endforeach()
# libnvrtc as linked here (a full path; the static library's users link it too).
set(PRISM_CONFIG_NVRTC "")
if(PRISM_WITH_CUDA)
  get_target_property(PRISM_CONFIG_NVRTC CUDA::nvrtc IMPORTED_LOCATION)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/prismConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/prismConfig.cmake
  INSTALL_DESTINATION ${PRISM_INSTALL_CMAKEDIR}
  PATH_VARS PRISM_INSTALL_DATADIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/prismConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/prismConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/prismConfigVersion.cmake
        DESTINATION ${PRISM_INSTALL_CMAKEDIR} COMPONENT prism)
