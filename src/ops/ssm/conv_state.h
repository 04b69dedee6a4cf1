// The conv-state pool of the causal_conv1d ops (fk/ops/ssm_conv.h): [S, D, W - 1], each
// slot stored as [D, W - 1] or as its transpose [W - 1, D], the slot stride free. Checks
// of its form, and the reading of the slot indices where they can be read (the CPU
// reference).
#pragma once
#include <cstdint>
#include <set>
#include <vector>

#include "fk/element.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Whether a slot of `s` is [D, W - 1] packed (channel-major) or [W - 1, D] packed
// (token-major); false when it is neither.
inline bool conv_state_channel_major(const TensorView& s) { return s.strides[2] == 1 && s.strides[1] == s.shape[2]; }
inline bool conv_state_token_major(const TensorView& s) { return s.strides[1] == 1 && s.strides[2] == s.shape[1]; }

// conv_state: [S, D, W - 1] of the model dtype (f64 allowed where the CPU oracle writes it),
// on the backend, in one of the two slot layouts, slots not overlapping each other.
inline void expect_conv_state(const char* op, const TensorView& s, int64_t D, int64_t W, DType model,
                              DeviceType backend) {
  const char* arg = "conv_state";
  expect_rank(op, arg, s, 3);
  expect_device(op, arg, s, backend);
  FK_CHECK(s.shape[1] == D && s.shape[2] == W - 1, op, ": conv_state must be [slots, ", D, ", ", W - 1,
           "] (channels of x, width - 1 of weight), got ", describe(s));
  expect_written_dtype(op, arg, s, model, backend);
  FK_CHECK(conv_state_channel_major(s) || conv_state_token_major(s), op,
           ": each conv_state slot must be packed as [channels, width - 1] (strides ", W - 1,
           ", 1) or as its transpose (strides 1, ", D, "), got strides (", s.strides[1], ", ", s.strides[2], ") in ",
           describe(s));
  FK_CHECK(s.shape[0] <= 1 || s.strides[0] >= D * (W - 1), op, ": conv_state slots must not overlap (slot stride ",
           s.strides[0], " < ", D * (W - 1), ")");
  FK_CHECK(s.shape[0] <= INT32_MAX, op, ": conv_state has more than 2^31-1 slots: ", describe(s));
}

// The slot of each sequence from a host state_indices: < 0 is padding; the others must be
// below the pool's slot count and distinct.
inline std::vector<int64_t> read_state_indices(const char* op, const TensorView& idx, int64_t slots) {
  std::vector<int64_t> out(static_cast<size_t>(idx.shape[0]));
  std::set<int64_t> seen;
  for (int64_t b = 0; b < idx.shape[0]; ++b) {
    const int64_t s = get_index(idx, b);
    FK_CHECK(s < slots, op, ": state_indices[", b, "] = ", s, " is outside the conv_state pool of ", slots, " slots");
    FK_CHECK(s < 0 || seen.insert(s).second, op, ": state_indices[", b, "] = ", s,
             " names a slot another sequence of the call uses");
    out[static_cast<size_t>(b)] = s;
  }
  return out;
}

}  // namespace fk::ops
