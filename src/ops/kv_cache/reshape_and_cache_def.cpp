// reshape_and_cache: definition (workloads, inputs, cost, tolerance) and CPU reference.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "fk/element.h"
#include "fk/philox.h"
#include "ops/common/case_builder.h"
#include "ops/kv_cache/kv_cache_reference.h"
#include "ops/kv_cache/kv_cache_validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOp = ReshapeAndCacheArgs::kName;
constexpr double kFp8Max = 448.0;  // largest finite f8e4m3fn

// CPU reference; the caches may be f64 (the oracle) or the engine dtype.
void reshape_and_cache_reference(const ReshapeAndCacheArgs& a) {
  check_cache_slots(kOp, a.slot_mapping, a.k_cache.shape[0], a.k_cache.shape[1]);
  const bool fp8 = arg_present(a.k_scale);
  const double k_scale = fp8 ? get(a.k_scale, 0) : 1.0, v_scale = fp8 ? get(a.v_scale, 0) : 1.0;
  auto encode = [fp8](double scale) {
    return [fp8, scale](double x) { return fp8 ? std::clamp(x / scale, -kFp8Max, kFp8Max) : x; };
  };
  write_cache_reference(a.key, a.value, a.k_cache, a.v_cache, a.slot_mapping, encode(k_scale), encode(v_scale));
}

fk_status reshape_and_cache_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const ReshapeAndCacheArgs*>(args);
    validate_reshape_and_cache(a);
    expect_reshape_and_cache_device(a, DeviceType::cpu);
    if (arg_present(a.k_scale)) {
      FK_CHECK(get(a.k_scale, 0) > 0 && get(a.v_scale, 0) > 0, kOp, ": k_scale and v_scale must be positive, got ",
               get(a.k_scale, 0), " and ", get(a.v_scale, 0));
    }
    reshape_and_cache_reference(a);
  });
}

