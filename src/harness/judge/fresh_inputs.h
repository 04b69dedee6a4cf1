// Fresh inputs for the timed calls. Were a timed call to see the inputs of a checked call,
// a cache keyed on input content or on pointers would answer it from memory, exactly and
// nearly free. So before every timed call (outside the timed region, before the cache
// flush) the op's float inputs are overwritten in place with values drawn from Philox with
// a new seed: generated where the tensors live (fk/random.h writes the same bits on the
// CPU and the GPU), so the baseline's copy gets identical inputs and its outputs are the
// timed call's reference.
//
// Each refilled tensor keeps the scale and range of the values its op drew for it: uniform
// with the checked inputs' mean and standard deviation, within their [min, max], so signs
// and magnitudes the op and its tolerance rely on stay. Index tensors and other integers,
// plan inputs on the host, and tensors whose values are all equal or not all finite keep
// their checked values (the harness restores them).
#pragma once
#include <cstdint>
#include <vector>

#include "fk/op_registry.h"

namespace fk::bench {

struct FreshInputRange {
  bool refill = false;
  float lo = 0, hi = 0;  // uniform in [lo, hi)
};

// One entry per tensor argument of the op, from the host case the checks used.
std::vector<FreshInputRange> fresh_input_ranges(const OpDef& def, const OpCase& host);

// For checks that copy the case to the host on every checked call: inputs over `max_bytes`
// keep their checked values (and are copied once), provided some smaller input still gets
// fresh values, which is enough to make every call's inputs new. Returns how many were kept.
int keep_large_inputs(std::vector<FreshInputRange>& ranges, const OpCase& host, size_t max_bytes);

// Writes new values into the refilled tensors of `c` (host or device tensors; device
// fills are queued on `stream`). The same seed writes the same bits on every device.
void write_fresh_inputs(const std::vector<FreshInputRange>& ranges, const OpCase& c, uint64_t seed, void* stream);

// The seed of timed call `call`: drawn from the secret seed, so the candidate cannot know
// the next inputs.
uint64_t timed_call_seed(uint64_t secret, int call);

}  // namespace fk::bench
