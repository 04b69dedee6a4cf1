// mrope_rotary_embedding: definition (workloads, inputs, cost), the CPU reference in
// double (also the CPU implementation).
// Workload fields: rotary_embedding's (ops/rope/rope_workload.h; style is always neox) and
//   section [rot_dim/2 - 2*(rot_dim/6), rot_dim/6, rot_dim/6]  frequencies per axis
//   interleaved [true]                                       Qwen3-VL's layout, else chunked
// positions "random" draws each of the three rows independently (the last token reads the
// cache's last row on every axis); "arange" gives a text prompt (three equal rows).
#include <algorithm>
#include <vector>

#include "fk/element.h"
#include "ops/rope/mrope_validate.h"
#include "ops/rope/rope_reference.h"
#include "ops/rope/rope_workload.h"

namespace fk::ops {
namespace {

using A = MropeRotaryEmbeddingArgs;

void mrope_reference(const A& a, const RopeShape& s) {
  const int64_t T = s.q.tokens, half = s.rot_dim / 2;
  const bool il = a.interleaved != 0;
  std::vector<int> axis(half);
  for (int64_t i = 0; i < half; ++i)
    axis[i] = mrope_axis(static_cast<int>(i), a.mrope_section[0], a.mrope_section[1], a.mrope_section[2], il);
  // Every position checked before anything is written: an error leaves q and k untouched.
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = get_index(a.positions, r, t);
      FK_CHECK(p >= 0 && p < s.max_pos, A::kName, ": positions[", r, ", ", t, "] = ", p, " is outside the cache's [0, ",
               s.max_pos, ")");
    }
  std::vector<double> cos_row(half), sin_row(half), x(s.rot_dim);
  auto rotate = [&](const TensorView& v, const RopeHeads& heads, int64_t t) {
    for (int64_t h = 0; h < heads.heads; ++h) {
      const int64_t base = t * heads.token_stride + h * heads.head_stride;
      for (int64_t d = 0; d < s.rot_dim; ++d) x[d] = load_element(v.element_ptr(base + d), v.dtype);
      rope_rotate_head(x.data(), cos_row.data(), sin_row.data(), s.rot_dim, RopeStyle::neox);
      for (int64_t d = 0; d < s.rot_dim; ++d) store_element(v.element_ptr(base + d), v.dtype, x[d]);
    }
  };
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const int64_t p = get_index(a.positions, axis[i], t);
      cos_row[i] = get(a.cos_sin_cache, p, i);
      sin_row[i] = get(a.cos_sin_cache, p, half + i);
    }
    rotate(a.query, s.q, t);
    rotate(a.key, s.k, t);
  }
}

fk_status mrope_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    mrope_reference(a, validate_mrope_rotary_embedding(a, RopeImpl::reference));
  });
}

std::vector<int64_t> default_section(int64_t rot_dim) {
  const int64_t third = rot_dim / 6;
  return {rot_dim / 2 - 2 * third, third, third};
}

Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const auto heads = [&](const TensorView& v) { return v.rank == 3 ? v.shape[1] : v.shape[1] / a.head_size; };
  Json w = {{"tokens", a.query.shape[0]},
            {"q_heads", heads(a.query)},
            {"kv_heads", heads(a.key)},
            {"head_size", a.head_size},
            {"max_pos", a.cos_sin_cache.shape[0]},
            {"dtype", std::string(dtype_name(a.query.dtype))},
            {"section", Json::array({a.mrope_section[0], a.mrope_section[1], a.mrope_section[2]})},
            {"interleaved", a.interleaved != 0}};
  if (a.cos_sin_cache.shape[1] != a.head_size) w["rot_dim"] = a.cos_sin_cache.shape[1];
  if (a.query.rank == 3) w["layout"] = "3d";
  if (a.cos_sin_cache.dtype != DType::f32) w["cache_dtype"] = std::string(dtype_name(a.cos_sin_cache.dtype));
  if (a.positions.dtype != DType::i64) w["pos_dtype"] = std::string(dtype_name(a.positions.dtype));
  return w;
}

