// The variants of the norm ops other than no_pdl (ops/common/pdl_variant.h). Plain C++: CPU
// builds list them too.
#pragma once
#include <string_view>

namespace fk::ops {

// late_weight: norm_rows_in_registers reads the weight after its PDL wait rather than
// before it (norm_kernels.cuh says why before is the default). False for an op without
// the variant.
bool norm_late_weight(std::string_view op);

}  // namespace fk::ops
