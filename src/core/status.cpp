#include "fk/status.h"

namespace fk {

const char* status_name(fk_status s) {
  switch (s) {
    case FK_OK: return "OK";
    case FK_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case FK_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case FK_ERR_CUDA: return "CUDA_ERROR";
    case FK_ERR_INTERNAL: return "INTERNAL";
    case FK_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    default: return "UNKNOWN_STATUS";
  }
}

void throw_error(fk_status code, const std::string& msg, std::source_location loc) {
  std::string file = loc.file_name();
  // Keep paths short and machine-independent: from "src/" or "include/" on.
  for (const char* root : {"/src/", "/include/", "/tests/"}) {
    if (auto pos = file.rfind(root); pos != std::string::npos) {
      file = file.substr(pos + 1);
      break;
    }
  }
  throw Error(concat(msg, " [", file, ":", loc.line(), "]"), code);
}

namespace {
thread_local std::string g_last_error;
}
const char* last_error_message() { return g_last_error.c_str(); }
void set_last_error_message(const std::string& msg) { g_last_error = msg; }

}  // namespace fk
