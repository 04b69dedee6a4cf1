#include "ops/sampling/logits_processors_case.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"

namespace fk::ops {

Tensor processor_logits(int64_t B, int64_t V, DType dtype, float range, uint64_t seed) {
  Tensor t = random_tensor({B, V}, dtype, seed, 1, -range, range);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t v = 0; v < V; ++v)
      if (philox_int(seed, 20, static_cast<uint64_t>(b * V + v), 0, 50) == 0)
        set(t.view(), -std::numeric_limits<double>::infinity(), b, v);
  return t;
}

Tensor i32_tensor(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::i32);
  if (!v.empty()) std::memcpy(t.data(), v.data(), v.size() * sizeof(int32_t));
  return t;
}

TokenLists make_token_lists(int64_t B, int64_t V, int64_t max_prompt, int64_t max_output, uint64_t seed) {
  TokenLists l;
  std::vector<int32_t> tokens, indptr{0}, prompt_len;
  const int64_t alphabet = std::min<int64_t>(V, 64);
  uint64_t i = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t p = philox_int(kShapeSeed, 21, static_cast<uint64_t>(2 * b), 0, max_prompt + 1);
    const int64_t o = philox_int(kShapeSeed, 21, static_cast<uint64_t>(2 * b + 1), 0, max_output + 1);
    // Ids spread over the vocabulary (the first, the last and ones between), few distinct.
    auto draw = [&] {
      const int64_t k = philox_int(seed, 22, i++, 0, alphabet);
      return static_cast<int32_t>(alphabet == V ? k : (k * (V - 1)) / (alphabet - 1));
    };
    for (int64_t k = 0; k < p; ++k) tokens.push_back(draw());
    std::vector<int32_t> out;
    for (int64_t k = 0; k < o; ++k) out.push_back(draw());
    tokens.insert(tokens.end(), out.begin(), out.end());
    l.outputs.push_back(std::move(out));
    indptr.push_back(static_cast<int32_t>(tokens.size()));
    prompt_len.push_back(static_cast<int32_t>(p));
  }
  l.tokens = i32_tensor(tokens);
  l.token_indptr = i32_tensor(indptr);
  l.prompt_len = i32_tensor(prompt_len);
  return l;
}

}  // namespace fk::ops
