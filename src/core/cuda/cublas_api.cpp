#include "core/cuda/cublas_api.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

#include "core/cublas_exposure.h"
#include "fk/status.h"

namespace fk::cuda {
namespace {

#define FK_CUBLAS_STRING(x) #x
#define FK_CUBLAS_SONAME(lib, major) "lib" lib ".so." FK_CUBLAS_STRING(major)
constexpr const char* kLtLibrary = FK_CUBLAS_SONAME("cublasLt", CUBLAS_VER_MAJOR);
constexpr const char* kBlasLibrary = FK_CUBLAS_SONAME("cublas", CUBLAS_VER_MAJOR);

// The folder of the CUDA runtime this process runs on, where the toolkit keeps cuBLAS too,
// or "" if it cannot be told.
std::string cudart_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudaRuntimeGetVersion), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// By name first (the executable's run path, LD_LIBRARY_PATH, the loader's cache), then
// beside the CUDA runtime, where a toolkit outside the loader's paths keeps it.
void* open_library(const char* name, int mode) {
  if (void* handle = dlopen(name, RTLD_NOW | mode)) return handle;
  const std::string first_error = dlerror();
  const std::string folder = cudart_folder();
  if (!folder.empty())
    if (void* handle = dlopen((folder + name).c_str(), RTLD_NOW | mode)) return handle;
  FK_FAIL(FK_ERR_CUDA, "cannot load ", name, " (the cuBLAS of the CUDA toolkit the engine was built with): ",
          first_error);
}

template <class Fn>
void resolve(void* library, const char* library_name, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (out == nullptr)
    FK_FAIL(FK_ERR_CUDA, library_name, " has no ", symbol, ": not the cuBLAS the engine was built with");
}

CublasApi load() {
  // RTLD_LOCAL: another cuBLAS in the process (a Python framework's) keeps its own symbols.
  void* lt = open_library(kLtLibrary, RTLD_LOCAL);
  void* blas = open_library(kBlasLibrary, RTLD_LOCAL);
  CublasApi api;
  // `name` arrives macro-expanded, so a name cuBLAS defines as a macro is looked up as the
  // symbol it exports.
#define FK_CUBLAS_RESOLVE_LT(name) resolve(lt, kLtLibrary, FK_CUBLAS_STRING(name), api.name);
#define FK_CUBLAS_RESOLVE_BLAS(name) resolve(blas, kBlasLibrary, FK_CUBLAS_STRING(name), api.name);
  FK_CUBLASLT_FUNCTIONS(FK_CUBLAS_RESOLVE_LT)
  FK_CUBLAS_FUNCTIONS(FK_CUBLAS_RESOLVE_BLAS)
  FK_CUBLAS_RESOLVE_BLAS(cublasGemmStridedBatchedEx)
#undef FK_CUBLAS_RESOLVE_LT
#undef FK_CUBLAS_RESOLVE_BLAS
  return api;
}

}  // namespace

const CublasApi& cublas_api() {
  // A static whose initialiser throws is initialised again by the next call. Never
  // destroyed: other statics' destructors may still call cuBLAS.
  static const CublasApi* api = new CublasApi(load());
  return *api;
}

void expose_cublas_to_later_libraries() {
  open_library(kLtLibrary, RTLD_GLOBAL);
  open_library(kBlasLibrary, RTLD_GLOBAL);
}

}  // namespace fk::cuda
