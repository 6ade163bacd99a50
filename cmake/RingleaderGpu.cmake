# Finds the CUDA runtime and NCCL. With both, the NCCL parts of the sidecar are built; without
# them the build goes on with GPU parts off and says why.
#
# The sidecar's GPU code is host C++: it needs cuda_runtime_api.h, libcudart, nccl.h and libnccl,
# never nvcc. So the runtime comes from a full toolkit (FindCUDAToolkit, which wants nvcc, as in
# docker/Dockerfile.sidecar's build stage) or, failing that, from any directory that holds the
# runtime's header and library, such as NVIDIA's pip wheels (CI points CUDAToolkit_ROOT and
# NCCL_ROOT at PyTorch's, scripts/test).
#   RINGLEADER_GPU     AUTO (default): GPU parts where CUDA and NCCL are found; ON: refuse to
#                      configure without them; OFF: never.
#   CUDAToolkit_ROOT   the toolkit or runtime directory (include/, lib/ or lib64/)
#   NCCL_ROOT          NCCL's directory (include/nccl.h, lib/); the environment's NCCL_ROOT or
#                      NCCL_HOME also do
# The NCCL floor is 2.28 (ncclAlltoAll, which every preflight runs; docs/gpu.md): an older NCCL
# found is an error naming both versions, not a build that fails at its first alltoall.
set(RINGLEADER_GPU AUTO CACHE STRING "Build the NCCL parts: AUTO (where CUDA and NCCL are found), ON or OFF")
set_property(CACHE RINGLEADER_GPU PROPERTY STRINGS AUTO ON OFF)
set(RINGLEADER_NCCL_FLOOR 2.28.0)
set(RINGLEADER_WITH_NCCL OFF)

# ringleader_gpu_off(REASON): GPU parts off, or a configure error when they were asked for.
macro(ringleader_gpu_off reason)
  if(RINGLEADER_GPU STREQUAL "ON")
    message(FATAL_ERROR "ringleader GPU parts: RINGLEADER_GPU=ON, but ${reason}")
  endif()
  message(STATUS "ringleader GPU parts: OFF (${reason})")
endmacro()

