// Helpers for an op's make_case: reading workload fields with errors that name them,
// and filling the case's tensors from Philox streams.
#pragma once
#include <cstdint>
#include <string>

#include "fk/op_registry.h"
#include "fk/random.h"

namespace fk::ops {

int64_t wl_int(const Json& w, const char* key);
int64_t wl_int(const Json& w, const char* key, int64_t fallback);
double wl_float(const Json& w, const char* key, double fallback);
bool wl_bool(const Json& w, const char* key, bool fallback);
std::string wl_string(const Json& w, const char* key, const std::string& fallback);
DType wl_dtype(const Json& w, const char* key = "dtype", DType fallback = DType::bf16);
// A list of ints (e.g. per-sequence lengths).
std::vector<int64_t> wl_int_list(const Json& w, const char* key);

// Starts a case for Args: zeroed struct of the right size, tensors slots for the layout.
template <class Args>
OpCase begin_case(const Json& workload, size_t num_tensors) {
  OpCase c;
  c.workload = workload;
  c.args.assign(sizeof(Args), std::byte{0});
  new (c.args.data()) Args{};
  c.tensors.resize(num_tensors);
  return c;
}

// An absent optional tensor of a case: no elements (ops treat it as not given).
inline Tensor absent_tensor(DType dtype) { return Tensor::empty({0}, dtype); }

// Host tensor with uniform values in [lo, hi). `stream_id` separates the Philox streams of
// a case's tensors (the offset), so each input is independent of the others.
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream_id, float lo = -1.f,
                     float hi = 1.f);
Tensor random_int_tensor(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream_id, int64_t lo,
                         int64_t hi);

}  // namespace fk::ops
