// `fk denoise` end to end on the CPU: a random tiny-flux checkpoint in a diffusers
// pipeline's layout (transformer/, scheduler/ with FLUX.1-schnell's scheduler config) gives
// the latents the Denoise runner gives in-process for the same seed and the scheduler found
// beside the transformer (sigmas 1, 0.5, 0 in the JSON); bad requests are named errors
// with a failing status. Runs the `fk` binary built beside this test (<build>/bin/fk);
// skips where it was not built.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "models/diffusion/flux_test_util.h"
#include "serving/denoise/denoise_runner.h"
#include "support/test_seed.h"

namespace fk::serving::denoise {
namespace {

namespace fs = std::filesystem;
using namespace models::diffusion::test;

fs::path fk_binary() { return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bin" / "fk"; }

struct FkRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

FkRun run_fk(const std::string& args) {
  FkRun r;
  const std::string cmd = fk_binary().string() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

constexpr const char* kSchnellScheduler = R"({"_class_name": "FlowMatchEulerDiscreteScheduler",
  "base_image_seq_len": 256, "base_shift": 0.5, "max_image_seq_len": 4096, "max_shift": 1.15,
  "num_train_timesteps": 1000, "shift": 1.0, "use_dynamic_shifting": false})";

class DenoiseCli : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fk_binary())) GTEST_SKIP() << "no fk binary at " << fk_binary();
    dir_ = fs::temp_directory_path() / ("fk_denoise_cli_" + std::to_string(::getpid()));
    write_random_checkpoint(tiny_flux_config(), dir_ / "transformer", fk::test::seed_for("denoise_cli"));
    std::ofstream(dir_ / "transformer" / "config.json") << tiny_flux_json();
    fs::create_directories(dir_ / "scheduler");
    std::ofstream(dir_ / "scheduler" / "scheduler_config.json") << kSchnellScheduler;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DenoiseCli, GivesTheRunnersLatents) {
  const uint64_t seed = fk::test::seed_for("denoise_cli_run") % 100000;
  const fs::path out = dir_ / "latents.safetensors", json_out = dir_ / "run.json";
  const FkRun r = run_fk("denoise --model " + (dir_ / "transformer").string() +
                         " --device cpu --height 64 --width 96 --steps 2 --text-len 8 --seed " + std::to_string(seed) +
                         " --out " + out.string() + " --json-out " + json_out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json j;
  std::ifstream(json_out) >> j;
  EXPECT_EQ(j["weights"], "checkpoint");
  EXPECT_EQ(j["image_seq_len"], 24);
  EXPECT_EQ(j["sigmas"], nlohmann::json::parse("[1.0, 0.5, 0.0]"));  // the schnell scheduler beside it

  auto model = models::create_model((dir_ / "transformer").string());
  models::LoadOptions o;
  o.checkpoint = dir_ / "transformer";
  o.max_tokens = 32;
  o.max_seqs = 1;
  model->load(o);
  DenoiseRequest req;
  req.height = 64, req.width = 96, req.steps = 2, req.text_len = 8, req.seed = seed;
  const DenoiseResult want =
      DenoiseRunner(*model, o, parse_flow_match_euler_config(kSchnellScheduler, "schnell")).run(req);
  const auto file = safetensors::File::open(out);
  const TensorView got = file.view("latents");
  ASSERT_EQ(got.numel(), want.latents.numel());
  EXPECT_EQ(std::memcmp(got.data, want.latents.data(), want.latents.nbytes()), 0);
  EXPECT_NE(r.output.find(j["checksum"].get<std::string>()), std::string::npos) << r.output;
}

TEST_F(DenoiseCli, NamedErrors) {
  FkRun r = run_fk("denoise --model tiny-flux --device cpu --height 64 --width 100 --steps 1 --text-len 4");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("resolution 100x64 is not supported"), std::string::npos) << r.output;
  r = run_fk("denoise --model tiny-flux --device cpu --height 64 --width 64 --steps 0 --text-len 4");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("steps must be at least 1"), std::string::npos) << r.output;
  r = run_fk("denoise --model tiny-bge-m3 --device cpu");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("runs by the batch pattern"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fk::serving::denoise
