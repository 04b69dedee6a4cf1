// OpenFold3's Pairformer stack on the CPU: its config (OpenFold3's keys, defaults and named
// refusals), its weights under OpenFold3's state-dict names fused into the op layouts, its
// forward against the blocks written out in the test from the ops' CPU references, and
// that padded tokens do not change the real tokens' outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/registry.h"
#include "models/science/openfold3/openfold3_model.h"
#include "ops/pairformer/pairformer_block_parts.h"
#include "support/test_seed.h"

namespace fk::models::science {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kTiny =
    R"({"model_type": "openfold3", "c_s": 24, "c_z": 16, "c_hidden_pair_bias": 4, "no_heads_pair_bias": 3,
        "c_hidden_mul": 8, "c_hidden_pair_att": 4, "no_heads_pair": 2, "no_blocks": 2, "transition_n": 2,
        "max_tokens": 12})";

OpenFold3Model& as_of3(const std::unique_ptr<Model>& m) { return dynamic_cast<OpenFold3Model&>(*m); }

// Host tensors of the step: s, z and the masks of `lengths` real tokens per structure.
struct Inputs {
  Tensor s, z, single_mask, pair_mask;
  StepInputs step() const {
    StepInputs in;
    in.tensors = {{"single", s.view()}, {"pair", z.view()}, {"single_mask", single_mask.view()},
                  {"pair_mask", pair_mask.view()}};
    return in;
  }
};

Inputs random_inputs(const OpenFold3Config& c, const std::vector<int64_t>& lengths, int64_t n, DType dt,
                     uint64_t seed) {
  const int64_t b = static_cast<int64_t>(lengths.size());
  Inputs x;
  x.s = Tensor::empty({b, n, c.c_s}, dt);
  x.z = Tensor::empty({b, n, n, c.c_z}, dt);
  fill_uniform(x.s, seed, 1, -1.f, 1.f);
  fill_uniform(x.z, seed, 2, -1.f, 1.f);
  x.single_mask = Tensor::zeros({b, n}, dt);
  x.pair_mask = Tensor::zeros({b, n, n}, dt);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < lengths[i]; ++t) {
      set(x.single_mask.view(), 1.0, i, t);
      for (int64_t u = 0; u < lengths[i]; ++u) set(x.pair_mask.view(), 1.0, i, t, u);
    }
  return x;
}

Tensor to_f64(const TensorView& v) {
  Tensor o = Tensor::empty(Shape(v.shape, v.shape + v.rank), DType::f64);
  for (int64_t i = 0; i < o.numel(); ++i)
    o.data_as<double>()[i] = load_element(static_cast<const char*>(v.data) + i * v.element_size(), v.dtype);
  return o;
}

TEST(OpenFold3, PresetsAndConfig) {
  const std::unique_ptr<Model> m = create_model("openfold3");
  const OpenFold3Config& c = as_of3(m).config();
  EXPECT_EQ(c.no_blocks, 48);
  EXPECT_EQ(c.c_s, 384);
  EXPECT_EQ(c.c_z, 128);
  EXPECT_EQ(c.no_heads_pair * c.c_hidden_pair_att, 128);
  EXPECT_EQ(c.no_heads_pair_bias * c.c_hidden_pair_bias, 384);
  EXPECT_EQ(c.c_hidden_mul, 128);
  EXPECT_EQ(c.transition_n, 4);
  EXPECT_EQ(m->architecture(), "openfold3");
  EXPECT_EQ(m->pattern(), RunPattern::batch);
  EXPECT_EQ(registration("openfold3").category, "3d-robotics-science");
  EXPECT_EQ(as_of3(create_model("tiny-openfold3")).config().no_blocks, 2);
  // OpenFold3 nests the keys in a "pairformer" object; the defaults are its trunk's.
  const OpenFold3Config nested =
      parse_openfold3_config(R"({"model_type": "openfold3", "pairformer": {"no_blocks": 3, "c_z": 32}})", "x");
  EXPECT_EQ(nested.no_blocks, 3);
  EXPECT_EQ(nested.c_z, 32);
  EXPECT_EQ(nested.c_s, 384);
}

