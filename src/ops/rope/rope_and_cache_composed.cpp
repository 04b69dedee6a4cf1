// rope_and_cache composed of registry calls, in the order its contract names: the rotation
// (qk_norm_rope when q/k norm weights are given, else rotary_embedding) in place, then
// reshape_and_cache of the rotated key and the value (16-bit caches: no scales).
#include "ops/rope/rope_and_cache_composed.h"

#include "fk/op_registry.h"
#include "fk/ops/kv_cache.h"
#include "fk/ops/rope.h"
#include "fk/status.h"
#include "ops/common/validate.h"

namespace fk::ops {

template <DeviceType Backend>
fk_status rope_and_cache_composed(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RopeAndCacheArgs*>(args);
    if (arg_present(a.q_weight))
      call_op(QkNormRopeArgs{a.positions, a.query, a.key, a.q_weight, a.k_weight, a.cos_sin_cache, a.head_size,
                             a.style, a.eps},
              Backend, stream);
    else
      call_op(RotaryEmbeddingArgs{a.positions, a.query, a.key, a.cos_sin_cache, a.head_size, a.style}, Backend,
              stream);
    call_op(ReshapeAndCacheArgs{a.key, a.value, a.k_cache, a.v_cache, a.slot_mapping, TensorView{}, TensorView{}},
            Backend, stream);
  });
}

template fk_status rope_and_cache_composed<DeviceType::cpu>(const void*, void*);
template fk_status rope_and_cache_composed<DeviceType::cuda>(const void*, void*);

FK_REGISTER_VARIANT("rope_and_cache", "unfused",
                    "the rope (qk_norm_rope or rotary_embedding), then reshape_and_cache, as separate registry calls");

}  // namespace fk::ops
