#include "harness/sandbox/compile.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "harness/sandbox/subprocess.h"
#include "fk/op.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"
#include "fk/toolchain_config.h"

namespace fk::bench {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  FK_CHECK(in.good(), "cannot read ", p.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool is_source(const fs::path& p) {
  const auto e = p.extension();
  return e == ".cu" || e == ".cpp" || e == ".cuh" || e == ".h" || e == ".hpp";
}
bool is_translation_unit(const fs::path& p) { return p.extension() == ".cu" || p.extension() == ".cpp"; }

// The files `source` includes with quotes ("x.h") that exist beside it or in `root` (a
// folder candidate's own -I), and theirs, each once: what a single-file candidate's build
// reads besides itself. The engine's headers (<fk/...>, the toolchain's -I folders) are
// not followed: they belong to the build, whose description is in the key already.
void local_includes(const fs::path& source, const fs::path& root, std::vector<fs::path>& found) {
  std::istringstream in(read_file(source));
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
    const size_t open = line.find('"', i + 7);
    const size_t close = open == std::string::npos ? open : line.find('"', open + 1);
    if (close == std::string::npos) continue;
    const std::string name = line.substr(open + 1, close - open - 1);
    for (const fs::path& dir : {source.parent_path(), root}) {
      std::error_code ec;
      const fs::path p = fs::weakly_canonical(dir / name, ec);
      if (ec || !fs::is_regular_file(p, ec)) continue;
      if (std::find(found.begin(), found.end(), p) == found.end()) {
        found.push_back(p);
        local_includes(p, root, found);
      }
      break;
    }
  }
}

}  // namespace

Toolchain Toolchain::engine() {
  Toolchain t;
  t.cxx = FK_TC_CXX;
  t.cxx_flags = FK_TC_CXX_FLAGS;
  t.cxx_version = FK_TC_CXX_VERSION;
  t.nvcc = FK_TC_NVCC;
  t.cuda_flags = FK_TC_CUDA_FLAGS;
  t.cuda_version = FK_TC_CUDA_VERSION;
  t.include_dirs = split(FK_TC_INCLUDE_DIRS, ';');
  // An offline pack or an installed tree may sit elsewhere than the build recorded.
  if (const char* inc = std::getenv("FK_CANDIDATE_INCLUDE_DIRS")) t.include_dirs = split(inc, ':');
  return t;
}

std::string Toolchain::describe() const {
  return has_cuda() ? concat("nvcc ", cuda_version, " [", cuda_flags, "] + ", cxx_version)
                    : concat(cxx_version, " [", cxx_flags, "]");
}

std::string hash_hex(const std::string& bytes) {
  // Two XXH64 lanes with different seeds give a 128-bit cache key; a collision would only
  // cost a wrong cache hit, never a verdict.
  const uint64_t a = safetensors::content_hash64(bytes.data(), bytes.size(), 0);
  const uint64_t b = safetensors::content_hash64(bytes.data(), bytes.size(), 0x9E3779B97F4A7C15ull);
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return out;
}

fs::path default_cache_dir() {
  if (const char* d = std::getenv("FK_CACHE_DIR")) return fs::path(d) / "candidates";
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".cache" / "fastkernels" / "candidates";
  return fs::temp_directory_path() / "fastkernels" / "candidates";
}

std::vector<fs::path> candidate_sources(const fs::path& candidate) {
  FK_CHECK(fs::exists(candidate), "candidate ", candidate.string(), " does not exist");
  std::vector<fs::path> out;
  if (fs::is_directory(candidate)) {
    for (const auto& e : fs::recursive_directory_iterator(candidate))
      if (e.is_regular_file() && is_source(e.path())) out.push_back(e.path());
    std::sort(out.begin(), out.end());
  } else {
    FK_CHECK(is_translation_unit(candidate), "candidate ", candidate.string(), " must be a .cu or .cpp file or a folder");
    out.push_back(candidate);
  }
  FK_CHECK(std::any_of(out.begin(), out.end(), is_translation_unit), "candidate ", candidate.string(),
           " holds no .cu or .cpp file");
  return out;
}

