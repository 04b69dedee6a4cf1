// A compiled candidate loaded into the (worker) process: the ABI version check and the
// op's entry points, resolved from the shared library by name.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fk/op.h"

namespace fk::bench {

class LoadedCandidate {
 public:
  // Loads the library and resolves fk_op_<op> (required) and fk_plan_<op> (optional).
  // Throws fk::Error (FK_ERR_INVALID_ARGUMENT) for a missing symbol or an ABI mismatch.
  static std::unique_ptr<LoadedCandidate> load(const std::filesystem::path& library, const std::string& op);
  ~LoadedCandidate();
  LoadedCandidate(const LoadedCandidate&) = delete;
  LoadedCandidate& operator=(const LoadedCandidate&) = delete;

  fk_op_fn run() const { return run_; }
  fk_op_fn plan() const { return plan_; }  // may be null
  const std::filesystem::path& library() const { return library_; }

 private:
  LoadedCandidate() = default;
  void* handle_ = nullptr;
  fk_op_fn run_ = nullptr;
  fk_op_fn plan_ = nullptr;
  std::filesystem::path library_;
};

// Undefined dynamic symbols the library imports (read from its ELF .dynsym), e.g. to
// enforce a task's `forbid` list.
std::vector<std::string> imported_symbols(const std::filesystem::path& library);
// Functions the library defines (its .symtab and .dynsym, local ones included) and the CUDA
// kernels whose launch stubs it holds, sorted and unique: the kernels that are its own.
std::vector<std::string> defined_functions(const std::filesystem::path& library);
// The kernel (its mangled name, as a kernel trace names it) that nvcc's host-side launch
// stub `symbol` launches ("_ZL59__device_stub__ZN3adv13rms_norm_rowsIfEEv...ifibj" ->
// "_ZN3adv13rms_norm_rowsIfEEv..."), or "" when `symbol` is no such stub.
std::string kernel_of_launch_stub(const std::string& symbol);
// The first imported symbol that belongs to a forbidden library ("cublas" -> cublas*,
// "cublasLt" -> cublasLt*, "cudnn" -> cudnn*), or "" if none.
std::string forbidden_import(const std::vector<std::string>& imports, const std::vector<std::string>& forbid);

}  // namespace fk::bench
