# Third-party dependencies. Everything is found either in the project-local prefix
# (.deps/, filled by scripts/setup.sh or unpacked from an offline pack) or on the system
# (Debian packages). Paths given on the command line win:
#   -DFK_DEPS_PREFIX=...  -DFK_CUTLASS_INCLUDE_DIR=...  -DFK_FLASHINFER_INCLUDE_DIR=...
set(FK_DEPS_PREFIX "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH "Project-local dependency prefix")
find_package(Threads REQUIRED)

add_library(fk_deps INTERFACE)

function(fk_require_header var header hint_msg)
  find_path(${var} ${header} HINTS "${FK_DEPS_PREFIX}/include" PATHS /usr/include /usr/local/include)
  if(NOT ${var})
    message(FATAL_ERROR "fastkernels: ${header} not found. ${hint_msg}")
  endif()
  target_include_directories(fk_deps SYSTEM INTERFACE ${${var}})
endfunction()

set(_setup_hint "Run scripts/setup.sh, or build from an offline pack (README).")
fk_require_header(FK_JSON_INCLUDE_DIR nlohmann/json.hpp "${_setup_hint}")
fk_require_header(FK_CLI11_INCLUDE_DIR CLI/CLI.hpp "${_setup_hint}")
fk_require_header(FK_HTTPLIB_INCLUDE_DIR httplib.h "${_setup_hint}")

# Debian builds cpp-httplib as a library (the header declares, libcpp-httplib defines). Its
# classes change layout with the CPPHTTPLIB_*_SUPPORT switches, so every user must compile
# with exactly the switches the library was built with (its pkg-config Cflags), or objects
# are corrupted. Upstream's single header defines everything inline and needs neither.
find_library(FK_HTTPLIB_LIBRARY NAMES cpp-httplib libcpp-httplib.so.0.11 HINTS "${FK_DEPS_PREFIX}/lib")
if(FK_HTTPLIB_LIBRARY)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(FK_HTTPLIB_PC QUIET cpp-httplib)
  endif()
  if(FK_HTTPLIB_PC_FOUND)
    target_compile_options(fk_deps INTERFACE ${FK_HTTPLIB_PC_CFLAGS_OTHER})
  else()  # what Debian's package is built with
    target_compile_definitions(fk_deps INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT
                                                 CPPHTTPLIB_BROTLI_SUPPORT)
  endif()
  target_link_libraries(fk_deps INTERFACE ${FK_HTTPLIB_LIBRARY})
endif()

# SQLite: the system library if there is one; the offline pack carries header + library.
find_path(FK_SQLITE_INCLUDE_DIR sqlite3.h HINTS "${FK_DEPS_PREFIX}/include")
find_library(FK_SQLITE_LIBRARY NAMES sqlite3 libsqlite3.so.0 HINTS "${FK_DEPS_PREFIX}/lib")
if(FK_SQLITE_INCLUDE_DIR AND FK_SQLITE_LIBRARY)
  target_include_directories(fk_deps SYSTEM INTERFACE ${FK_SQLITE_INCLUDE_DIR})
  target_link_libraries(fk_deps INTERFACE ${FK_SQLITE_LIBRARY})
  set(FK_HAVE_SQLITE ON)
else()
  message(FATAL_ERROR "fastkernels: SQLite (sqlite3.h + libsqlite3) not found. ${_setup_hint}")
endif()

# Header-only GPU libraries from their PyPI wheels (installed by scripts/setup.sh).
if(FK_CUDA)
  find_path(FK_CUTLASS_INCLUDE_DIR cutlass/cutlass.h HINTS "${FK_DEPS_PREFIX}/include")
  find_path(FK_FLASHINFER_INCLUDE_DIR flashinfer/attention/decode.cuh HINTS "${FK_DEPS_PREFIX}/include")
  if(NOT FK_CUTLASS_INCLUDE_DIR OR NOT FK_FLASHINFER_INCLUDE_DIR)
    message(FATAL_ERROR "fastkernels: CUTLASS/CuTe or FlashInfer headers not found "
                        "(FK_CUTLASS_INCLUDE_DIR=${FK_CUTLASS_INCLUDE_DIR}, "
                        "FK_FLASHINFER_INCLUDE_DIR=${FK_FLASHINFER_INCLUDE_DIR}). ${_setup_hint}")
  endif()
  target_include_directories(fk_deps SYSTEM INTERFACE ${FK_CUTLASS_INCLUDE_DIR} ${FK_FLASHINFER_INCLUDE_DIR})
  message(STATUS "fastkernels: CUTLASS headers in ${FK_CUTLASS_INCLUDE_DIR}")
  message(STATUS "fastkernels: FlashInfer headers in ${FK_FLASHINFER_INCLUDE_DIR}")
endif()

# GoogleTest: the system package, or its sources (Debian ships them in /usr/src/googletest;
# the offline pack carries them in .deps/src/googletest).
if(FK_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    set(_gtest_src "")
    foreach(_d "${FK_DEPS_PREFIX}/src/googletest" /usr/src/googletest)
      if(EXISTS "${_d}/CMakeLists.txt" AND _gtest_src STREQUAL "")
        set(_gtest_src "${_d}")
      endif()
    endforeach()
    if(_gtest_src STREQUAL "")
      message(FATAL_ERROR "fastkernels: GoogleTest not found. ${_setup_hint}")
    endif()
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(${_gtest_src} ${PROJECT_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL)
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
  endif()
endif()
