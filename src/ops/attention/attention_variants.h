// The variants of the paged attention ops shared by their paths (the contiguous-KV ones are
// in contiguous_kv_policy.h, no_pdl in ops/common/pdl_variant.h). Plain C++: CPU builds
// list them too.
#pragma once
#include <string_view>

namespace fk::ops::attn {

// no_paged_tma: the Hopper paged prefill (also decode's fallback for GQA groups the decode
// kernels lack) gathers KV pages with cp.async even where its TMA mainloop applies. False
// for an op without the variant.
bool paged_tma_off(std::string_view op);

}  // namespace fk::ops::attn
