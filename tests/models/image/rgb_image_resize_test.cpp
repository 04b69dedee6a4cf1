// Bilinear resize against OpenCV's INTER_LINEAR worked out by hand (half-pixel centres, edge
// clamping, two taps whatever the scale, rounding to 8 bits); flat colours stay flat under
// both filters; a same-size resize is the identity; a bad image or target is refused.
#include <gtest/gtest.h>

#include <string>

#include "fk/status.h"
#include "models/image/rgb_image.h"

namespace fk::models::image {
namespace {

// A one-row image whose three channels all hold `values`.
RgbImage row(const std::vector<int>& values) {
  RgbImage im{1, static_cast<int64_t>(values.size()), {}};
  for (int v : values)
    for (int c = 0; c < 3; ++c) im.pixels.push_back(static_cast<uint8_t>(v));
  return im;
}

std::vector<int> red(const RgbImage& im) {
  std::vector<int> out;
  for (size_t i = 0; i < im.pixels.size(); i += 3) out.push_back(im.pixels[i]);
  return out;
}

TEST(RgbImageResize, BilinearAsOpenCv) {
  // Up 2x: source x = (o + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (the edge).
  EXPECT_EQ(red(resize_bilinear(row({0, 100}), 1, 4)), (std::vector<int>{0, 25, 75, 100}));
  // Down 2x: x = 0.5 and 2.5, the middle of each pair (227.5 rounds up).
  EXPECT_EQ(red(resize_bilinear(row({0, 100, 200, 255}), 1, 2)), (std::vector<int>{50, 228}));
  // Down 4x: x = 1.5 only: two taps, not four (no antialiasing).
  EXPECT_EQ(red(resize_bilinear(row({0, 0, 40, 80, 255, 255, 255, 255}), 1, 2)), (std::vector<int>{20, 255}));
}

TEST(RgbImageResize, FlatStaysFlatAndSameSizeIsIdentity) {
  RgbImage flat{7, 5, {}};
  for (int64_t i = 0; i < 7 * 5; ++i) flat.pixels.insert(flat.pixels.end(), {200, 10, 77});
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {14, 11}, {7, 9}})
    for (const RgbImage& r : {resize_bilinear(flat, h, w), resize_bicubic(flat, h, w)}) {
      ASSERT_EQ(r.pixels.size(), static_cast<size_t>(h * w * 3));
      for (size_t i = 0; i < r.pixels.size(); i += 3)
        ASSERT_EQ((std::vector<int>{r.pixels[i], r.pixels[i + 1], r.pixels[i + 2]}), (std::vector<int>{200, 10, 77}));
    }
  const RgbImage r = row({1, 2, 3});
  EXPECT_EQ(resize_bilinear(r, 1, 3).pixels, r.pixels);
}

TEST(RgbImageResize, RefusesBadImagesAndTargets) {
  RgbImage bad{2, 2, std::vector<uint8_t>(5)};
  EXPECT_THROW(resize_bilinear(bad, 4, 4), Error);
  EXPECT_THROW(resize_bilinear(row({1, 2}), 0, 4), Error);
}

}  // namespace
}  // namespace fk::models::image