// The workload of a captured call: the fields make_case reads.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const ReshapeAndCacheArgs*>(args);
  Json w = {{"tokens", a.key.shape[0]},        {"kv_heads", a.key.shape[1]},
            {"head_dim", a.key.shape[2]},      {"page_size", a.k_cache.shape[1]},
            {"num_pages", a.k_cache.shape[0]}, {"dtype", std::string(dtype_name(a.key.dtype))}};
  if (a.k_cache.dtype != a.key.dtype) w["cache_dtype"] = std::string(dtype_name(a.k_cache.dtype));
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = kOp;
  d.family = "kv_cache";
  d.level = "L1";
  d.summary = "k_cache/v_cache[slot] = key/value[t] for slot = slot_mapping[t] >= 0 (paged NHD cache)";
  d.args_size = sizeof(ReshapeAndCacheArgs);
  // key and value are slices of a packed qkv (any token stride); the caches may have padded pages.
  d.tensor_args = {{"key", ArgRole::in, offsetof(ReshapeAndCacheArgs, key), RowStride::any},
                   {"value", ArgRole::in, offsetof(ReshapeAndCacheArgs, value), RowStride::any},
                   {"k_cache", ArgRole::inout, offsetof(ReshapeAndCacheArgs, k_cache), RowStride::any},
                   {"v_cache", ArgRole::inout, offsetof(ReshapeAndCacheArgs, v_cache), RowStride::any},
                   {"slot_mapping", ArgRole::in, offsetof(ReshapeAndCacheArgs, slot_mapping)},
                   {"k_scale", ArgRole::in, offsetof(ReshapeAndCacheArgs, k_scale)},
                   {"v_scale", ArgRole::in, offsetof(ReshapeAndCacheArgs, v_scale)}};
  // Workload fields: tokens, kv_heads, head_dim, page_size, num_pages; dtype (bf16 | f16);
  // cache_dtype (default: dtype; or f8e4m3fn); padding (tokens with slot -1, default 0).
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const int64_t T = wl_int(w, "tokens"), Hk = wl_int(w, "kv_heads"), D = wl_int(w, "head_dim");
    const int64_t S = wl_int(w, "page_size"), P = wl_int(w, "num_pages");
    const int64_t padding = wl_int(w, "padding", 0);
    const DType dt = wl_dtype(w);
    const DType cache_dt = wl_dtype(w, "cache_dtype", dt);
    FK_CHECK(T >= 0 && Hk > 0 && D > 0 && S > 0 && P > 0 && padding >= 0 && padding <= T,
             "reshape_and_cache workload needs tokens >= 0, positive kv_heads/head_dim/page_size/num_pages and "
             "0 <= padding <= tokens, got ", w.dump());
    FK_CHECK(T <= P * S, "reshape_and_cache workload: ", T, " tokens do not fit ", P * S, " slots: ", w.dump());
    const bool fp8 = cache_dt == DType::f8e4m3fn;
    OpCase c = begin_case<ReshapeAndCacheArgs>(w, 7);
    c.tensors[0] = random_tensor({T, Hk, D}, dt, seed, 1, -2.f, 2.f);
    c.tensors[1] = random_tensor({T, Hk, D}, dt, seed, 2, -2.f, 2.f);
    c.tensors[2] = random_tensor({P, S, Hk, D}, cache_dt, seed, 3, -1.f, 1.f);  // old contents must survive
    c.tensors[3] = random_tensor({P, S, Hk, D}, cache_dt, seed, 4, -1.f, 1.f);
    c.tensors[4] = make_slot_mapping(T, P * S, padding, seed);
    // Scales down to 2/448: the largest keys saturate for some seeds.
    c.tensors[5] = fp8 ? random_tensor({1}, DType::f32, seed, 5, 0.004f, 0.03f) : Tensor::empty({0}, DType::f32);
    c.tensors[6] = fp8 ? random_tensor({1}, DType::f32, seed, 6, 0.004f, 0.03f) : Tensor::empty({0}, DType::f32);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<ReshapeAndCacheArgs>();
    int64_t written = 0;
    for (int64_t t = 0; t < a.slot_mapping.shape[0]; ++t) written += get_index(a.slot_mapping, t) >= 0;
    const double per_token = static_cast<double>(a.key.shape[1] * a.key.shape[2]) *
                             static_cast<double>(a.key.element_size() + a.k_cache.element_size());
    return OpCost{2.0 * per_token * static_cast<double>(written) + static_cast<double>(a.slot_mapping.nbytes()), 0.0,
                  a.key.dtype};
  };
  // A copy is exact; an fp8 cache is within fp8 rounding of key / scale.
  d.tolerance = [](const OpCase&, const TensorArg&, DType dt) {
    return dt == DType::f8e4m3fn ? default_tolerance(dt) : Tolerance{0, 0};
  };
  using J = Json;
  d.test_workloads = {
      J{{"tokens", 0}, {"kv_heads", 2}, {"head_dim", 64}, {"page_size", 16}, {"num_pages", 2}},
      J{{"tokens", 1}, {"kv_heads", 1}, {"head_dim", 64}, {"page_size", 16}, {"num_pages", 4}},
      J{{"tokens", 7}, {"kv_heads", 2}, {"head_dim", 128}, {"page_size", 16}, {"num_pages", 4}, {"padding", 2}},
      J{{"tokens", 33}, {"kv_heads", 8}, {"head_dim", 128}, {"page_size", 16}, {"num_pages", 8}, {"dtype", "f16"}},
      J{{"tokens", 5}, {"kv_heads", 3}, {"head_dim", 80}, {"page_size", 1}, {"num_pages", 8}},  // page size 1
      J{{"tokens", 9}, {"kv_heads", 2}, {"head_dim", 36}, {"page_size", 8}, {"num_pages", 4}, {"padding", 1}},
      J{{"tokens", 64}, {"kv_heads", 4}, {"head_dim", 256}, {"page_size", 32}, {"num_pages", 3}},
      J{{"tokens", 6}, {"kv_heads", 2}, {"head_dim", 64}, {"page_size", 16}, {"num_pages", 2}, {"padding", 6}},
      J{{"tokens", 17}, {"kv_heads", 4}, {"head_dim", 128}, {"page_size", 16}, {"num_pages", 4},
        {"cache_dtype", "f8e4m3fn"}, {"padding", 3}},
      J{{"tokens", 9}, {"kv_heads", 2}, {"head_dim", 36}, {"page_size", 8}, {"num_pages", 2},
        {"cache_dtype", "f8e4m3fn"}, {"dtype", "f16"}},
  };
  // Llama-3.1-8B / Qwen3-8B KV geometry (8 KV heads of 128): a prefill chunk and decode batches.
  auto llama = [](int64_t tokens, int64_t pages) {
    return J{{"tokens", tokens}, {"kv_heads", 8}, {"head_dim", 128}, {"page_size", 16}, {"num_pages", pages}};
  };
  d.bench_workloads = {llama(16384, 1088), llama(1, 2048), llama(64, 2048), llama(256, 2048)};
  J fp8 = llama(16384, 1088);
  fp8["cache_dtype"] = "f8e4m3fn";
  d.bench_workloads.push_back(fp8);
  d.workload_from_call = workload_from_call;
  // Where rope_and_cache runs as its parts.
  d.architectures = {"llama",  "mistral", "qwen2",     "qwen3",     "gemma", "gemma2",
                     "gemma3", "mixtral", "qwen3_moe", "qwen2_moe", "olmoe"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("reshape_and_cache", cpu, reshape_and_cache_cpu);

}  // namespace
}  // namespace fk::ops
