# CUDA detection. DEPBLOOM_CUDA=AUTO compiles the CUDA backend wherever nvcc is found
# (CUDA_HOME, /usr/local/cuda or PATH); ON requires it; OFF gives a CPU-only build.
# Binaries link the CUDA runtime only, never the driver stub, so they start on machines
# without a driver and report "no GPU" at run time.
set(DEPBLOOM_WITH_CUDA OFF)
if(NOT DEPBLOOM_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(DEPBLOOM_NVCC nvcc
      HINTS $ENV{CUDA_HOME}/bin $ENV{CUDA_PATH}/bin /usr/local/cuda/bin)
    if(DEPBLOOM_NVCC)
      set(CMAKE_CUDA_COMPILER ${DEPBLOOM_NVCC})
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)  # A100, H100/H200
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(DEPBLOOM_WITH_CUDA ON)
  elseif(DEPBLOOM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DEPBLOOM_CUDA=ON but nvcc was not found (set CUDA_HOME)")
  endif()
endif()

if(DEPBLOOM_WITH_CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  find_package(NCCL)
  find_package(CUDNN)
  message(STATUS "DepBloom: CUDA backend ON (architectures ${CMAKE_CUDA_ARCHITECTURES}, "
                 "NCCL ${NCCL_FOUND}, cuDNN ${CUDNN_FOUND})")
else()
  message(STATUS "DepBloom: CUDA backend OFF (CPU-only build)")
endif()
