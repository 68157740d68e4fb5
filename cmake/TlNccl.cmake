# NCCL backend: TL_WITH_NCCL=AUTO finds CUDA + NCCL (under /usr/local/cuda on our machines, or
# CUDAToolkit_ROOT / NCCL_ROOT); ON fails the configure step when they are missing; OFF skips.
set(TL_HAVE_NCCL OFF)
string(TOUPPER "${TL_WITH_NCCL}" _tl_nccl_mode)
if(NOT _tl_nccl_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TL_WITH_NCCL must be AUTO, ON or OFF (got '${TL_WITH_NCCL}')")
endif()
if(NOT _tl_nccl_mode STREQUAL "OFF")
  set(_tl_cuda_hints $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
  find_path(TL_CUDA_INCLUDE_DIR cuda_runtime.h HINTS ${CUDAToolkit_ROOT} ${_tl_cuda_hints}
            PATH_SUFFIXES include)
  find_library(TL_CUDART_LIBRARY cudart HINTS ${CUDAToolkit_ROOT} ${_tl_cuda_hints}
               PATH_SUFFIXES lib64 lib lib/x64)
  find_path(TL_NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${_tl_cuda_hints}
            PATH_SUFFIXES include)
  find_library(TL_NCCL_LIBRARY nccl HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${_tl_cuda_hints}
               PATH_SUFFIXES lib64 lib)
  if(TL_CUDA_INCLUDE_DIR AND TL_CUDART_LIBRARY AND TL_NCCL_INCLUDE_DIR AND TL_NCCL_LIBRARY)
    set(TL_HAVE_NCCL ON)
    add_library(tl_nccl_deps INTERFACE)
    target_include_directories(tl_nccl_deps SYSTEM INTERFACE ${TL_CUDA_INCLUDE_DIR} ${TL_NCCL_INCLUDE_DIR})
    target_link_libraries(tl_nccl_deps INTERFACE ${TL_NCCL_LIBRARY} ${TL_CUDART_LIBRARY})
    message(STATUS "tl: NCCL backend ON (nccl: ${TL_NCCL_LIBRARY}, cudart: ${TL_CUDART_LIBRARY})")
  elseif(_tl_nccl_mode STREQUAL "ON")
    message(FATAL_ERROR
      "TL_WITH_NCCL=ON but CUDA/NCCL were not found: cuda_runtime.h='${TL_CUDA_INCLUDE_DIR}', "
      "libcudart='${TL_CUDART_LIBRARY}', nccl.h='${TL_NCCL_INCLUDE_DIR}', libnccl='${TL_NCCL_LIBRARY}'. "
      "Set CUDAToolkit_ROOT / NCCL_ROOT, or configure with -DTL_WITH_NCCL=OFF.")
  else()
    message(STATUS "tl: NCCL backend OFF (CUDA/NCCL not found; TL_WITH_NCCL=AUTO)")
  endif()
endif()
