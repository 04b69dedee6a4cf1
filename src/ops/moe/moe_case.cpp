#include "ops/moe/moe_case.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"

namespace fk::ops {

RoutingPattern routing_pattern(const Json& w) {
  const std::string p = wl_string(w, "routing", "uniform");
  if (p == "uniform") return RoutingPattern::uniform;
  if (p == "skewed") return RoutingPattern::skewed;
  if (p == "same") return RoutingPattern::same;
  if (p == "dropped") return RoutingPattern::dropped;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "workload field 'routing' must be uniform, skewed, same or dropped, got '", p, "'");
}

Tensor make_topk_ids(int64_t tokens, int64_t k, int64_t experts, RoutingPattern pattern, uint64_t seed,
                     uint64_t stream) {
  FK_CHECK(k >= 1 && k <= experts, "routing needs 1 <= k <= experts, got k = ", k, ", experts = ", experts);
  Tensor ids = Tensor::empty({tokens, k}, DType::i32);
  int32_t* out = ids.data_as<int32_t>();
  std::vector<int32_t> perm(static_cast<size_t>(experts));
  uint64_t draw = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    if (pattern == RoutingPattern::same) {
      for (int64_t j = 0; j < k; ++j) out[t * k + j] = static_cast<int32_t>(j);
      continue;
    }
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t j = 0; j < k; ++j) {
      // Partial Fisher-Yates: position j takes a random one of the remaining experts.
      int64_t pick;
      if (pattern == RoutingPattern::skewed) {
        const double u = philox_uniform(seed, stream, draw++);
        pick = j + static_cast<int64_t>(std::floor(u * u * u * static_cast<double>(experts - j)));
      } else {
        pick = philox_int(seed, stream, draw++, j, experts);
      }
      std::swap(perm[static_cast<size_t>(j)], perm[static_cast<size_t>(pick)]);
      out[t * k + j] = perm[static_cast<size_t>(j)];
    }
    if (pattern == RoutingPattern::dropped)
      for (int64_t j = 0; j < k; ++j)
        if (philox_int(seed, stream + 1, static_cast<uint64_t>(t * k + j), 0, 5) == 0) out[t * k + j] = -1;
  }
  return ids;
}

int64_t distinct_experts(const TensorView& ids, int64_t experts) {
  std::vector<char> hit(static_cast<size_t>(experts), 0);
  int64_t n = 0;
  const int64_t total = ids.numel();
  for (int64_t i = 0; i < total; ++i) {
    const int64_t e = load_index(ids.element_ptr(i), ids.dtype);
    if (e >= 0 && e < experts && !hit[static_cast<size_t>(e)]) {
      hit[static_cast<size_t>(e)] = 1;
      ++n;
    }
  }
  return n;
}

}  // namespace fk::ops
