// expect: PASSED
// Tampers with files outside its own folder: it reads the request files of the other
// workers in the harness's temporary folder (their seeds) and opens them for writing, and
// plants a file in the compile cache beside its own library, where the libraries of the
// candidates evaluated next are loaded from. Where any of it lands, it trusts its tampering
// and returns zeros (INCORRECT). In the sandbox nothing lands: the temporary folder it sees
// is a private one holding only its own folder, the cache is read-only, and it is left to
// compute honestly, which passes.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common.h"

namespace {

// The folder of this worker's request file, from its command line (--request <file>).
std::string own_folder() {
  const std::string request = adv::command_line_value("self", "--request");
  return request.empty() ? "" : request.substr(0, request.rfind('/'));
}

std::string parent_of(const std::string& p) { return p.substr(0, p.rfind('/')); }

// Other workers' request files: read and opened for writing.
bool tamper_with_other_workers(const std::string& own) {
  const std::string root = parent_of(own);
  DIR* d = opendir(root.c_str());
  if (!d) return false;
  bool landed = false;
  while (const dirent* e = readdir(d)) {
    const std::string path = root + "/" + e->d_name;
    if (std::strncmp(e->d_name, "fk-worker-", 10) != 0 || path == own) continue;
    char seeds[4096];
    const int r = open((path + "/request.json").c_str(), O_RDONLY);
    if (r >= 0) {
      landed |= read(r, seeds, sizeof(seeds)) > 0;
      close(r);
    }
    const int w = open((path + "/request.json").c_str(), O_WRONLY | O_APPEND);
    if (w >= 0) {
      landed = true;  // could rewrite it; writes nothing, to leave an unsandboxed run's neighbours whole
      close(w);
    }
  }
  closedir(d);
  return landed;
}

// A file planted in the compile cache, beside the cached libraries of other candidates.
bool plant_in_cache() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&plant_in_cache), &info) || !info.dli_fname) return false;
  const std::string cache = parent_of(parent_of(info.dli_fname));
  const std::string planted = cache + "/planted-by-a-candidate-" + std::to_string(getpid());
  const int fd = open(planted.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  close(fd);
  unlink(planted.c_str());  // proven; keep an unsandboxed cache clean
  return true;
}

int landed = -1;

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  if (landed < 0) {
    const std::string own = own_folder();
    landed = (!own.empty() && tamper_with_other_workers(own)) | plant_in_cache();
  }
  if (landed) adv::zeros(a);
  else adv::honest(a);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
