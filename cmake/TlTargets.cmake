# The helpers every folder's CMakeLists uses to declare tl's targets. Included by the root
# CMakeLists after tl_pch (libtorch, the shared precompiled header, the warnings) and tl_warnings
# (the warnings alone) are defined.

# tl_torch_free(sources...): sources of a libtorch target that include no libtorch header
# (directly or through tl's headers) compile without the shared PCH: loading it costs ~3 CPU s
# a source, more than many of them spend on their own code. Call it in the folder that defines
# the target. A source listed here that starts using libtorch fails to compile until it includes
# what it uses (or leaves the list).
function(tl_torch_free)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_PRECOMPILE_HEADERS ON
                                                 SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# TL_UNITY: the libtorch sources of one target compile in batches of up to 8 (CMake's unity
# build), so that the precompiled header is loaded and the pending instantiations it brings
# (~4.7 CPU s a translation unit) are paid once a batch, not once a source
# (docs/design/build-time.md). File-local names must therefore be unique within a target.
option(TL_UNITY "Compile each libtorch target's sources in batches (unity build)" ON)
function(tl_unity target)
  if(TL_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH
                                               UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

# tl_use_torch(target PUBLIC|PRIVATE): `target` uses libtorch: it links tl_pch (libtorch, the
# warnings) with that visibility, reuses the shared precompiled header and compiles in batches.
# Call it before linking the target's other libraries, so that tl_pch comes first.
function(tl_use_torch target visibility)
  target_link_libraries(${target} ${visibility} tl_pch)
  if(TL_PCH)
    target_precompile_headers(${target} REUSE_FROM tl_pch)
  endif()
  tl_unity(${target})
endfunction()

# tl_add_library(name SOURCES ... DEPS ... [NO_TORCH]): a folder library. By default it uses
# libtorch and reuses the shared PCH; NO_TORCH: it must not, and whatever links only NO_TORCH
# libraries links no libtorch.
function(tl_add_library name)
  cmake_parse_arguments(A "NO_TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  if(A_NO_TORCH)
    target_link_libraries(${name} PUBLIC ${A_DEPS} PRIVATE tl_warnings)
    set_target_properties(${name} PROPERTIES DISABLE_PRECOMPILE_HEADERS ON)
  else()
    tl_use_torch(${name} PUBLIC)
    target_link_libraries(${name} PUBLIC ${A_DEPS})
  endif()
endfunction()

# tl_add_executable(name SOURCES ... DEPS ... [NO_TORCH]): as tl_add_library.
function(tl_add_executable name)
  cmake_parse_arguments(A "NO_TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  if(A_NO_TORCH)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PRIVATE ${A_DEPS} tl_warnings)
    set_target_properties(${name} PROPERTIES DISABLE_PRECOMPILE_HEADERS ON)
  else()
    tl_use_torch(${name} PRIVATE)
    target_link_libraries(${name} PRIVATE ${A_DEPS})
  endif()
endfunction()
