// Compiling candidates with the engine's own toolchain (the compilers, flags and include
// paths its kernels were built with, recorded by cmake/Toolchain.cmake) into a shared
// library, with a content-addressed cache.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "fk/tensor_view.h"

namespace fk::bench {

struct Toolchain {
  std::string cxx, cxx_flags, cxx_version;
  std::string nvcc, cuda_flags, cuda_version;
  std::vector<std::string> include_dirs;
  static Toolchain engine();  // the one this build of fastkernels used
  bool has_cuda() const { return !nvcc.empty(); }
  std::string describe() const;
};

struct CompileResult {
  bool ok = false;
  std::filesystem::path library;  // the .so (valid when ok)
  std::string log;                // the compiler's output, verbatim
  std::string command;            // the command line that ran
  std::string source_hash;        // content hash of the sources (hex)
  double seconds = 0;
  bool cached = false;
  bool timed_out = false;
};

struct CompileOptions {
  double timeout_s = 300;
  std::filesystem::path cache_dir;  // empty: $FK_CACHE_DIR/candidates or ~/.cache/fastkernels/candidates
  bool use_cache = true;
};

// The candidate's source files: the file itself, or every .cu/.cpp/.cuh/.h in a folder.
std::vector<std::filesystem::path> candidate_sources(const std::filesystem::path& candidate);
// A .cu anywhere in the sources means a CUDA candidate (nvcc); otherwise a CPU one (c++).
bool is_cuda_candidate(const std::filesystem::path& candidate);
CompileResult compile_candidate(const std::filesystem::path& candidate, const CompileOptions& opts = {});

std::filesystem::path default_cache_dir();
std::string hash_hex(const std::string& bytes);  // 128-bit content hash as 32 hex digits

}  // namespace fk::bench