TEST(OpenFold3, RefusesWhatItDoesNotSupport) {
  auto parse = [](const char* j) { return error_of([&] { parse_openfold3_config(j, "cfg.json"); }); };
  EXPECT_NE(parse(R"({"model_type": "openfold3", "transition_type": "relu"})").find("transition_type 'relu' is not "
                                                                                     "supported"),
            std::string::npos);
  EXPECT_NE(parse(R"({"model_type": "openfold3", "fuse_projection_weights": true})").find("fuse_projection_weights"),
            std::string::npos);
  EXPECT_NE(parse(R"({"model_type": "openfold3", "c_z": 0})").find("'c_z' must be a positive integer"),
            std::string::npos);
  EXPECT_NE(parse(R"({"model_type": "openfold3", "no_blocks": 2.5})").find("'no_blocks' must be a positive"),
            std::string::npos);
  EXPECT_NE(parse(R"({"model_type": "llama"})").find("not an openfold3 config"), std::string::npos);
  EXPECT_NE(parse("{").find("not valid JSON"), std::string::npos);
}

TEST(OpenFold3, WeightsAreOpenFold3sStateDictNames) {
  const OpenFold3Config c = parse_openfold3_config(kTiny, "tiny");
  const std::vector<TensorDecl> decls = OpenFold3Model(c).weights();
  std::map<std::string, Shape> by_name;
  for (const TensorDecl& d : decls) by_name[d.name] = d.shape;
  EXPECT_EQ(by_name.size(), decls.size());
  EXPECT_EQ(decls.size(), 2u * 57u);  // per block: 2 x 10 + 2 x 8 + 2 x 5 + 11
  const std::string b1 = "pairformer_stack.blocks.1.";
  EXPECT_EQ(by_name.at(b1 + "pair_stack.tri_mul_out.linear_a_g.weight"), Shape({8, 16}));
  EXPECT_EQ(by_name.at(b1 + "pair_stack.tri_mul_in.linear_z.weight"), Shape({16, 8}));
  EXPECT_EQ(by_name.at(b1 + "pair_stack.tri_att_end.mha.linear_o.weight"), Shape({16, 8}));
  EXPECT_EQ(by_name.at(b1 + "pair_stack.tri_att_start.linear_z.weight"), Shape({2, 16}));
  EXPECT_EQ(by_name.at(b1 + "pair_stack.pair_transition.swiglu.linear_a.weight"), Shape({32, 16}));
  EXPECT_EQ(by_name.at(b1 + "attn_pair_bias.mha.linear_q.bias"), Shape({12}));
  EXPECT_EQ(by_name.at(b1 + "attn_pair_bias.layer_norm_z.weight"), Shape({16}));
  EXPECT_EQ(by_name.at(b1 + "single_transition.linear_out.weight"), Shape({24, 48}));
}

