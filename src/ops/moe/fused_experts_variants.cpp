// The variants of fused_experts' CUDA baseline (its paths, moe_decode_gemv.h and
// moe_grouped_prefill.h; fused_moe's experts run the same paths). Registered in a file
// that CPU builds compile too, so that every build lists them.
#include "fk/op_registry.h"

namespace fk::ops {
namespace {

FK_REGISTER_VARIANT("fused_experts", "tiled_decode",
                    "decode (up to 4 tokens) on the tiled mma.sync kernel instead of the GEMV kernels");
FK_REGISTER_VARIANT("fused_experts", "no_grouped_gemm",
                    "prefill on the tiled mma.sync kernel instead of the grouped GEMM path");
FK_REGISTER_VARIANT("fused_experts", "unfused_gate_up",
                    "grouped prefill's gate_up as a gather pass, the grouped GEMM and a silu pass");

}  // namespace
}  // namespace fk::ops
