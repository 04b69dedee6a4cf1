// Packed variable-length sequences in op tests: the cu_seqlens tensor of a list of lengths
// (on the host, from 0), their total and their longest.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk::test {

inline Tensor offsets(const std::vector<int32_t>& lens) {
  Tensor t = Tensor::empty({static_cast<int64_t>(lens.size()) + 1}, DType::i32);
  t.data_as<int32_t>()[0] = 0;
  for (size_t i = 0; i < lens.size(); ++i) t.data_as<int32_t>()[i + 1] = t.data_as<int32_t>()[i] + lens[i];
  return t;
}

inline int32_t total(const std::vector<int32_t>& lens) {
  int32_t s = 0;
  for (int32_t l : lens) s += l;
  return s;
}

inline int32_t longest(const std::vector<int32_t>& lens) {
  int32_t m = 0;
  for (int32_t l : lens) m = std::max(m, l);
  return m;
}

}  // namespace fk::test
