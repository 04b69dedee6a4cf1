// The variants of the rope kernels' ops (rotary_embedding, qk_norm_rope, rope_and_cache)
// other than no_pdl (ops/common/pdl_variant.h). Plain C++: CPU builds list them too.
#pragma once
#include <string_view>

namespace fk::ops {

// late_reads: the kernel reads positions, cos/sin rows, slots and norm weights after its
// PDL wait rather than before it (rope_kernels.cuh says why before is the default).
// False for an op without the variant.
bool rope_late_reads(std::string_view op);

}  // namespace fk::ops
