// The CPU reference of rotary_embedding and qk_norm_rope, in double. It reads and writes
// through fk::load_element / store_element, so q and k may be any float dtype: the engine's
// (the CPU backend) or f64 (the oracle).
#pragma once
#include "fk/ops/rope.h"
#include "ops/rope/rope_validate.h"

namespace fk::ops {

struct RopeReferenceCall {
  const char* op = nullptr;
  RopeShape shape;
  TensorView positions, query, key, cos_sin_cache;
  RopeStyle style = RopeStyle::neox;
  // qk_norm_rope: per-head RMSNorm before the rotation (null weights: rope only).
  const TensorView* q_weight = nullptr;
  const TensorView* k_weight = nullptr;
  double eps = 0;
};

// Checks every position first (an error leaves q and k untouched), then rotates.
void rope_reference(const RopeReferenceCall& call);

// Rotates the first rot_dim values of one head in place (x: head_size doubles).
void rope_rotate_head(double* x, const double* cos_row, const double* sin_row, int64_t rot_dim, RopeStyle style);

}  // namespace fk::ops
