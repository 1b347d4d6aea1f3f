# tenax_add_layer(<layer> [DEPENDS <targets>...] [PRIVATE_DEPENDS <targets>...]
#                 [CUDA_DEPENDS <targets>...])
#
# Creates the library tenax_<layer> (alias tenax::<layer>) from <layer>/src and <layer>/cpu,
# with public headers in <layer>/include. Its CUDA code in <layer>/cuda (but <layer>/cuda/plugins)
# becomes the object
# library tenax_<layer>_cuda, folded into tenax_<layer> when the CUDA backend is enabled;
# otherwise <layer>/stub supplies the same symbols, throwing NotCompiledError.
# tenax_sanitize(<target> <layer>)
#
# Compiles <target> with TENAX_SANITIZE's sanitizers (e.g. address,undefined) when <layer> is one
# of TENAX_SANITIZE_LAYERS: at -O1 with debug info, as the sanitizers advise. The other targets
# keep the build type's flags, so their objects are those of the plain build (the compiler cache
# serves them); every program and library links the sanitizers' run-time (top-level
# CMakeLists.txt).
function(tenax_sanitize target layer)
  if(TENAX_SANITIZE AND layer IN_LIST TENAX_SANITIZE_LAYERS)
    target_compile_options(${target} PRIVATE -fsanitize=${TENAX_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined -O1 -g)
  endif()
endfunction()

function(tenax_add_layer layer)
  cmake_parse_arguments(ARG "" "" "DEPENDS;PRIVATE_DEPENDS;CUDA_DEPENDS" ${ARGN})
  set(dir ${PROJECT_SOURCE_DIR}/${layer})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/src/*.cpp ${dir}/cpu/*.cpp)
  add_library(tenax_${layer} ${sources})
  add_library(tenax::${layer} ALIAS tenax_${layer})
  set_target_properties(tenax_${layer} PROPERTIES EXPORT_NAME ${layer} OUTPUT_NAME tenax_${layer}
                                                  VERSION ${PROJECT_VERSION} SOVERSION 0)
  target_include_directories(tenax_${layer} PUBLIC $<BUILD_INTERFACE:${dir}/include>
                                                   $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # Private headers (<layer>/src/detail/...) are found from sources in any subfolder of src.
  target_include_directories(tenax_${layer} PRIVATE ${dir}/src)
  target_compile_features(tenax_${layer} PUBLIC cxx_std_20)
  target_compile_options(tenax_${layer} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
                         -fmacro-prefix-map=${PROJECT_SOURCE_DIR}/=)
  target_link_libraries(tenax_${layer} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})

  if(TENAX_CUDA_ENABLED)
    file(GLOB_RECURSE cuda_sources CONFIGURE_DEPENDS ${dir}/cuda/*.cpp ${dir}/cuda/*.cu)
    # <layer>/cuda/plugins/ holds CUDA code built into run-time-loaded plugins of its own (the
    # layer's CMakeLists.txt builds them), not into the layer's library.
    list(FILTER cuda_sources EXCLUDE REGEX "/cuda/plugins/")
    if(cuda_sources)
      add_library(tenax_${layer}_cuda OBJECT ${cuda_sources})
      target_include_directories(tenax_${layer}_cuda PRIVATE ${dir}/include ${dir}/cuda)
      foreach(dep IN LISTS ARG_DEPENDS)
        target_include_directories(tenax_${layer}_cuda
                                   PRIVATE $<TARGET_PROPERTY:${dep},INTERFACE_INCLUDE_DIRECTORIES>)
      endforeach()
      target_link_libraries(tenax_${layer}_cuda PRIVATE CUDA::cudart ${ARG_CUDA_DEPENDS})
      target_compile_definitions(tenax_${layer}_cuda PRIVATE TENAX_WITH_CUDA=1)
      target_sources(tenax_${layer} PRIVATE $<TARGET_OBJECTS:tenax_${layer}_cuda>)
      # Link only: the CUDA headers are for tenax_<layer>_cuda. The layer's CPU sources then
      # compile with the same command as in a build without CUDA, so the compiler cache serves
      # one preset's objects to the other.
      foreach(dep IN ITEMS CUDA::cudart ${ARG_CUDA_DEPENDS})
        target_link_libraries(tenax_${layer} PRIVATE $<LINK_ONLY:${dep}>)
      endforeach()
    endif()
  else()
    file(GLOB_RECURSE stub_sources CONFIGURE_DEPENDS ${dir}/stub/*.cpp)
    target_sources(tenax_${layer} PRIVATE ${stub_sources})
  endif()

  tenax_sanitize(tenax_${layer} ${layer})

  install(TARGETS tenax_${layer} EXPORT tenaxTargets)
  install(DIRECTORY ${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
