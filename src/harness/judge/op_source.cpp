#include "harness/judge/op_source.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "fk/toolchain_config.h"

namespace fk::bench {

namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}
}  // namespace

fs::path source_root() {
  if (const char* r = std::getenv("FK_SOURCE_ROOT")) return r;
  return FK_SOURCE_ROOT;
}

// The header of include/fk/ops/ that declares the op (its struct's kName), in name order:
// a family may spread its ops over several headers (the ssm ops: ssm_conv.h, gated_delta.h).
// Falls back to the family's own header.
std::string op_header(const OpDef& def) {
  const fs::path dir = source_root() / "include" / "fk" / "ops";
  const std::string key = "kName = \"" + def.name + "\"";
  std::vector<fs::path> headers;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".h") headers.push_back(e.path());
  std::sort(headers.begin(), headers.end());
  for (const fs::path& h : headers)
    if (slurp(h).find(key) != std::string::npos) return "fk/ops/" + h.filename().string();
  return "fk/ops/" + def.family + ".h";
}

std::string op_declaration(const OpDef& def) {
  const std::string text = slurp(source_root() / "include" / op_header(def));
  const std::string key = "kName = \"" + def.name + "\"";
  const size_t at = text.find(key);
  if (at == std::string::npos) return "";
  size_t start = text.rfind("\nstruct ", at);
  if (start == std::string::npos) return "";
  // Include the comment block right above the struct.
  size_t comment = start;
  while (comment > 0) {
    const size_t prev = text.rfind('\n', comment - 1);
    const size_t line = prev == std::string::npos ? 0 : prev + 1;
    if (text.compare(line, 2, "//") != 0) break;
    comment = prev == std::string::npos ? 0 : prev;
  }
  const size_t end = text.find("\n};", at);
  if (end == std::string::npos) return "";
  return text.substr(comment + 1, end + 3 - comment - 1);
}

std::string op_args_struct(const OpDef& def) {
  const std::string decl = op_declaration(def);
  const size_t s = decl.find("struct ");
  if (s == std::string::npos) return "";
  std::istringstream in(decl.substr(s + 7));
  std::string name;
  in >> name;
  return name;
}

std::vector<fs::path> op_reference_files(const OpDef& def) {
  std::vector<fs::path> out;
  const fs::path dir = source_root() / "src" / "ops" / def.family;
  if (!fs::is_directory(dir)) return out;
  const std::string key = "FK_REGISTER_IMPL(\"" + def.name + "\", cpu";
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".cpp" && slurp(e.path()).find(key) != std::string::npos) out.push_back(e.path());
  return out;
}

}  // namespace fk::bench
