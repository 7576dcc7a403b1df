# What `cmake --install` puts under the prefix: the tools, libVramOpt and the
# runtime libraries the JIT and the GPU programs load, the headers (with the
# generated .inc files), and the CMake package
# (find_package(VramOpt CONFIG) -> VramOpt::VramOpt). docs/using.md.
# Libraries from outside the build (libMLIR, HiGHS from its Python wheel)
# stay where they are: the installed binaries' RPATH names their
# directories.
include(CMakePackageConfigHelpers)

install(TARGETS vram-opt vram-run vram-translate
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS VramOpt EXPORT VramOptTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
set(runtime_libraries vram_cpu_kernels)
if(TARGET vram_cuda_runtime)
  list(APPEND runtime_libraries vram_cuda_runtime)
endif()
install(TARGETS ${runtime_libraries}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vram
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/vram
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc")

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/VramOpt)
install(EXPORT VramOptTargets NAMESPACE VramOpt:: DESTINATION ${package_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/VramOptConfig.cmake.in
  ${PROJECT_BINARY_DIR}/VramOptConfig.cmake INSTALL_DESTINATION ${package_dir}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/VramOptConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/VramOptConfig.cmake
  ${PROJECT_BINARY_DIR}/VramOptConfigVersion.cmake DESTINATION ${package_dir})
