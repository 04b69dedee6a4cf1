#include "harness/sandbox/candidate.h"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/cublas_exposure.h"
#include "fk/status.h"

namespace fk::bench {

namespace fs = std::filesystem;

std::unique_ptr<LoadedCandidate> LoadedCandidate::load(const fs::path& library, const std::string& op) {
  std::unique_ptr<LoadedCandidate> c(new LoadedCandidate());
  c->library_ = library;
  const std::vector<std::string> imports = imported_symbols(library);
  if (std::any_of(imports.begin(), imports.end(), [](const std::string& s) { return s.rfind("cublas", 0) == 0; }))
    cuda::expose_cublas_to_later_libraries();
  // RTLD_LOCAL: a candidate's symbols never leak into the process or into other candidates.
  c->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!c->handle_) FK_FAIL(FK_ERR_INVALID_ARGUMENT, "cannot load candidate ", library.string(), ": ", dlerror());
  auto abi = reinterpret_cast<int (*)()>(dlsym(c->handle_, "fk_abi_version"));
  if (!abi)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "candidate ", library.string(),
            " does not export fk_abi_version (use FK_EXPORT_CANDIDATE from fk/op.h)");
  const int v = abi();
  if (v != FK_ABI_VERSION)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "candidate ABI version ", v, " does not match fastkernels ABI ", FK_ABI_VERSION);
  const std::string run_name = "fk_op_" + op, plan_name = "fk_plan_" + op;
  c->run_ = reinterpret_cast<fk_op_fn>(dlsym(c->handle_, run_name.c_str()));
  if (!c->run_)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "candidate ", library.string(), " does not export ", run_name,
            " (the task's op is '", op, "')");
  c->plan_ = reinterpret_cast<fk_op_fn>(dlsym(c->handle_, plan_name.c_str()));
  return c;
}

LoadedCandidate::~LoadedCandidate() {
  // Deliberately not dlclose'd: CUDA kernels registered by the library may still be
  // referenced by the runtime until process exit (each evaluation runs in its own worker).
}

std::vector<std::string> imported_symbols(const fs::path& library) {
  std::ifstream in(library, std::ios::binary);
  FK_CHECK(in.good(), "cannot read ", library.string());
  std::string data((std::istreambuf_iterator<char>(in)), {});
  auto need = [&](size_t off, size_t n) {
    FK_CHECK(off + n <= data.size() && off + n >= off, library.string(), " is not a valid ELF file");
  };
  need(0, sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof(eh));
  FK_CHECK(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64,
           library.string(), " is not a 64-bit ELF file");
  need(eh.e_shoff, static_cast<size_t>(eh.e_shnum) * sizeof(Elf64_Shdr));
  std::vector<std::string> out;
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, data.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(sh));
    if (sh.sh_type != SHT_DYNSYM) continue;
    FK_CHECK(sh.sh_link < eh.e_shnum, library.string(), ": bad .dynsym link");
    Elf64_Shdr str;
    std::memcpy(&str, data.data() + eh.e_shoff + sh.sh_link * sizeof(Elf64_Shdr), sizeof(str));
    need(sh.sh_offset, sh.sh_size);
    need(str.sh_offset, str.sh_size);
    for (size_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, data.data() + sh.sh_offset + off, sizeof(sym));
      if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0 || sym.st_name >= str.sh_size) continue;
      const char* name = data.data() + str.sh_offset + sym.st_name;
      out.emplace_back(name, strnlen(name, str.sh_size - sym.st_name));
    }
  }
  return out;
}

std::string forbidden_import(const std::vector<std::string>& imports, const std::vector<std::string>& forbid) {
  for (const auto& sym : imports)
    for (const auto& lib : forbid) {
      const bool hit = (lib == "cublas" && sym.rfind("cublas", 0) == 0) ||
                       (lib == "cublasLt" && sym.rfind("cublasLt", 0) == 0) ||
                       (lib == "cudnn" && sym.rfind("cudnn", 0) == 0) ||
                       (lib == "baseline" && sym.find("fk") != std::string::npos);
      if (hit) return sym;
    }
  return "";
}

}  // namespace fk::bench
