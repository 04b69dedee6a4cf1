#include "cli/model_lookup.h"

namespace fk::cli {

models::ModelSource lookup_model(const std::string& model, models::RunPattern runnable, std::string_view backend,
                                 std::string_view command) {
  models::ModelSource s = models::resolve_model(model);
  models::check_runnable(s, runnable, backend, command);
  return s;
}

}  // namespace fk::cli
