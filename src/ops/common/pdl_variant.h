// The variant "no_pdl", registered for every op whose kernels launch as programmatic
// dependents (fk/cuda/pdl.cuh): with it the op's kernels launch the ordinary way, each
// waiting for the whole of the kernel before it. PDL is a property of the launch, set by
// launch_pdl() deep inside shared kernel launchers that do not know the op; so the op's
// entry point (or the shared launcher that is given the op's name) opens a
// cuda::PdlOffScope with pdl_off_for(op) around its launches.
#pragma once
#include <string_view>

namespace fk::ops {

// True when `op` has no_pdl selected (false for an op without the variant).
bool pdl_off_for(std::string_view op);

}  // namespace fk::ops
