# add_vram_library(name sources... [add_mlir_library arguments]): one
# component of libVramOpt. Each component is a static library (what the unit
# tests, benchmarks and fuzz targets link) whose objects also go into the one
# shared library that is installed and that the tools link
# (add_vram_shared_library), so components are not installed on their own.
function(add_vram_library name)
  add_mlir_library(${name} DISABLE_INSTALL ${ARGN})
  set_property(GLOBAL APPEND PROPERTY VRAM_COMPONENT_LIBS ${name})
endfunction()

# add_vram_shared_library(name VERSION v SOVERSION s PUBLIC libs... PRIVATE
# libs...): the shared library of every add_vram_library component, with the
# components' external dependencies (their links to each other are inside).
function(add_vram_shared_library name)
  cmake_parse_arguments(ARG "" "VERSION;SOVERSION" "PUBLIC;PRIVATE" ${ARGN})
  get_property(components GLOBAL PROPERTY VRAM_COMPONENT_LIBS)
  add_library(${name} SHARED)
  foreach(component ${components})
    target_sources(${name} PRIVATE $<TARGET_OBJECTS:obj.${component}>)
  endforeach()
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE})
  target_compile_features(${name} PUBLIC cxx_std_17)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(${name} PROPERTIES
    VERSION ${ARG_VERSION} SOVERSION ${ARG_SOVERSION}
    # Next to libvram_cpu_kernels, where the JIT looks for it.
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
endfunction()
