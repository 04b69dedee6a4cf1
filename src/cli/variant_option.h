// `--variant op=name` (repeatable; 'op=a+b' for several variants of one op), on every
// command that runs ops: selects kernel variants in the op registry before anything runs,
// over what FK_VARIANTS selected. `fk ops variants` lists them.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fk::cli {

void add_variant_option(CLI::App* cmd, std::vector<std::string>& specs);

// Selects each spec (an fk::Error names an unknown op or variant).
void select_variants(const std::vector<std::string>& specs);

// The current selection as command-line arguments ("--variant", one spec naming every op
// with variants), for a worker process that must run exactly this selection.
std::vector<std::string> variant_args();

}  // namespace fk::cli