# Finds the runtime without nvcc: sets RINGLEADER_CUDART (an imported target's name) and
# RINGLEADER_CUDA_VERSION, or leaves RINGLEADER_CUDART empty.
function(ringleader_find_cuda_runtime)
  set(RINGLEADER_CUDART "" PARENT_SCOPE)
  set(roots ${CUDAToolkit_ROOT} $ENV{CUDAToolkit_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda)
  find_path(RINGLEADER_CUDART_INCLUDE_DIR cuda_runtime_api.h
    HINTS ${roots} PATH_SUFFIXES include NO_CACHE)
  # Wheels ship only the versioned name (libcudart.so.13), which the linker takes by full path.
  find_library(RINGLEADER_CUDART_LIBRARY
    NAMES cudart libcudart.so.14 libcudart.so.13 libcudart.so.12
    HINTS ${roots} PATH_SUFFIXES lib64 lib NO_CACHE)
  if(NOT RINGLEADER_CUDART_INCLUDE_DIR OR NOT RINGLEADER_CUDART_LIBRARY)
    return()
  endif()
  # find_path leaves a trailing slash on what it finds without a cache entry.
  string(REGEX REPLACE "/$" "" RINGLEADER_CUDART_INCLUDE_DIR "${RINGLEADER_CUDART_INCLUDE_DIR}")
  # The runtime wheel leaves out the headers cuda_runtime_api.h includes from crt/.
  if(NOT EXISTS "${RINGLEADER_CUDART_INCLUDE_DIR}/crt/host_defines.h")
    string(CONCAT missing "${RINGLEADER_CUDART_INCLUDE_DIR} has cuda_runtime_api.h but not "
      "crt/host_defines.h (pip's nvidia-cuda-crt of the runtime's version; scripts/install-torch)")
    set(RINGLEADER_CUDART_MISSING "${missing}" PARENT_SCOPE)
    return()
  endif()
  file(STRINGS "${RINGLEADER_CUDART_INCLUDE_DIR}/cuda_runtime_api.h" line REGEX "^#define CUDART_VERSION +[0-9]+")
  string(REGEX REPLACE "^#define CUDART_VERSION +([0-9]+).*" "\\1" code "${line}")
  math(EXPR major "${code} / 1000")
  math(EXPR minor "${code} % 1000 / 10")
  add_library(ringleader_cudart SHARED IMPORTED GLOBAL)
  set_target_properties(ringleader_cudart PROPERTIES
    IMPORTED_LOCATION "${RINGLEADER_CUDART_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RINGLEADER_CUDART_INCLUDE_DIR}")
  set(RINGLEADER_CUDART ringleader_cudart PARENT_SCOPE)
  set(RINGLEADER_CUDA_VERSION "${major}.${minor} runtime at ${RINGLEADER_CUDART_LIBRARY}" PARENT_SCOPE)
endfunction()

# "2.28.3" from nccl.h's NCCL_MAJOR, NCCL_MINOR and NCCL_PATCH.
function(ringleader_nccl_header_version header out)
  file(STRINGS "${header}" lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  set(version "")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part} +([0-9]+)" ignored "${lines}")
    list(APPEND version "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN version "." version)
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

if(RINGLEADER_GPU STREQUAL "OFF")
  message(STATUS "ringleader GPU parts: OFF (RINGLEADER_GPU=OFF)")
  return()
endif()

find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  set(RINGLEADER_CUDART CUDA::cudart)
  set(RINGLEADER_CUDA_VERSION "${CUDAToolkit_VERSION} toolkit at ${CUDAToolkit_LIBRARY_DIR}")
else()
  ringleader_find_cuda_runtime()
endif()
if(RINGLEADER_CUDART_MISSING)
  ringleader_gpu_off("${RINGLEADER_CUDART_MISSING}")
  return()
elseif(NOT RINGLEADER_CUDART)
  ringleader_gpu_off(
    "no CUDA runtime found: no toolkit, nor cuda_runtime_api.h with libcudart; set CUDAToolkit_ROOT")
  return()
endif()

# A toolkit's own include/ and lib/ come last: some installs put NCCL beside the runtime.
set(_nccl_roots ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${CUDAToolkit_ROOT})
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_roots} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib lib64)
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  ringleader_gpu_off("CUDA ${RINGLEADER_CUDA_VERSION} found, NCCL not found (set NCCL_ROOT)")
  return()
endif()
ringleader_nccl_header_version("${NCCL_INCLUDE_DIR}/nccl.h" NCCL_VERSION)
if(NCCL_VERSION VERSION_LESS RINGLEADER_NCCL_FLOOR)
  # Whatever RINGLEADER_GPU says: an NCCL was found, so GPU parts were meant, and building with
  # them off would hide that this one cannot serve.
  message(FATAL_ERROR "ringleader GPU parts: NCCL ${NCCL_VERSION} found (${NCCL_INCLUDE_DIR}/nccl.h), "
    "but the sidecar needs NCCL ${RINGLEADER_NCCL_FLOOR} or later (ncclAlltoAll, which every "
    "preflight runs; docs/gpu.md). Point NCCL_ROOT at NCCL 2.28 or later, or configure with "
    "-DRINGLEADER_GPU=OFF for a sidecar without NCCL.")
endif()

add_library(ringleader_nccl_library SHARED IMPORTED GLOBAL)
set_target_properties(ringleader_nccl_library PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}")
add_library(ringleader_nccl INTERFACE)
target_include_directories(ringleader_nccl SYSTEM INTERFACE "${NCCL_INCLUDE_DIR}")
target_link_libraries(ringleader_nccl INTERFACE ringleader_nccl_library ${RINGLEADER_CUDART})
set(RINGLEADER_WITH_NCCL ON)
message(STATUS "ringleader GPU parts: ON (CUDA ${RINGLEADER_CUDA_VERSION}, NCCL ${NCCL_VERSION} at ${NCCL_LIBRARY})")