Tensor mrope_positions(const RopeWorkload& r, uint64_t seed) {
  if (r.positions == "arange") {
    Tensor p = Tensor::empty({3, r.tokens}, r.pos_dtype);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t t = 0; t < r.tokens; ++t) store_element(p.view().element_ptr(a * r.tokens + t), r.pos_dtype, double(t % r.max_pos));
    return p;
  }
  Tensor p = random_int_tensor({3, r.tokens}, r.pos_dtype, seed, 1, 0, r.max_pos);
  if (r.tokens > 0)
    for (int64_t a = 0; a < 3; ++a)
      store_element(p.view().element_ptr(a * r.tokens + r.tokens - 1), r.pos_dtype, double(r.max_pos - 1));
  return p;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "rope";
  d.level = "L1";
  d.summary = "multimodal rope (Qwen2/3-VL M-RoPE): each frequency's angle from the t, h or w row of positions [3, T]; "
              "interleaved or chunked sections, neox, in place";
  d.args_size = sizeof(A);
  d.tensor_args = {{"positions", ArgRole::in, offsetof(A, positions)},
                   {"query", ArgRole::inout, offsetof(A, query), RowStride::any},
                   {"key", ArgRole::inout, offsetof(A, key), RowStride::any},
                   {"cos_sin_cache", ArgRole::in, offsetof(A, cos_sin_cache)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const RopeWorkload r = parse_rope_workload(w);
    FK_CHECK(r.style == RopeStyle::neox, A::kName, " workload: M-RoPE is neox style only, got ", w.dump());
    const std::vector<int64_t> sec = w.contains("section") ? wl_int_list(w, "section") : default_section(r.rot_dim);
    FK_CHECK(sec.size() == 3, A::kName, " workload: section needs three entries, got ", w.dump());
    OpCase c = begin_case<A>(w, 4);
    c.tensors[0] = mrope_positions(r, seed);
    c.tensors[1] = rope_heads_tensor(r, r.q_heads, seed, 2);
    c.tensors[2] = rope_heads_tensor(r, r.kv_heads, seed, 3);
    c.tensors[3] = rope_random_cache(r, seed, 4);
    auto& a = c.as<A>();
    a.head_size = static_cast<int32_t>(r.head_size);
    for (int k = 0; k < 3; ++k) a.mrope_section[k] = static_cast<int32_t>(sec[k]);
    a.interleaved = wl_bool(w, "interleaved", true) ? 1 : 0;
    c.bind(layout);
    return c;
  };
  // As rotary_embedding's: q and k's rotated dims read and written once, three position
  // rows, up to three cache rows per token.
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    const double T = static_cast<double>(a.positions.shape[1]);
    const double rot = static_cast<double>(a.cos_sin_cache.shape[1]);
    const double heads = static_cast<double>(a.query.numel() + a.key.numel()) / a.head_size / std::max(T, 1.0);
    const double rows = std::min(3.0 * T, static_cast<double>(a.cos_sin_cache.shape[0]));
    const double rotated = T * heads * rot;
    return OpCost{2.0 * rotated * a.query.element_size() + 3.0 * T * a.positions.element_size() +
                      rows * rot * a.cos_sin_cache.element_size(),
                  3.0 * rotated, DType::f32};
  };
  const Json qwen3vl = Json::array({24, 20, 20});  // Qwen3-VL text: head 128, sections t/h/w
  const Json qwen2vl = Json::array({16, 24, 24});  // Qwen2-VL / Qwen2.5-VL, chunked
  d.test_workloads = {
      {{"tokens", 1}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"section", qwen3vl}},
      {{"tokens", 37}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"section", qwen3vl}},
      {{"tokens", 21}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 128}, {"section", qwen2vl},
       {"interleaved", false}},
      {{"tokens", 9}, {"q_heads", 4}, {"kv_heads", 2}, {"head_size", 128}, {"section", qwen3vl}, {"positions", "arange"}},
      {{"tokens", 5}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 64}, {"dtype", "f32"}, {"max_pos", 32768}},
      {{"tokens", 6}, {"q_heads", 3}, {"kv_heads", 1}, {"head_size", 64}, {"dtype", "f16"}, {"layout", "3d"},
       {"pos_dtype", "i32"}},
      // partial rotary, a section left empty, sections off the vector widths
      {{"tokens", 7}, {"q_heads", 2}, {"kv_heads", 2}, {"head_size", 64}, {"rot_dim", 32},
       {"section", Json::array({8, 4, 4})}},
      {{"tokens", 4}, {"q_heads", 2}, {"kv_heads", 1}, {"head_size", 40}, {"section", Json::array({14, 6, 0})},
       {"cache_dtype", "bf16"}},
      {{"tokens", 5}, {"q_heads", 3}, {"kv_heads", 1}, {"head_size", 20}, {"section", Json::array({4, 3, 3})},
       {"interleaved", false}, {"dtype", "f32"}},
      {{"tokens", 3}, {"q_heads", 4}, {"kv_heads", 0}, {"head_size", 128}, {"section", qwen3vl}},  // no key
      {{"tokens", 0}, {"q_heads", 32}, {"kv_heads", 8}, {"head_size", 128}, {"section", qwen3vl}},
  };
  // Qwen3-VL-8B text model: 32 q heads, 8 kv heads of 128. A prefill with a 1024^2 image
  // (4096 image tokens) and its prompt, then decode batches.
  for (int64_t t : {4352, 1024, 1, 64, 256})
    d.bench_workloads.push_back({{"tokens", t},    {"q_heads", 32},    {"kv_heads", 8}, {"head_size", 128},
                                 {"max_pos", 32768}, {"section", qwen3vl}});
  d.workload_from_call = workload_from_call;
  d.architectures = {"qwen3_vl", "qwen2_vl"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("mrope_rotary_embedding", cpu, mrope_cpu);

}  // namespace
}  // namespace fk::ops
