// The vision models' preprocessing against its upstream definitions worked out here: the
// classifiers' eval transform (resize of the shorter side to floor(size / crop_pct), the longer
// truncated in proportion, the centre crop with Python's half-to-even offsets, ImageNet
// normalisation; or the whole image squashed to the size) checked pixel by pixel against the
// bicubic resize it starts from; YOLO's letterbox geometry (scale, Ultralytics' padding split,
// grey 114) and its inverse on boxes, clipped; the stacking of images and its errors.
#include "models/vision/image_input.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::models::vision {
namespace {

image::RgbImage random_image(int64_t h, int64_t w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  image::RgbImage im{h, w, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  for (uint8_t& p : im.pixels) p = static_cast<uint8_t>(rng() % 256);
  return im;
}

TEST(ImageInput, TimmEvalTransformResizesCropsAndNormalises) {
  const image::RgbImage im = random_image(300, 200, test::seed_for("timm_eval"));
  ClassifierTransform t;
  t.size = 64;
  t.crop_pct = 0.875;
  const std::vector<float> px = classifier_pixels(im, t);
  ASSERT_EQ(px.size(), 64u * 64u * 3u);
  // floor(64 / 0.875) = 73 on the shorter side (the width); the height int(73 * 300 / 200) =
  // 109; the crop's top round(22.5) = 22 (half to even), left round(4.5) = 4.
  const image::RgbImage r = image::resize_bicubic(im, 109, 73);
  for (int64_t y : {0, 17, 63})
    for (int64_t x : {0, 40, 63})
      for (int64_t c = 0; c < 3; ++c) {
        const double v = r.pixels[static_cast<size_t>(((22 + y) * 73 + 4 + x) * 3 + c)] / 255.0;
        const double want = (v - t.mean[static_cast<size_t>(c)]) / t.std[static_cast<size_t>(c)];
        EXPECT_NEAR(px[static_cast<size_t>((y * 64 + x) * 3 + c)], want, 1e-6) << y << " " << x << " " << c;
      }
  // A square image at the crop size itself with crop_pct 1 is only normalised.
  const image::RgbImage sq = random_image(32, 32, test::seed_for("timm_eval_square"));
  t.size = 32, t.crop_pct = 1.0;
  const std::vector<float> same = classifier_pixels(sq, t);
  for (size_t i = 0; i < same.size(); ++i)
    ASSERT_NEAR(same[i], (sq.pixels[i] / 255.0 - t.mean[i % 3]) / t.std[i % 3], 1e-6) << i;
  // squash (transformers' ConvNeXt at 384 and above): the whole image resized to size x size.
  t.size = 24, t.squash = true;
  const std::vector<float> squashed = classifier_pixels(im, t);
  const image::RgbImage whole = image::resize_bicubic(im, 24, 24);
  for (size_t i = 0; i < squashed.size(); ++i)
    ASSERT_NEAR(squashed[i], (whole.pixels[i] / 255.0 - t.mean[i % 3]) / t.std[i % 3], 1e-6) << i;
  t.squash = false, t.crop_pct = 0;
  EXPECT_THROW(classifier_pixels(sq, t), Error);
}

TEST(ImageInput, LetterboxGeometryAndBoxesBack) {
  image::RgbImage im{100, 200, std::vector<uint8_t>(100 * 200 * 3, 255)};
  const Letterboxed l = letterbox(im, 64);
  ASSERT_EQ(l.pixels.size(), 64u * 64u * 3u);
  EXPECT_DOUBLE_EQ(l.scale, 0.32);  // min(64 / 100, 64 / 200)
  EXPECT_EQ(l.pad_x, 0);
  EXPECT_EQ(l.pad_y, 16);  // (64 - 32) / 2
  EXPECT_EQ(l.height, 100);
  EXPECT_EQ(l.width, 200);
  const auto at = [&](int64_t y, int64_t x) { return l.pixels[static_cast<size_t>((y * 64 + x) * 3)]; };
  EXPECT_FLOAT_EQ(at(0, 10), 114.0f / 255.0f);  // padding above
  EXPECT_FLOAT_EQ(at(15, 63), 114.0f / 255.0f);
  EXPECT_FLOAT_EQ(at(16, 0), 1.0f);  // the image
  EXPECT_FLOAT_EQ(at(47, 63), 1.0f);
  EXPECT_FLOAT_EQ(at(48, 30), 114.0f / 255.0f);  // padding below
  const float whole[4] = {0, 16, 64, 48};
  EXPECT_EQ(unletterbox_box(l, whole), (std::array<float, 4>{0, 0, 200, 100}));
  const float outside[4] = {-5, 2, 70, 60};  // clipped to the image
  EXPECT_EQ(unletterbox_box(l, outside), (std::array<float, 4>{0, 0, 200, 100}));
  // An odd padding splits as Ultralytics' round(pad / 2 -+ 0.1): 64 - 37 = 27, left 13.
  const Letterboxed odd = letterbox(image::RgbImage{64, 37, std::vector<uint8_t>(64 * 37 * 3)}, 64);
  EXPECT_EQ(odd.pad_x, 13);
  EXPECT_EQ(odd.pad_y, 0);
  EXPECT_THROW(letterbox(image::RgbImage{}, 64), Error);
}

TEST(ImageInput, StackPixels) {
  const Tensor t = stack_pixels({std::vector<float>(2 * 2 * 3, 1.f), std::vector<float>(2 * 2 * 3, 2.f)}, 2);
  EXPECT_EQ(t.shape(), (Shape{2, 2, 2, 3}));
  EXPECT_EQ(t.data_as<float>()[12], 2.f);
  EXPECT_THROW(stack_pixels({std::vector<float>(5)}, 2), Error);
  EXPECT_THROW(stack_pixels({}, 2), Error);
}

}  // namespace
}  // namespace fk::models::vision
