#include "cli/variant_option.h"

#include "fk/op_registry.h"
#include "fk/status.h"

namespace fk::cli {

void add_variant_option(CLI::App* cmd, std::vector<std::string>& specs) {
  cmd->add_option("--variant", specs,
                  "Kernel variant of an op instead of its default path: op=name, op=a+b for several; repeatable "
                  "(`fk ops variants` lists them; FK_VARIANTS='op=a,op2=b' does the same)")
      ->allow_extra_args(false);  // one spec per --variant: a positional argument after it stays one
}

void select_variants(const std::vector<std::string>& specs) {
  for (const std::string& s : specs) OpRegistry::global().select_variants_from_string(s);
}

std::vector<std::string> variant_args() {
  const OpRegistry& r = OpRegistry::global();
  // Every op with variants, the unselected ones as "op=" (its default): a worker inherits
  // this process's FK_VARIANTS, which must not add a variant that this process does not run.
  std::string spec;
  std::string op;
  for (const OpVariantInfo& v : r.variants()) {
    if (v.op != op) {
      spec += concat(spec.empty() ? "" : ",", v.op, "=");
      op = v.op;
    }
    if (r.variant_on(v.op, v.name)) spec += concat(spec.back() == '=' ? "" : "+", v.name);
  }
  if (spec.empty()) return {};
  return {"--variant", spec};
}

}  // namespace fk::cli
