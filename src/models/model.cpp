#include "models/model.h"

namespace fk::models {

std::string_view run_pattern_name(RunPattern pattern) {
  switch (pattern) {
    case RunPattern::generate: return "generate";
    case RunPattern::denoise: return "denoise";
    case RunPattern::batch: return "batch";
  }
  return "invalid";
}

std::optional<RunPattern> run_pattern_from_name(std::string_view name) {
  for (RunPattern p : {RunPattern::generate, RunPattern::denoise, RunPattern::batch})
    if (run_pattern_name(p) == name) return p;
  return std::nullopt;
}

}  // namespace fk::models
