// Oasis's DiT on the CPU backend: the golden forward (oasis_golden_check.h), the ops it runs
// through the registry, its registration, and the named refusals of bad configs,
// checkpoints and step inputs.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
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
  auto count = [&](const char* op) { return calls.count(op) ? calls.at(op) : 0; };
  // One oasis_block call per block, whose baseline calls its parts through the registry:
  // two halves, each one adaLN linear, two modulations, qkv, RoPE, attention, out, two gated
  // adds, the MLP; the temporal half's q/k/v and output change order.
  const int blocks = 2;
  EXPECT_EQ(count("oasis_block"), blocks);
  EXPECT_EQ(count("varlen_attention"), 2 * blocks);
  EXPECT_EQ(count("rotary_embedding"), 2 * blocks);
  EXPECT_EQ(count("transpose_tokens"), 2 * blocks);
  EXPECT_EQ(count("gated_residual_add"), 4 * blocks);
  EXPECT_EQ(count("adaln_modulate"), 4 * blocks + 1);  // and the final layer's
  EXPECT_EQ(count("gelu"), 2 * blocks);
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

// The rollout: named refusals before any step, and seeded draws that repeat.
class OasisRolloutTest : public testing::Test {
 protected:
  void SetUp() override {
    model_ = OasisModel::from_config(resolve_model("tiny-oasis").config_json, "tiny-oasis");
    options_.max_seqs = 8;  // tiny-oasis's max_frames: one clip's window
    options_.max_tokens = 8 * 12;
    model_->load(options_);
  }
  serving::denoise::OasisRolloutResult roll(const serving::denoise::OasisRolloutRequest& r) {
    serving::denoise::OasisRollout rollout(*model_, options_);
    return rollout.run(r);
  }
  std::unique_ptr<Model> model_;
  LoadOptions options_;
};

TEST_F(OasisRolloutTest, RefusesBadRequestsByName) {
  auto refusal = [&](auto&& edit) {
    serving::denoise::OasisRolloutRequest r;
    r.frames = 4;
    r.ddim_steps = 2;
    edit(r);
    return error_of([&] { roll(r); });
  };
  EXPECT_NE(refusal([](auto& r) { r.frames = 1; }).find("leave none to generate"), std::string::npos);
  EXPECT_NE(refusal([](auto& r) { r.clips = 0; }).find("clips must be at least 1"), std::string::npos);
  EXPECT_NE(refusal([](auto& r) { r.ddim_steps = 0; }).find("steps must be at least 1"), std::string::npos);
  EXPECT_NE(refusal([](auto& r) { r.clips = 2, r.frames = 8; }).find("need max_seqs 16"), std::string::npos);
  EXPECT_NE(refusal([](auto& r) {
              r.prompt = Tensor::zeros({11, 16}, DType::bf16);
            }).find("prompt must be bf16[12, 16]"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& r) {
              r.noise = Tensor::zeros({12, 16}, DType::bf16);
            }).find("noise must be bf16[36, 16]"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& r) {
              r.actions = Tensor::zeros({4, 5}, DType::f32);
            }).find("actions must be bf16[4, 5]"),
            std::string::npos);
  auto flux = create_model_from_config(resolve_model("tiny-flux").config_json, "tiny-flux");
  LoadOptions o;
  o.max_tokens = 64;
  o.max_seqs = 1;
  flux->load(o);
  EXPECT_NE(error_of([&] { serving::denoise::OasisRollout r(*flux, o); }).find("is not an Oasis DiT"),
            std::string::npos);
}

TEST_F(OasisRolloutTest, SeedsRepeatAndDiffer) {
  serving::denoise::OasisRolloutRequest r;
  r.frames = 4;
  r.ddim_steps = 2;
  r.seed = 7;
  const Tensor a = roll(r).latents, b = roll(r).latents;
  r.seed = 8;
  const Tensor c = roll(r).latents;
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.nbytes()), 0);
}

}  // namespace
}  // namespace fk::models::world::test
