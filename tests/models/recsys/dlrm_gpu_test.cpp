// DLRM on CUDA: the tiny config on a checkpoint against the CPU backend and against the exact
// host forward (dlrm_reference.h), a sample scoring the same alone and in a batch (within the
// dtype's roundings: cuBLASLt may pick another algorithm for another batch size), and the
// dlrmv2 production preset with dummy weights (52 GB of tables in bf16) on a batch of 2048
// samples with MLPerf's multi-hot bag sizes: finite logits, timed (informational).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fk/status.h"
#include "models/recsys/dlrm/dlrm_model.h"
#include "models/recsys/dlrm/dlrm_predict.h"
#include "models/recsys/dlrm_reference.h"
#include "models/registry.h"
#include "support/test_seed.h"

namespace fk::models::recsys {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<DlrmModel> loaded(const std::string& model, Device device, const fs::path& checkpoint,
                                  int64_t max_samples) {
  std::unique_ptr<Model> m = create_model(model);
  FK_CHECK(dynamic_cast<DlrmModel*>(m.get()) != nullptr, model, " is not a DLRM");
  std::unique_ptr<DlrmModel> out(static_cast<DlrmModel*>(m.release()));
  LoadOptions o;
  o.device = device;
  o.dtype = DType::bf16;
  o.checkpoint = checkpoint;
  o.seed = 3;
  o.max_tokens = max_samples;
  out->load(o);
  return out;
}

TEST(DlrmGpu, TinyMatchesCpuAndTheExactForward) {
  FK_REQUIRE_GPU();
  const std::string config_json(resolve_model("tiny-dlrmv2").config_json);
  const DlrmConfig c = parse_dlrm_config(config_json, "tiny-dlrmv2");
  const uint64_t seed = test::seed_for("dlrm_gpu_tiny");
  const test::dlrm::HostWeights w = test::dlrm::random_host_weights(c, seed);
  const fs::path dir = fs::temp_directory_path() / ("fk_dlrm_gpu_test_" + std::to_string(::getpid()));
  test::dlrm::write_checkpoint(dir, config_json, c, w);
  const std::vector<DlrmSample> samples = test::dlrm::random_samples(c, 37, seed + 1, 3);
  const auto cpu = loaded(dir.string(), Device::cpu(), dir, 64);
  const auto gpu = loaded(dir.string(), Device::cuda(), dir, 64);
  const auto on_cpu = dlrm_predict(*cpu, samples), on_gpu = dlrm_predict(*gpu, samples);
  const auto exact = test::dlrm::reference_logits(c, w, samples, DType::bf16, std::nullopt);
  const double ulp = 1.0 / 128;
  for (size_t s = 0; s < samples.size(); ++s) {
    EXPECT_NEAR(on_gpu[s].logit, on_cpu[s].logit, 16 * ulp * (1 + std::fabs(on_cpu[s].logit))) << "sample " << s;
    EXPECT_NEAR(on_gpu[s].logit, exact[s], 8 * ulp * (1 + std::fabs(exact[s]))) << "sample " << s;
  }
  // Alone and in the batch.
  for (size_t s : {size_t{0}, size_t{17}, size_t{36}}) {
    const auto alone = dlrm_predict(*gpu, {samples[s]});
    EXPECT_NEAR(alone[0].logit, on_gpu[s].logit, 4 * ulp * (1 + std::fabs(on_gpu[s].logit))) << "sample " << s;
  }
  fs::remove_all(dir);
}

// MLPerf's DLRMv2 at a serving batch: every table's bag of its multi-hot size, ids uniform.
TEST(DlrmGpu, ProductionPresetRunsABatch) {
  FK_REQUIRE_GPU();
  const int64_t batch = 2048;
  std::unique_ptr<DlrmModel> model;
  try {
    model = loaded("dlrmv2", Device::cuda(), {}, batch);
  } catch (const Error& e) {
    GTEST_SKIP() << "dlrmv2 needs 52 GB of device memory for its tables: " << e.what();
  }
  const DlrmConfig& c = model->config();
  const int64_t hot[26] = {3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};
  std::mt19937_64 rng(test::seed_for("dlrm_gpu_production"));
  std::vector<DlrmSample> samples(static_cast<size_t>(batch));
  for (DlrmSample& s : samples) {
    for (int64_t k = 0; k < c.dense_features; ++k)
      s.dense.push_back(static_cast<float>(std::log1p(static_cast<double>(rng() % 1000))));
    for (int64_t t = 0; t < c.num_tables(); ++t) {
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < hot[t]; ++i)
        ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.table_sizes[static_cast<size_t>(t)])));
      s.sparse.push_back(std::move(ids));
    }
  }
  dlrm_predict(*model, samples);  // warm-up: cuBLASLt's algorithm choice
  const auto t0 = std::chrono::steady_clock::now();
  const auto got = dlrm_predict(*model, samples);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(got.size(), samples.size());
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_TRUE(std::isfinite(got[s].logit)) << "sample " << s;
    ASSERT_GE(got[s].probability, 0.f);
    ASSERT_LE(got[s].probability, 1.f);
  }
  std::printf("[ dlrm ] dlrmv2 bf16, %lld samples: %.2f ms a batch with host packing and copies (informational)\n",
              static_cast<long long>(batch), ms);
}

}  // namespace
}  // namespace fk::models::recsys
