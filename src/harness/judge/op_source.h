// Finding an op's declaration and reference in the source tree, for `fk kernels show`,
// candidate stubs and the agent's prompt (the contract is the header text itself).
#pragma once
#include <filesystem>
#include <string>

#include "fk/op_registry.h"

namespace fk::bench {

std::filesystem::path source_root();  // $FK_SOURCE_ROOT or the tree this build came from
// The argument struct of an op with its leading comment, cut from its header (op_header).
std::string op_declaration(const OpDef& def);
// Header to include for the op (e.g. "fk/ops/norm.h"): the one under include/fk/ops/ that
// declares it, else include/fk/ops/<family>.h.
std::string op_header(const OpDef& def);
// Name of the argument struct (e.g. "RmsNormArgs"), read from the declaration.
std::string op_args_struct(const OpDef& def);
// Files under src/ops/<family>/ that register the op's CPU reference.
std::vector<std::filesystem::path> op_reference_files(const OpDef& def);

}  // namespace fk::bench
