// --model through the model registry, for the commands that run a model (run, bench): the
// registered architecture behind a preset or checkpoint folder, and a named error where the
// command has no runner for its pattern or backend.
#pragma once
#include <string>
#include <string_view>

#include "models/registry.h"

namespace fk::cli {

// The --model help of commands that run registered models.
inline constexpr const char* kModelHelp =
    "A preset of `fk models list` (production presets run with dummy weights) or a checkpoint folder";

// Resolves `model` (throws listing the presets and pointing to `fk models list`) and checks
// that `command` can run it: its pattern is `runnable` and `backend` ("cpu", "cuda") is
// one of its registration's backends.
models::ModelSource lookup_model(const std::string& model, models::RunPattern runnable, std::string_view backend,
                                 std::string_view command);

}  // namespace fk::cli
