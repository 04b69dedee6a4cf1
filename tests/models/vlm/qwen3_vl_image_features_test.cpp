// Where Qwen3-VL's image features enter the text model (CPU backend): the runs of image
// tokens in a prompt, the merged features replacing their embeddings in order, and a
// deepstack feature added at exactly those rows; every other row untouched.
#include <gtest/gtest.h>

#include <vector>

#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/vlm/qwen3_vl/image_features.h"
#include "support/test_seed.h"

namespace fk::models::vlm {
namespace {

constexpr int64_t kImage = 60;

TEST(Qwen3VLImageFeatures, RunsInPromptOrder) {
  const std::vector<ImageTokenRun> runs = image_token_runs({1, kImage, kImage, 2, 3, kImage, kImage, kImage, 4}, kImage);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].token, 1);
  EXPECT_EQ(runs[0].feature, 0);
  EXPECT_EQ(runs[0].length, 2);
  EXPECT_EQ(runs[1].token, 5);
  EXPECT_EQ(runs[1].feature, 2);
  EXPECT_EQ(runs[1].length, 3);
  EXPECT_TRUE(image_token_runs({1, 2, 3}, kImage).empty());
}

TEST(Qwen3VLImageFeatures, PlaceAndInjectTouchOnlyImageRows) {
  const uint64_t seed = test::seed_for("qwen3_vl_image_features");
  const std::vector<int64_t> ids = {1, kImage, kImage, 2, 3, kImage, kImage, kImage, 4};
  const int64_t T = 9, H = 24;
  ImageFeatureScatter scatter(image_token_runs(ids, kImage), Device::cpu());
  ASSERT_EQ(scatter.features(), 5);
  Tensor embeds = Tensor::empty({T, H}, DType::bf16), merged = Tensor::empty({5, H}, DType::bf16);
  Tensor deep = Tensor::empty({5, H}, DType::bf16);
  fill_uniform(embeds.view(), seed, 1, -1.f, 1.f);
  fill_uniform(merged.view(), seed, 2, -1.f, 1.f);
  fill_uniform(deep.view(), seed, 3, -1.f, 1.f);
  const Tensor before = embeds.clone();
  scatter.place(embeds.view(), merged.view(), nullptr);
  int64_t f = 0;
  for (int64_t t = 0; t < T; ++t) {
    const bool image = ids[static_cast<size_t>(t)] == kImage;
    for (int64_t h = 0; h < H; ++h)
      ASSERT_EQ(get(embeds.view(), t, h), image ? get(merged.view(), f, h) : get(before.view(), t, h)) << t << ", " << h;
    f += image;
  }
  const Tensor placed = embeds.clone();
  scatter.inject(embeds.view(), deep.view(), nullptr);
  f = 0;
  for (int64_t t = 0; t < T; ++t) {
    const bool image = ids[static_cast<size_t>(t)] == kImage;
    for (int64_t h = 0; h < H; ++h) {
      const double want = image ? get(placed.view(), t, h) + get(deep.view(), f, h) : get(placed.view(), t, h);
      // One rounding of the exact sum to bf16.
      Tensor r = Tensor::empty({1}, DType::bf16);
      store_element(r.data(), DType::bf16, want);
      ASSERT_EQ(get(embeds.view(), t, h), load_element(r.data(), DType::bf16)) << t << ", " << h;
    }
    f += image;
  }
  Tensor short_merged = Tensor::empty({4, H}, DType::bf16);
  EXPECT_THROW(scatter.place(embeds.view(), short_merged.view(), nullptr), Error);
}

}  // namespace
}  // namespace fk::models::vlm
