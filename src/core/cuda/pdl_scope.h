// Turns programmatic dependent launch (fk/cuda/pdl.cuh) off for the launches that this
// thread makes while the scope lives: how an op's variant "no_pdl" reaches launch_pdl(),
// which sets the launch attribute without knowing the op (ops/common/pdl_variant.h).
// Scopes nest; each restores what it found.
#pragma once

namespace fk::cuda {

class PdlOffScope {
 public:
  explicit PdlOffScope(bool off);
  ~PdlOffScope();
  PdlOffScope(const PdlOffScope&) = delete;
  PdlOffScope& operator=(const PdlOffScope&) = delete;

 private:
  bool previous_;
};

}  // namespace fk::cuda
