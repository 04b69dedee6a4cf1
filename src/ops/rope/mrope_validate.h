// Argument checks of mrope_rotary_embedding, shared by its CPU reference and CUDA baseline,
// and the axis each frequency reads (both implementations call mrope_axis).
#pragma once
#include "fk/ops/mrope.h"
#include "ops/rope/rope_validate.h"

namespace fk::ops {

// The positions row (0 temporal, 1 height, 2 width) frequency i reads; see fk/ops/mrope.h.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline int mrope_axis(int i, int s0, int s1, int s2, bool interleaved) {
  if (interleaved) {
    if (i % 3 == 1 && i < 3 * s1) return 1;
    if (i % 3 == 2 && i < 3 * s2) return 2;
    return 0;
  }
  return i < s0 ? 0 : (i < s0 + s1 ? 1 : 2);
}

inline RopeShape validate_mrope_rotary_embedding(const MropeRotaryEmbeddingArgs& a, RopeImpl impl) {
  constexpr const char* op = MropeRotaryEmbeddingArgs::kName;
  expect_rank(op, "positions", a.positions, 2);
  FK_CHECK(a.positions.shape[0] == 3, op, ": positions must be [3, T] (temporal, height, width rows), got ",
           describe(a.positions));
  // The common checks see one positions row: its length is the token count.
  TensorView row = a.positions;
  row.rank = 1;
  row.shape[0] = a.positions.shape[1];
  row.strides[0] = a.positions.strides[1];
  const RopeShape s =
      validate_rope_common(op, row, a.query, a.key, a.cos_sin_cache, a.head_size, RopeStyle::neox, impl);
  const int32_t* sec = a.mrope_section;
  FK_CHECK(sec[0] >= 0 && sec[1] >= 0 && sec[2] >= 0, op, ": mrope_section entries must be >= 0, got [", sec[0], ", ",
           sec[1], ", ", sec[2], "]");
  FK_CHECK(int64_t{sec[0]} + sec[1] + sec[2] == s.rot_dim / 2, op, ": mrope_section [", sec[0], ", ", sec[1], ", ",
           sec[2], "] must sum to rot_dim / 2 = ", s.rot_dim / 2, " (cos_sin_cache ", describe(a.cos_sin_cache), ")");
  FK_CHECK(a.interleaved == 0 || a.interleaved == 1, op, ": interleaved must be 0 or 1, got ", a.interleaved);
  if (a.interleaved) {
    // Each of h and w takes every third frequency from its first slot on; there must be
    // room for all of them below rot_dim / 2.
    const int64_t half = s.rot_dim / 2;
    FK_CHECK((sec[1] == 0 || 3 * int64_t{sec[1]} - 2 < half) && (sec[2] == 0 || 3 * int64_t{sec[2]} - 1 < half), op,
             ": interleaved mrope_section [", sec[0], ", ", sec[1], ", ", sec[2], "] does not fit rot_dim / 2 = ", half,
             " frequencies (the last height one, 3*h - 2, and width one, 3*w - 1, must be below it)");
  }
  return s;
}

}  // namespace fk::ops
