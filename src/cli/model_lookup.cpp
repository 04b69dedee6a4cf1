#include "cli/model_lookup.h"

#include <algorithm>

#include "fk/status.h"

namespace fk::cli {

models::ModelSource lookup_model(const std::string& model, models::RunPattern runnable, std::string_view backend,
                                 std::string_view command) {
  models::ModelSource s = models::resolve_model(model);
  const models::ModelRegistration& r = *s.registration;
  if (r.pattern != runnable)
    FK_FAIL(FK_ERR_UNSUPPORTED, command, ": model '", model, "' (architecture '", r.architecture, "') runs by the ",
            models::run_pattern_name(r.pattern), " pattern, which has no runner in `", command, "` yet (it runs ",
            models::run_pattern_name(runnable), " models)");
  if (std::find(r.backends.begin(), r.backends.end(), backend) == r.backends.end()) {
    std::string have;
    for (const auto& b : r.backends) have += (have.empty() ? "" : ", ") + b;
    FK_FAIL(FK_ERR_UNSUPPORTED, command, ": architecture '", r.architecture, "' has no ", backend, " backend (it has: ",
            have, ")");
  }
  return s;
}

}  // namespace fk::cli
