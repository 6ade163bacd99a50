# One place for compiler flags and for the helpers that make libraries and tests.
include(GoogleTest)

set(RINGLEADER_WARNINGS -Wall -Wextra -Wpedantic -Werror -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Woverloaded-virtual -Wimplicit-fallthrough -Wmissing-declarations)

if(RINGLEADER_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# lld links the test programs about 2.7 times faster than GNU ld (19 of them: 11 s against 30 s);
# scripts/setup installs it. Without it the compiler's default linker is used.
find_program(RINGLEADER_LLD ld.lld)
option(RINGLEADER_USE_LLD "Link with lld when it is installed" ON)
if(RINGLEADER_USE_LLD AND RINGLEADER_LLD)
  add_link_options(-fuse-ld=lld)
endif()

# Libraries compile as unity batches: their sources share the same heavy headers (nlohmann/json,
# cpprestsdk, Boost.Asio), which a batch parses once. The sources of a batch share one anonymous
# namespace, so two sources of one library must not define the same internal name.
option(RINGLEADER_UNITY_BUILD "Compile each library's sources in unity batches" ON)
set(RINGLEADER_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch")

# ringleader_library(NAME SOURCES ... DEPS ...): a static library of project code, warnings as errors.
function(ringleader_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${RINGLEADER_UNITY_BUILD}
    UNITY_BUILD_BATCH_SIZE ${RINGLEADER_UNITY_BATCH_SIZE})
  if(RINGLEADER_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC takes a batch's included sources for headers and warns that their classes use the
    # anonymous namespace, which is only a problem in a real header.
    target_compile_options(${name} PRIVATE -Wno-subobject-linkage)
  endif()
  target_include_directories(${name} PUBLIC "${PROJECT_SOURCE_DIR}")
  target_compile_options(${name} PRIVATE ${RINGLEADER_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# ringleader_executable(NAME SOURCES ... DEPS ...)
function(ringleader_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}")
  target_compile_options(${name} PRIVATE ${RINGLEADER_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# Test programs compile without optimisation in every build (the code under test keeps the
# build's flags) and share one precompiled header: GoogleTest, gmock and nlohmann/json take about
# 4.5 s to parse, more than many test sources need for everything else. Both cut CI's build time.
set(RINGLEADER_TEST_FLAGS -O0)
function(ringleader_add_test_pch)
  set(source "${PROJECT_BINARY_DIR}/ringleader_test_pch.cc")
  file(CONFIGURE OUTPUT "${source}" CONTENT "// The precompiled header's own translation unit.\n")
  add_library(ringleader_test_pch OBJECT "${source}")
  target_compile_options(ringleader_test_pch PRIVATE ${RINGLEADER_WARNINGS} ${RINGLEADER_TEST_FLAGS})
  target_link_libraries(ringleader_test_pch PRIVATE GTest::gtest GTest::gmock nlohmann_json::nlohmann_json)
  target_precompile_headers(ringleader_test_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h> <nlohmann/json.hpp>
    <chrono> <filesystem> <map> <memory> <optional> <string> <string_view> <thread> <vector>)
endfunction()

# Which test programs to build: all of them, only the unit tests (CI builds these with the
# sanitizers) or only the integration tests (devcluster, its kubelet, the end-to-end runs, the
# GPU tests and the tests labelled integration; CI builds these optimised). Each test runs in one
# of CI's builds.
set(RINGLEADER_TESTS "all" CACHE STRING "Test programs to build: all, unit or integration")
set_property(CACHE RINGLEADER_TESTS PROPERTY STRINGS all unit integration)
# One ctest entry per unit-test program instead of one per TEST: a sanitized program takes about
# 0.15 s to start and check for leaks, which across a thousand TESTs is most of the suite's time.
# GoogleTest still names each failing TEST in the output. Labelled tests (gpu, which skip without
# a GPU) and integration tests keep one entry per TEST, so a skip shows as one.
option(RINGLEADER_UNIT_TESTS_PER_PROGRAM "Register unit tests as one ctest entry per program" OFF)

# ringleader_test(SOURCE DEPS ... [LABELS ...] [COST SECONDS] [ONE_ENTRY]): one GoogleTest
# program per *_test.cc, each TEST its own ctest entry (each program one, with
# RINGLEADER_UNIT_TESTS_PER_PROGRAM). The working directory is the source root so tests can read
# crds/ and examples/. COST is about how long one of its TESTs runs: ctest starts the costliest
# first, so on a clean checkout (no timings recorded yet) the long end-to-end runs do not queue
# up at the end of the suite behind each other while the other lane sits idle. ONE_ENTRY makes
# the whole program one ctest entry (COST is then the program's): for programs whose TESTs share
# a fixture that takes seconds to start, such as a real control plane started once per program.
function(ringleader_test source)
  cmake_parse_arguments(ARG "ONE_ENTRY" "COST" "DEPS;LABELS" ${ARGN})
  file(RELATIVE_PATH dir "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  # GPU tests (label gpu) build with the integration tests: CI points only its optimised build at
  # CUDA and NCCL (scripts/test), and they skip without a GPU.
  if("integration" IN_LIST ARG_LABELS OR "gpu" IN_LIST ARG_LABELS OR dir MATCHES "^tests/(devcluster|e2e)")
    set(kind integration)
  else()
    set(kind unit)
  endif()
  if(NOT RINGLEADER_TESTS STREQUAL "all" AND NOT RINGLEADER_TESTS STREQUAL kind)
    return()
  endif()
  get_filename_component(name "${source}" NAME_WE)
  add_executable(${name} "${source}")
  target_compile_options(${name} PRIVATE ${RINGLEADER_WARNINGS} ${RINGLEADER_TEST_FLAGS})
  if(NOT TARGET ringleader_test_pch)
    ringleader_add_test_pch()
  endif()
  target_precompile_headers(${name} REUSE_FROM ringleader_test_pch)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  if(RINGLEADER_UNIT_TESTS_PER_PROGRAM AND kind STREQUAL "unit" AND NOT ARG_LABELS)
    add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
    return()
  endif()
  # An empty value would vanish from the list and shift the pairs, so only set ones are passed.
  set(properties)
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  if(ARG_COST)
    list(APPEND properties COST ${ARG_COST})
  endif()
  if(ARG_ONE_ENTRY)
    add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
    if(properties)
      set_tests_properties(${name} PROPERTIES ${properties})
    endif()
    return()
  endif()
  gtest_discover_tests(${name} WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
endfunction()

# ringleader_benchmark(SOURCE DEPS ...): a Google Benchmark program; ctest runs it only once, at
# a tiny size (bench-smoke, tests/bench/CMakeLists.txt).
function(ringleader_benchmark source)
  if(NOT RINGLEADER_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  get_filename_component(name "${source}" NAME_WE)
  add_executable(${name} "${source}")
  target_compile_options(${name} PRIVATE ${RINGLEADER_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
endfunction()
