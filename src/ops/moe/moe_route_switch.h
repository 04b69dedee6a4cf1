// Whether fused_moe's decode path routes inside the GEMV kernels (moe_decode_gemv.h):
// FK_MOE_ROUTE_IN_KERNEL=1, off by default (fused_moe.cu says why); tests switch it with
// set_route_in_kernel. No CUDA types: CPU builds compile the tests that use it.
#pragma once

namespace fk::ops::moe_decode {

bool route_in_kernel();
void set_route_in_kernel(bool on);

}  // namespace fk::ops::moe_decode
