// Oasis's DiT on the CPU backend: the golden forward (oasis_golden_check.h), the ops it runs
// through the registry, its registration, and the named refusals of bad configs,
// checkpoints and step inputs.
#include <gtest/gtest.h>

#include <string>

#include "fk/status.h"
#include "models/registry.h"
#include "models/world/oasis_golden_check.h"

namespace fk::models::world::test {
namespace {

// The message of the fk::Error `fn` throws ("" if none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(OasisGolden, DiTMatchesThePyTorchReference) {
  const std::map<std::string, int> calls = check_oasis_golden(Device::cpu());
  // Per block: two halves, each one adaLN linear, two modulations, qkv, RoPE, attention,
  // out, two gated adds, the MLP; the temporal half's q/k/v and output change order.
  const int blocks = 2;
  EXPECT_EQ(calls.count("varlen_attention") ? calls.at("varlen_attention") : 0, 2 * blocks);
  EXPECT_EQ(calls.count("rotary_embedding") ? calls.at("rotary_embedding") : 0, 2 * blocks);
  EXPECT_EQ(calls.count("transpose_tokens") ? calls.at("transpose_tokens") : 0, 2 * blocks);
  EXPECT_EQ(calls.count("gated_residual_add") ? calls.at("gated_residual_add") : 0, 4 * blocks);
  EXPECT_EQ(calls.count("adaln_modulate") ? calls.at("adaln_modulate") : 0, 4 * blocks + 1);
  EXPECT_EQ(calls.count("gelu") ? calls.at("gelu") : 0, 2 * blocks);
}

TEST(OasisGolden, RolloutMatchesThePyTorchReference) { check_oasis_rollout_golden(Device::cpu()); }

TEST(Oasis, IsRegisteredWithItsPresets) {
  const ModelSource prod = resolve_model("oasis-500m");
  const OasisConfig c = parse_oasis_config(prod.config_json, "oasis-500m");
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.depth, 16);
  EXPECT_EQ(c.frame_tokens(), 144);  // 9 x 16 patches of an 18 x 32 latent
  EXPECT_EQ(c.head_dim(), 64);
  auto model = OasisModel::from_config(prod.config_json, "oasis-500m");
  int64_t params = 0;
  for (const TensorDecl& d : model->weights()) {
    int64_t n = 1;
    for (int64_t s : d.shape) n *= s;
    params += n;
  }
  // DiT-S/2 at depth 16: 36 H^2 per block, about 604M parameters (the name rounds them).
  EXPECT_GT(params, 590'000'000);
  EXPECT_LT(params, 620'000'000);
  EXPECT_EQ(model->pattern(), RunPattern::denoise);
  EXPECT_EQ(model->task_category(), "world-models");
  EXPECT_NO_THROW(parse_oasis_config(resolve_model("tiny-oasis").config_json, "tiny-oasis"));
}

TEST(Oasis, RefusesBadConfigsByName) {
  auto refusal = [](const std::string& json) { return error_of([&] { parse_oasis_config(json, "cfg"); }); };
  EXPECT_NE(refusal(R"({"_class_name": "DiT"})").find("not an Oasis DiT config"), std::string::npos);
  EXPECT_NE(refusal(R"({"_class_name": "OasisDiT", "input_h": 7})").find("whole number of 2x2 patches"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"_class_name": "OasisDiT", "hidden_size": 1000})").find("not a multiple of num_heads"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"_class_name": "OasisDiT", "hidden_size": 96, "num_heads": 16})").find("head dim 6"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"_class_name": "OasisDiT", "depth": "16"})").find("'depth' must be an integer"),
            std::string::npos);
  EXPECT_NE(refusal("{").find("not valid JSON"), std::string::npos);
}

TEST(Oasis, RefusesACheckpointWithoutItsTensors) {
  auto model = OasisModel::from_config(read_text(oasis_golden_dir() + "/config.json"), "config.json");
  LoadOptions o;
  o.checkpoint = oasis_golden_dir() + "/golden.safetensors";  // holds inputs and outputs, no weights
  o.max_tokens = 64;
  o.max_seqs = 8;
  EXPECT_NE(error_of([&] { model->load(o); }).find("x_embedder.proj.weight"), std::string::npos);
}

TEST(Oasis, RefusesBadStepInputsByName) {
  auto model = OasisModel::from_config(resolve_model("tiny-oasis").config_json, "tiny-oasis");
  LoadOptions o;
  o.max_tokens = 2 * 8 * 12;
  o.max_seqs = 16;
  model->load(o);
  auto plan_with = [&](const Tensor& t) {
    StepInputs in;
    in.tensors = {{"timestep", t.view()}};
    return error_of([&] { model->plan(in, nullptr); });
  };
  EXPECT_NE(plan_with(Tensor::zeros({4}, DType::f32)).find("[B, T] f32"), std::string::npos);
  EXPECT_NE(plan_with(Tensor::zeros({1, 9}, DType::f32)).find("max_frames 8"), std::string::npos);
  EXPECT_NE(plan_with(Tensor::zeros({3, 8}, DType::f32)).find("more than the 192 tokens"), std::string::npos);
  Tensor nan = Tensor::zeros({1, 2}, DType::f32);
  nan.data_as<float>()[1] = std::nanf("");
  EXPECT_NE(plan_with(nan).find("timestep nan of frame 1"), std::string::npos);
  StepInputs none;
  EXPECT_NE(error_of([&] { model->plan(none, nullptr); }).find("'timestep' is missing"), std::string::npos);

  const Tensor t = Tensor::zeros({1, 2}, DType::f32);
  const Tensor wrong_x = Tensor::zeros({2 * 12, 15}, DType::bf16);
  StepInputs in;
  in.tensors = {{"timestep", t.view()}, {"x", wrong_x.view()}};
  model->plan(in, nullptr);
  EXPECT_NE(error_of([&] { model->forward(in, nullptr); }).find("x must be [24, 16]"), std::string::npos);
  const Tensor x = Tensor::zeros({2 * 12, 16}, DType::bf16), action = Tensor::zeros({2, 4}, DType::bf16);
  in.tensors = {{"timestep", t.view()}, {"x", x.view()}, {"external_cond", action.view()}};
  EXPECT_NE(error_of([&] { model->forward(in, nullptr); }).find("external_cond must be [2, 5]"), std::string::npos);
}

}  // namespace
}  // namespace fk::models::world::test
