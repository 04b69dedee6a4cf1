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

ExpertsWorkload experts_workload(const Json& w, const char* op) {
  ExpertsWorkload s{wl_int(w, "tokens"), wl_int(w, "topk"),  wl_int(w, "experts"), wl_int(w, "hidden"),
                    wl_int(w, "inter"),  wl_dtype(w),        DType::bf16};
  FK_CHECK(s.T >= 0 && s.k >= 1 && s.k <= s.E && s.H >= 1 && s.I >= 1, op, " workload needs tokens >= 0, "
           "1 <= topk <= experts, hidden >= 1 and inter >= 1, got ", w.dump());
  FK_CHECK(s.dtype == DType::bf16 || s.dtype == DType::f16, op, " workload dtype must be bf16 or f16, got ", w.dump());
  s.weight_dtype = wl_dtype(w, "weight_dtype", s.dtype);
  FK_CHECK(s.weight_dtype == s.dtype || s.weight_dtype == DType::f8e4m3fn, op,
           " workload weight_dtype must be the dtype or f8e4m3fn, got ", w.dump());
  return s;
}

namespace {

// One expert weight tensor [E, rows, cols] and its block scales (see make_expert_inputs).
void expert_weight(OpCase& c, size_t slot, size_t scale_slot, int64_t E, int64_t rows, int64_t cols, DType dt,
                   uint64_t seed, uint64_t stream) {
  const auto inv_sqrt = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cols)));
  if (dt == DType::f8e4m3fn) {
    c.tensors[slot] = random_tensor({E, rows, cols}, dt, seed, stream, -4.f, 4.f);
    c.tensors[scale_slot] =
        random_tensor({E, (rows + 127) / 128, (cols + 127) / 128}, DType::f32, seed, stream + 1, 0.25f * inv_sqrt,
                      0.75f * inv_sqrt);
  } else {
    c.tensors[slot] = random_tensor({E, rows, cols}, dt, seed, stream, -2.f * inv_sqrt, 2.f * inv_sqrt);
    c.tensors[scale_slot] = Tensor::empty({0}, DType::f32);
  }
}

}  // namespace

void make_expert_inputs(OpCase& c, const ExpertSlots& slots, const ExpertsWorkload& s, uint64_t seed) {
  c.tensors[slots.hidden] = random_tensor({s.T, s.H}, s.dtype, seed, 1, -2.f, 2.f);
  expert_weight(c, slots.w13, slots.w13_scale, s.E, 2 * s.I, s.H, s.weight_dtype, seed, 2);
  expert_weight(c, slots.w2, slots.w2_scale, s.E, s.H, s.I, s.weight_dtype, seed, 4);
}

}  // namespace fk::ops