bool is_cuda_candidate(const fs::path& candidate) {
  for (const auto& p : candidate_sources(candidate))
    if (p.extension() == ".cu") return true;
  return false;
}

CompileResult compile_candidate(const fs::path& candidate, const CompileOptions& opts) {
  CompileResult r;
  const Toolchain tc = Toolchain::engine();
  const auto sources = candidate_sources(candidate);
  const bool cuda = is_cuda_candidate(candidate);
  if (cuda && !tc.has_cuda()) {
    r.log = "a CUDA candidate (.cu) needs a CUDA build of fastkernels; this one is CPU-only";
    return r;
  }

  std::vector<std::string> cmd = {cuda ? tc.nvcc : tc.cxx};
  for (const auto& f : split(cuda ? tc.cuda_flags : tc.cxx_flags, ' ')) cmd.push_back(f);
  cmd.push_back("-DFK_CANDIDATE=1");
  cmd.push_back(concat("-DFK_CANDIDATE_ABI=", FK_ABI_VERSION));
  for (const auto& d : tc.include_dirs) cmd.push_back("-I" + d);
  if (fs::is_directory(candidate)) cmd.push_back("-I" + candidate.string());
  cmd.push_back("-shared");
  if (cuda) cmd.push_back("-cudart=shared");

  // The key: the toolchain, the command, and every file the build reads that is not the
  // engine's: the candidate's sources and the headers they include with quotes (a header
  // edited beside a single-file candidate must not reuse the library built before).
  const fs::path root = fs::is_directory(candidate) ? candidate : candidate.parent_path();
  std::vector<fs::path> read = sources;
  for (const auto& p : sources) local_includes(p, root, read);
  std::string key = tc.describe();
  for (const auto& a : cmd) key += "\x1f" + a;
  for (const auto& p : read) {
    key += "\x1e" + fs::weakly_canonical(p).lexically_relative(fs::weakly_canonical(root)).string();
    key += "\x1d" + read_file(p);
  }
  r.source_hash = hash_hex(key);

  const fs::path dir = (opts.cache_dir.empty() ? default_cache_dir() : opts.cache_dir) / r.source_hash;
  const fs::path lib = dir / "candidate.so";
  r.library = lib;
  if (opts.use_cache && fs::exists(lib)) {
    r.ok = true;
    r.cached = true;
    if (fs::exists(dir / "compile.log")) r.log = read_file(dir / "compile.log");
    return r;
  }
  fs::create_directories(dir);
  const fs::path tmp = dir / concat("candidate.so.tmp", getpid());
  for (const auto& p : sources)
    if (is_translation_unit(p)) cmd.push_back(fs::absolute(p).string());
  cmd.push_back("-o");
  cmd.push_back(tmp.string());
  for (const auto& a : cmd) r.command += (r.command.empty() ? "" : " ") + a;

  ProcessOptions po;
  po.timeout_s = opts.timeout_s;
  const ProcessResult pr = run_process(cmd, po);
  r.seconds = pr.seconds;
  r.log = pr.output;
  r.timed_out = pr.timed_out;
  if (pr.timed_out) r.log += concat("\ncompilation timed out after ", opts.timeout_s, " s");
  r.ok = pr.exited() && pr.exit_code == 0 && fs::exists(tmp);
  if (r.ok) {
    fs::rename(tmp, lib);  // atomic: concurrent compiles of the same source never see half a file
    std::ofstream(dir / "compile.log") << r.log;
  } else {
    std::error_code ec;
    fs::remove(tmp, ec);
    if (!pr.timed_out && !pr.exited()) r.log += "\ncompiler " + pr.describe();
  }
  return r;
}

}  // namespace fk::bench
