// Checks of token-packed variable-length batches (sequences concatenated along the token
// dimension, sequence b owning tokens [cu_seqlens[b], cu_seqlens[b + 1])), shared by the
// ssm ops: the metadata tensors' form on any backend, and their values where they can be
// read without a device sync (the CPU reference, which is also the oracle).
#pragma once
#include <climits>
#include <cstdint>
#include <vector>

#include "fk/element.h"
#include "ops/common/validate.h"

namespace fk::ops {

// cu_seqlens: [B + 1] contiguous i32 on the backend, so B = shape[0] - 1 >= 0.
inline void expect_cu_seqlens(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_rank(op, arg, v, 1);
  expect_device(op, arg, v, backend);
  expect_dtype(op, arg, v, DType::i32);
  expect_contiguous(op, arg, v);
  FK_CHECK(v.shape[0] >= 1 && v.shape[0] - 1 <= INT_MAX, op, ": ", arg,
           " must be [batch + 1] with 0 <= batch <= 2^31-1, got ", describe(v));
}

// One value per sequence: [B] contiguous, of dtype `t`, on the backend.
inline void expect_per_sequence(const char* op, const char* arg, const TensorView& v, int64_t batch, DType t,
                                DeviceType backend) {
  expect_rank(op, arg, v, 1);
  expect_device(op, arg, v, backend);
  expect_dim(op, arg, v, 0, batch);
  expect_dtype(op, arg, v, t);
  expect_contiguous(op, arg, v);
}

// The values of a host cu_seqlens: 0 first, non-decreasing, `tokens` last. Returns them.
inline std::vector<int64_t> read_cu_seqlens(const char* op, const char* arg, const TensorView& v, int64_t tokens) {
  std::vector<int64_t> cu(static_cast<size_t>(v.shape[0]));
  for (int64_t i = 0; i < v.shape[0]; ++i) cu[static_cast<size_t>(i)] = get_index(v, i);
  FK_CHECK(cu.front() == 0, op, ": ", arg, "[0] must be 0, got ", cu.front());
  for (size_t i = 1; i < cu.size(); ++i)
    FK_CHECK(cu[i] >= cu[i - 1], op, ": ", arg, " must be non-decreasing, but ", arg, "[", i, "] = ", cu[i], " < ",
             arg, "[", i - 1, "] = ", cu[i - 1]);
  FK_CHECK(cu.back() == tokens, op, ": ", arg, "[batch] must be the token count ", tokens, ", got ", cu.back());
  return cu;
}

}  // namespace fk::ops
