# FindOpenBLAS: prefers Debian's OpenMP build (libopenblas-openmp-dev), since the default
# pthread build of OpenBLAS misbehaves when called from inside OpenMP regions.
# Defines OpenBLAS::OpenBLAS and OpenBLAS_FOUND.
find_path(OpenBLAS_INCLUDE_DIR cblas.h
  HINTS ${OpenBLAS_ROOT}/include
  PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
        /usr/include/openblas /usr/include
  NO_DEFAULT_PATH)
find_library(OpenBLAS_LIBRARY NAMES openblas
  HINTS ${OpenBLAS_ROOT}/lib
  PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
        /usr/lib/x86_64-linux-gnu /usr/lib
  NO_DEFAULT_PATH)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLAS REQUIRED_VARS OpenBLAS_LIBRARY OpenBLAS_INCLUDE_DIR)
if(OpenBLAS_FOUND AND NOT TARGET OpenBLAS::OpenBLAS)
  add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES
    IMPORTED_LOCATION ${OpenBLAS_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${OpenBLAS_INCLUDE_DIR})
endif()
mark_as_advanced(OpenBLAS_INCLUDE_DIR OpenBLAS_LIBRARY)
