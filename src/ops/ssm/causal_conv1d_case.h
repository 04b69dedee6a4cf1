// Case building shared by the causal_conv1d ops' definitions: the workload fields both
// read, and their weights, conv-state pool and slot assignment drawn from Philox streams.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/op_registry.h"

namespace fk::ops::conv_case {

// Fields: dim (channels, required), width (taps, 4), dtype (bf16), bias (false: Qwen3-Next's
// and Mamba's convs have one only in some checkpoints), silu (true), extra_slots (pool slots
// beyond the sequences', 2), padding (indices of padding sequences, none).
struct ConvShape {
  int64_t dim, width;
  DType dtype;
  bool bias, silu;
  int64_t extra_slots;
  std::vector<int64_t> padding;
};
ConvShape conv_shape(const Json& w, const char* op);

// Philox stream ids of a case's random tensors.
enum : uint64_t { kStreamX = 1, kStreamWeight = 2, kStreamBias = 3, kStreamState = 4, kStreamSlots = 5, kStreamInitial = 6 };

Tensor conv_weight(const ConvShape& s, uint64_t seed);
Tensor conv_bias_or_absent(const ConvShape& s, uint64_t seed);  // absent_tensor() when the workload has none
// The pool: batch + extra_slots slots of random state (every slot holds data, the unused too).
Tensor conv_state_pool(const ConvShape& s, int64_t batch, uint64_t seed);
// Each sequence's slot: the first `batch` entries of a random permutation of the pool's
// slots (so neighbours in the batch are not neighbours in the pool); padding ones -1.
Tensor conv_state_indices(const ConvShape& s, int64_t batch, uint64_t seed);
Tensor i32_vector(const std::vector<int64_t>& v);

// The bytes a call must move besides x and out: weight, bias, and each non-padding
// sequence's state read and written.
double conv_weight_and_state_bytes(const TensorView& weight, const TensorView& bias, const TensorView& conv_state,
                                   int64_t sequences);

// A device or host i32/bool vector read on the host (a captured call's metadata; the
// capture synchronises the stream around every call).
std::vector<int64_t> read_ints(const TensorView& v);

}  // namespace fk::ops::conv_case