// A checkpoint in the upstream layout loads: each op weight is its upstream tensors stacked
// in the op's row order; a missing or misshapen tensor is named.
TEST(OpenFold3, CheckpointLoadsFusedIntoTheOpLayouts) {
  const uint64_t seed = test::seed_for("OpenFold3.Checkpoint");
  const OpenFold3Config c = parse_openfold3_config(kTiny, "tiny");
  const std::map<std::string, Tensor> sd = random_openfold3_state_dict(c, seed);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fk_openfold3_ckpt_" + std::to_string(seed));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << kTiny;
  safetensors::NamedViews views;
  for (const auto& [name, t] : sd) views.push_back({name, t.view()});
  safetensors::save(dir / "model.safetensors", views);

  const std::unique_ptr<Model> m = create_model(dir.string());
  LoadOptions lo;
  lo.dtype = DType::f32;
  lo.checkpoint = dir;
  lo.max_seqs = 1;
  m->load(lo);
  const ops::PairformerBlockWeights& w = as_of3(m).block_weights().blocks[1].ops;
  auto rows_of = [&](const TensorView& fused, int64_t row0, const std::string& name) {
    const Tensor& t = sd.at(name);
    const int64_t cols = fused.shape[1];
    return std::memcmp(static_cast<const float*>(fused.data) + row0 * cols, t.data(),
                       static_cast<size_t>(t.numel()) * sizeof(float)) == 0;
  };
  const std::string p = "pairformer_stack.blocks.1.";
  const std::string tm = p + "pair_stack.tri_mul_in.";
  EXPECT_TRUE(rows_of(w.tri_mul_in.in_weight, 0, tm + "linear_a_g.weight"));
  EXPECT_TRUE(rows_of(w.tri_mul_in.in_weight, 8, tm + "linear_a_p.weight"));
  EXPECT_TRUE(rows_of(w.tri_mul_in.in_weight, 16, tm + "linear_b_g.weight"));
  EXPECT_TRUE(rows_of(w.tri_mul_in.in_weight, 24, tm + "linear_b_p.weight"));
  EXPECT_TRUE(rows_of(w.tri_mul_in.in_weight, 32, tm + "linear_g.weight"));
  const std::string ta = p + "pair_stack.tri_att_end.";
  EXPECT_TRUE(rows_of(w.tri_att_end.qkvg_weight, 0, ta + "mha.linear_q.weight"));
  EXPECT_TRUE(rows_of(w.tri_att_end.qkvg_weight, 8, ta + "mha.linear_k.weight"));
  EXPECT_TRUE(rows_of(w.tri_att_end.qkvg_weight, 16, ta + "mha.linear_v.weight"));
  EXPECT_TRUE(rows_of(w.tri_att_end.qkvg_weight, 24, ta + "mha.linear_g.weight"));
  EXPECT_TRUE(rows_of(w.tri_att_end.bias_weight, 0, ta + "linear_z.weight"));
  const std::string ap = p + "attn_pair_bias.";
  EXPECT_TRUE(rows_of(w.attn_pair_bias.kvg_weight, 0, ap + "mha.linear_k.weight"));
  EXPECT_TRUE(rows_of(w.attn_pair_bias.kvg_weight, 12, ap + "mha.linear_v.weight"));
  EXPECT_TRUE(rows_of(w.attn_pair_bias.kvg_weight, 24, ap + "mha.linear_g.weight"));
  EXPECT_TRUE(rows_of(w.attn_pair_bias.q_weight, 0, ap + "mha.linear_q.weight"));
  const std::string st = p + "single_transition.";
  EXPECT_TRUE(rows_of(w.single_transition.in_weight, 0, st + "swiglu.linear_a.weight"));
  EXPECT_TRUE(rows_of(w.single_transition.in_weight, 48, st + "swiglu.linear_b.weight"));
  EXPECT_EQ(std::memcmp(w.attn_pair_bias.q_bias.data, sd.at(ap + "mha.linear_q.bias").data(), 12 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(w.tri_mul_in.ln_out_bias.data, sd.at(tm + "layer_norm_out.bias").data(), 8 * sizeof(float)), 0);

  // The names of OpenFold3's training checkpoints ("model." before each) load alike.
  {
    safetensors::NamedViews prefixed;
    for (const auto& [name, t] : sd) prefixed.push_back({"model." + name, t.view()});
    safetensors::save(dir / "model.safetensors", prefixed);
    const std::unique_ptr<Model> again = create_model(dir.string());
    again->load(lo);
    EXPECT_EQ(std::memcmp(as_of3(again).block_weights().blocks[1].ops.tri_mul_in.in_weight.data,
                          w.tri_mul_in.in_weight.data, static_cast<size_t>(w.tri_mul_in.in_weight.span_bytes())),
              0);
  }
  // A missing tensor, then a misshapen one.
  views.erase(views.begin());
  const std::string first = sd.begin()->first;
  safetensors::save(dir / "model.safetensors", views);
  EXPECT_NE(error_of([&] { create_model(dir.string())->load(lo); }).find("has no tensor '" + first + "'"),
            std::string::npos);
  Tensor wrong = Tensor::zeros({3}, DType::f32);
  views.push_back({first, wrong.view()});
  safetensors::save(dir / "model.safetensors", views);
  EXPECT_NE(error_of([&] { create_model(dir.string())->load(lo); }).find("checkpoint tensor '" + first + "' has shape"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// The model's forward against the blocks written out in the test: each block's seven
// parts, each part's CPU reference in double on the residual streams.
TEST(OpenFold3, ForwardIsThePartsReferencesBlockByBlock) {
  const uint64_t seed = test::seed_for("OpenFold3.Forward");
  for (const DType dt : {DType::f32, DType::bf16}) {
    const std::unique_ptr<Model> m = create_model_from_config(kTiny, "tiny");
    OpenFold3Model& model = as_of3(m);
    LoadOptions lo;
    lo.dtype = dt;
    lo.seed = seed;
    lo.max_seqs = 2;
    model.load(lo);
    const Inputs x = random_inputs(model.config(), {9, 6}, 9, dt, seed);
    const StepInputs in = x.step();
    model.plan(in, nullptr);
    model.forward(in, nullptr);
    const Tensor s = to_f64(x.s.view()), z = to_f64(x.z.view());
    for (const OpenFold3Block& b : model.block_weights().blocks)
      test::run_pairformer_block_parts(s, z, x.single_mask, x.pair_mask, b.ops, 2, 3, test::PartsPath::cpu_references);
    // Relative L2 error and the worst element relative to each output's largest magnitude:
    // f32 keeps every rounding small; bf16 rounds the streams and the intermediates at each
    // of the 14 updates (measured over 40 seeds: L2 up to 1.6%, worst element 3.1% of the
    // largest magnitude; f32 3e-7 and 6e-7).
    const double l2_bound = dt == DType::f32 ? 1e-5 : 4e-2, max_bound = dt == DType::f32 ? 1e-5 : 1e-1;
    for (const auto& [name, got, want] : {std::tuple{"single", model.single_output(), s.view()},
                                          std::tuple{"pair", model.pair_output(), z.view()}}) {
      double worst = 0, scale = 0, d2 = 0, n2 = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        const double r = static_cast<const double*>(want.data)[i];
        const double g = load_element(static_cast<const char*>(got.data) + i * got.element_size(), got.dtype);
        worst = std::max(worst, std::abs(g - r));
        scale = std::max(scale, std::abs(r));
        d2 += (g - r) * (g - r), n2 += r * r;
      }
      ASSERT_GT(scale, 0) << name;
      EXPECT_LE(std::sqrt(d2 / n2), l2_bound) << name << " " << dtype_name(dt);
      EXPECT_LE(worst, max_bound * scale) << name << " " << dtype_name(dt) << ": worst " << worst << " of " << scale;
    }
  }
}

// Padding: a structure padded from 7 to 10 tokens gives its 7 real tokens the outputs of
// the unpadded run, whatever the padded tokens hold.
TEST(OpenFold3, PaddedTokensDoNotChangeRealTokens) {
  const uint64_t seed = test::seed_for("OpenFold3.Padding");
  const std::unique_ptr<Model> m = create_model_from_config(kTiny, "tiny");
  OpenFold3Model& model = as_of3(m);
  LoadOptions lo;
  lo.dtype = DType::f32;
  lo.seed = seed;
  lo.max_seqs = 1;
  model.load(lo);
  const OpenFold3Config& c = model.config();
  const int64_t L = 7, N = 10;
  const Inputs padded = random_inputs(c, {L}, N, DType::f32, seed);
  Inputs real = random_inputs(c, {L}, L, DType::f32, seed + 1);
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t ch = 0; ch < c.c_s; ++ch) set(real.s.view(), get(padded.s.view(), 0, i, ch), 0, i, ch);
    for (int64_t j = 0; j < L; ++j)
      for (int64_t ch = 0; ch < c.c_z; ++ch) set(real.z.view(), get(padded.z.view(), 0, i, j, ch), 0, i, j, ch);
  }
  auto run = [&](const Inputs& x) {
    model.plan(x.step(), nullptr);
    model.forward(x.step(), nullptr);
    return std::pair{to_f64(model.single_output()), to_f64(model.pair_output())};
  };
  const auto [s_real, z_real] = run(real);
  const auto [s_pad, z_pad] = run(padded);
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t ch = 0; ch < c.c_s; ++ch) {
      worst = std::max(worst, std::abs(get(s_pad.view(), 0, i, ch) - get(s_real.view(), 0, i, ch)));
      scale = std::max(scale, std::abs(get(s_real.view(), 0, i, ch)));
    }
    for (int64_t j = 0; j < L; ++j)
      for (int64_t ch = 0; ch < c.c_z; ++ch) {
        worst = std::max(worst, std::abs(get(z_pad.view(), 0, i, j, ch) - get(z_real.view(), 0, i, j, ch)));
        scale = std::max(scale, std::abs(get(z_real.view(), 0, i, j, ch)));
      }
  }
  EXPECT_LE(worst, 1e-5 * scale) << "worst " << worst << " of " << scale;
  // Other values in the padded tokens: the real tokens' outputs do not move at all.
  Inputs other = padded;
  other.s = padded.s.clone();
  other.z = padded.z.clone();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j)
      if (i >= L || j >= L)
        for (int64_t ch = 0; ch < c.c_z; ++ch) set(other.z.view(), 7.0 * std::sin(double(i + 3 * j + ch)), 0, i, j, ch);
  for (int64_t i = L; i < N; ++i)
    for (int64_t ch = 0; ch < c.c_s; ++ch) set(other.s.view(), -3.0 + ch * 0.1, 0, i, ch);
  const auto [s_other, z_other] = run(other);
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t ch = 0; ch < c.c_s; ++ch) ASSERT_EQ(get(s_other.view(), 0, i, ch), get(s_pad.view(), 0, i, ch));
    for (int64_t j = 0; j < L; ++j)
      for (int64_t ch = 0; ch < c.c_z; ++ch)
        ASSERT_EQ(get(z_other.view(), 0, i, j, ch), get(z_pad.view(), 0, i, j, ch));
  }
}

