#include "harness/sandbox/candidate.h"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string_view>

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

namespace {
// Calls fn(sym, name) for every named symbol of the library's symbol tables of the given
// types (SHT_DYNSYM, SHT_SYMTAB).
template <class Fn>
void for_each_symbol(const fs::path& library, std::initializer_list<uint32_t> types, Fn&& fn) {
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
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, data.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(sh));
    if (std::find(types.begin(), types.end(), sh.sh_type) == types.end()) continue;
    FK_CHECK(sh.sh_link < eh.e_shnum, library.string(), ": bad symbol table link");
    Elf64_Shdr str;
    std::memcpy(&str, data.data() + eh.e_shoff + sh.sh_link * sizeof(Elf64_Shdr), sizeof(str));
    need(sh.sh_offset, sh.sh_size);
    need(str.sh_offset, str.sh_size);
    for (size_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, data.data() + sh.sh_offset + off, sizeof(sym));
      if (sym.st_name == 0 || sym.st_name >= str.sh_size) continue;
      const char* name = data.data() + str.sh_offset + sym.st_name;
      fn(sym, std::string(name, strnlen(name, str.sh_size - sym.st_name)));
    }
  }
}
}  // namespace

std::vector<std::string> imported_symbols(const fs::path& library) {
  std::vector<std::string> out;
  for_each_symbol(library, {SHT_DYNSYM}, [&](const Elf64_Sym& sym, std::string name) {
    if (sym.st_shndx == SHN_UNDEF) out.push_back(std::move(name));
  });
  return out;
}

std::string kernel_of_launch_stub(const std::string& symbol) {
  // _Z[L]<n>__device_stub_<kernel's mangled name><the stub's parameter types>: the first n
  // characters after the length are the stub's own name.
  size_t pos = symbol.rfind("_ZL", 0) == 0 ? 3 : symbol.rfind("_Z", 0) == 0 ? 2 : std::string::npos;
  if (pos == std::string::npos) return "";
  size_t n = 0;
  const size_t digits = pos;
  while (pos < symbol.size() && std::isdigit(static_cast<unsigned char>(symbol[pos])))
    n = n * 10 + static_cast<size_t>(symbol[pos++] - '0');
  static constexpr std::string_view kStub = "__device_stub_";
  if (pos == digits || n <= kStub.size() || pos + n > symbol.size() || symbol.compare(pos, kStub.size(), kStub) != 0)
    return "";
  return symbol.substr(pos + kStub.size(), n - kStub.size());
}

std::vector<std::string> defined_functions(const fs::path& library) {
  std::vector<std::string> out;
  for_each_symbol(library, {SHT_SYMTAB, SHT_DYNSYM}, [&](const Elf64_Sym& sym, std::string name) {
    if (sym.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym.st_info) != STT_FUNC) return;
    if (std::string kernel = kernel_of_launch_stub(name); !kernel.empty()) out.push_back(std::move(kernel));
    out.push_back(std::move(name));
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
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
