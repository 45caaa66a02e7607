# Issue 22's kernel candidates side by side (bench/kernel_candidates.cpp, docs/benchmarks.md
# "Kernel candidates"): tunecast's own product kernels, Eigen 3.4 and Highway at every SIMD level.
# Included from bench/CMakeLists.txt; builds tunecast_kernel_candidates only when Eigen 3.4 and
# Highway are found (Debian libeigen3-dev, libhwy-dev) on x86-64. Nothing else depends on it.
find_package(Eigen3 3.4 QUIET NO_MODULE)
find_path(TUNECAST_HWY_INCLUDE_DIR hwy/highway.h)
find_library(TUNECAST_HWY_LIBRARY hwy)

if(NOT TUNECAST_SIMD_X86)
  message(STATUS "tunecast kernel candidates: not x86-64, left out")
elseif(NOT Eigen3_FOUND OR NOT TUNECAST_HWY_INCLUDE_DIR OR NOT TUNECAST_HWY_LIBRARY)
  message(STATUS "tunecast kernel candidates: Eigen 3.4 or Highway not found, left out")
else()
  # Eigen, once per level with the runtime's level flags and code options (-O2, no contraction).
  # Each object renames Eigen's namespace after its level (kernel_candidates_eigen.cpp says why),
  # so no inline function is shared, and merged, across levels.
  set(tunecast_kc_objects "")
  foreach(level sse2 avx2 avx512)
    add_library(tunecast_kc_eigen_${level} OBJECT ${CMAKE_CURRENT_LIST_DIR}/kernel_candidates_eigen.cpp)
    target_link_libraries(tunecast_kc_eigen_${level} PRIVATE Eigen3::Eigen)
    target_include_directories(tunecast_kc_eigen_${level} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    # GCC 12 reports its own AVX-512 intrinsics (_mm512_undefined_ps) as uninitialized when Eigen
    # inlines them.
    target_compile_options(tunecast_kc_eigen_${level} PRIVATE -Wall -Wextra -Wno-uninitialized
      -Wno-maybe-uninitialized -O2 -ffp-contract=off ${TUNECAST_SIMD_FLAGS_${level}})
    list(APPEND tunecast_kc_objects $<TARGET_OBJECTS:tunecast_kc_eigen_${level}>)
  endforeach()

  # Highway: one object at the portable baseline; Highway compiles each of its targets inside it
  # (foreach_target.h) and dispatches at run time.
  add_library(tunecast_kc_hwy OBJECT ${CMAKE_CURRENT_LIST_DIR}/kernel_candidates_hwy.cpp)
  target_include_directories(tunecast_kc_hwy PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_include_directories(tunecast_kc_hwy SYSTEM PRIVATE ${TUNECAST_HWY_INCLUDE_DIR})
  target_compile_options(tunecast_kc_hwy PRIVATE -Wall -Wextra -O2 -ffp-contract=off
    ${TUNECAST_SIMD_FLAGS_sse2})
  list(APPEND tunecast_kc_objects $<TARGET_OBJECTS:tunecast_kc_hwy>)

  add_executable(tunecast_kernel_candidates ${CMAKE_CURRENT_LIST_DIR}/kernel_candidates.cpp
    ${CMAKE_CURRENT_LIST_DIR}/malloc_counter.cpp
    ${tunecast_kc_objects})
  target_include_directories(tunecast_kernel_candidates PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_include_directories(tunecast_kernel_candidates SYSTEM PRIVATE ${TUNECAST_HWY_INCLUDE_DIR})
  target_link_libraries(tunecast_kernel_candidates PRIVATE tunecast_runtime ${TUNECAST_HWY_LIBRARY})
  target_compile_options(tunecast_kernel_candidates PRIVATE -Wall -Wextra -O2 ${TUNECAST_SIMD_FLAGS_sse2})
  # The code size report reads the objects and archives it was built from.
  target_compile_definitions(tunecast_kernel_candidates PRIVATE
    KC_RUNTIME_ARCHIVE="$<TARGET_FILE:tunecast_runtime>"
    KC_EIGEN_OBJECT_SSE2="$<TARGET_OBJECTS:tunecast_kc_eigen_sse2>"
    KC_EIGEN_OBJECT_AVX2="$<TARGET_OBJECTS:tunecast_kc_eigen_avx2>"
    KC_EIGEN_OBJECT_AVX512="$<TARGET_OBJECTS:tunecast_kc_eigen_avx512>"
    KC_HWY_OBJECT="$<TARGET_OBJECTS:tunecast_kc_hwy>"
    KC_HWY_LIBRARY="${TUNECAST_HWY_LIBRARY}")
endif()