TEST(OpenFold3, PlanRefusesBadInputsByName) {
  const std::unique_ptr<Model> m = create_model_from_config(kTiny, "tiny");
  LoadOptions lo;
  lo.dtype = DType::f32;
  lo.max_seqs = 1;
  m->load(lo);
  const OpenFold3Config& c = as_of3(m).config();
  const Inputs longer = random_inputs(c, {13}, 13, DType::f32, 1);
  EXPECT_NE(error_of([&] { m->plan(longer.step(), nullptr); }).find("13 tokens is longer than the model's crop of 12"),
            std::string::npos);
  const Inputs two = random_inputs(c, {3, 3}, 3, DType::f32, 1);
  EXPECT_NE(error_of([&] { m->plan(two.step(), nullptr); }).find("2 structures; the model was loaded for 1 to 1"),
            std::string::npos);
  Inputs bad_mask = random_inputs(c, {4}, 4, DType::f32, 1);
  bad_mask.pair_mask = Tensor::zeros({1, 4, 3}, DType::f32);
  EXPECT_NE(error_of([&] { m->plan(bad_mask.step(), nullptr); }).find("'pair_mask' must be a contiguous f32[1, 4, 4]"),
            std::string::npos);
  const Inputs bf16 = random_inputs(c, {4}, 4, DType::bf16, 1);
  EXPECT_NE(error_of([&] { m->plan(bf16.step(), nullptr); }).find("'single' must be a contiguous f32"),
            std::string::npos);
  StepInputs only_s;
  only_s.tensors = {{"single", longer.s.view()}};
  EXPECT_NE(error_of([&] { m->plan(only_s, nullptr); }).find("'single' and 'pair' are required"), std::string::npos);
}

}  // namespace
}  // namespace fk::models::science
