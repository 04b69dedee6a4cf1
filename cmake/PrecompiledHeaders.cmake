# Precompiled headers. Every translation unit parses the same ~130k lines of the standard
# library and nlohmann/json before its own code; parsing them once per target saves about a
# third of each C++ compile, which is what keeps the two-configuration test build within
# CI's time on two cores. CUDA sources (nvcc) are not affected. -DFK_PCH=OFF builds
# without them, which also shows a file that forgot one of these includes.
option(FK_PCH "Precompile the standard library and nlohmann/json headers" ON)

set(FK_PCH_HEADERS
  <algorithm> <array> <atomic> <chrono> <cmath> <cstddef> <cstdint> <cstring> <filesystem>
  <functional> <map> <memory> <mutex> <optional> <random> <set> <sstream> <string>
  <string_view> <thread> <unordered_map> <utility> <variant> <vector>
  <nlohmann/json.hpp>)

# fk_precompile_headers(target [extra headers...]): C++ sources of `target` include
# FK_PCH_HEADERS (and the extras) precompiled.
function(fk_precompile_headers target)
  if(NOT FK_PCH)
    return()
  endif()
  set(headers ${FK_PCH_HEADERS} ${ARGN})
  list(TRANSFORM headers PREPEND "$<$<COMPILE_LANGUAGE:CXX>:")
  list(TRANSFORM headers APPEND ">")
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()

# fk_reuse_precompiled_headers(target from): `target` uses `from`'s precompiled header
# (same flags); only for targets whose sources are all C++.
function(fk_reuse_precompiled_headers target from)
  if(FK_PCH)
    target_precompile_headers(${target} REUSE_FROM ${from})
  endif()
endfunction()
