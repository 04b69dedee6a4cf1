// Qwen3-VL's image processor: smart_resize against values worked out from upstream's
// formula (rounding halves to even, the pixel budget, the aspect-ratio limit); a size that
// needs no resize laid out exactly as upstream's patchify (the expected layout built here
// pixel by pixel); bicubic resize keeping flat colours; PNG/JPEG decoding and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "models/vlm/qwen3_vl/image_processor.h"
#include "support/test_seed.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>

namespace fk::models::vlm {
namespace {

Qwen3VLVisionConfig tiny() {
  Qwen3VLVisionConfig c;
  c.patch_size = 4;
  c.spatial_merge_size = 2;
  c.temporal_patch_size = 2;
  return c;
}

RgbImage random_image(int64_t h, int64_t w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  RgbImage im{h, w, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  for (auto& p : im.pixels) p = static_cast<uint8_t>(rng() & 0xFF);
  return im;
}

TEST(Qwen3VLImageProcessor, SmartResize) {
  using A = std::array<int64_t, 2>;
  EXPECT_EQ(qwen3_vl_smart_resize(480, 640, 32, 65536, 16777216), (A{480, 640}));
  EXPECT_EQ(qwen3_vl_smart_resize(4000, 3000, 32, 65536, 16777216), (A{4000, 3008}));
  EXPECT_EQ(qwen3_vl_smart_resize(4000, 3000, 32, 65536, 1048576), (A{1152, 864}));   // over the budget
  EXPECT_EQ(qwen3_vl_smart_resize(10, 10, 32, 65536, 16777216), (A{256, 256}));       // under it
  EXPECT_EQ(qwen3_vl_smart_resize(100, 50, 28, 3136, 1003520), (A{112, 56}));
  EXPECT_EQ(qwen3_vl_smart_resize(20, 36, 8, 64, 4096), (A{16, 32}));  // 2.5 and 4.5 round to even
  try {
    qwen3_vl_smart_resize(1, 300, 32, 64, 1 << 20);
    ADD_FAILURE() << "an aspect ratio of 300 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aspect ratio over 200"), std::string::npos) << e.what();
  }
}

// 16 x 24 pixels at patch 4 and merge 2 need no resize: grid (1, 4, 6). Each pixel value
// lands, for every frame copy, in the patch of its merge window and the column of its
// channel, frame and place in the patch.
TEST(Qwen3VLImageProcessor, PatchLayoutWithoutResize) {
  const Qwen3VLVisionConfig c = tiny();
  const RgbImage im = random_image(16, 24, test::seed_for("qwen3_vl_patch_layout"));
  ImageProcessorOptions o;
  o.min_pixels = 64;
  o.max_pixels = 4096;
  o.mean = {0.25, 0.5, 0.75};
  o.std = {0.5, 0.25, 0.125};
  const ProcessedImage p = qwen3_vl_process_image(im, c, o);
  ASSERT_EQ(p.grid, (std::array<int64_t, 3>{1, 4, 6}));
  EXPECT_EQ(p.tokens, 6);
  ASSERT_EQ(p.pixel_values.size(0), 24);
  ASSERT_EQ(p.pixel_values.size(1), 96);
  std::vector<float> want(24 * 96, -1e9f);
  const int64_t windows_per_row = 6 / 2;
  for (int64_t y = 0; y < 16; ++y)
    for (int64_t x = 0; x < 24; ++x)
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t t = 0; t < 2; ++t) {
          const int64_t py = y / 4, px = x / 4;  // patch row and column
          const int64_t patch = ((py / 2) * windows_per_row + px / 2) * 4 + (py % 2) * 2 + px % 2;
          const int64_t col = ((ch * 2 + t) * 4 + y % 4) * 4 + x % 4;
          const double v = im.pixels[static_cast<size_t>((y * 24 + x) * 3 + ch)] / 255.0;
          want[static_cast<size_t>(patch * 96 + col)] =
              static_cast<float>((v - o.mean[static_cast<size_t>(ch)]) / o.std[static_cast<size_t>(ch)]);
        }
  const float* got = p.pixel_values.data_as<float>();
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
}

TEST(Qwen3VLImageProcessor, ResizeKeepsFlatColoursAndSizes) {
  RgbImage flat{10, 30, {}};
  for (int64_t i = 0; i < 10 * 30; ++i) flat.pixels.insert(flat.pixels.end(), {200, 17, 99});
  for (auto [h, w] : {std::pair<int64_t, int64_t>{16, 32}, {5, 7}, {40, 24}}) {
    const RgbImage r = resize_bicubic(flat, h, w);
    ASSERT_EQ(r.height, h);
    ASSERT_EQ(r.width, w);
    for (int64_t i = 0; i < h * w; ++i) {
      EXPECT_EQ(r.pixels[static_cast<size_t>(3 * i)], 200);
      EXPECT_EQ(r.pixels[static_cast<size_t>(3 * i + 1)], 17);
      EXPECT_EQ(r.pixels[static_cast<size_t>(3 * i + 2)], 99);
    }
  }
  // A size off the grid is resized to it: 10 x 30 at factor 8 -> 8 x 32 (grid 2 x 8).
  ImageProcessorOptions o;
  o.min_pixels = 64;
  o.max_pixels = 4096;
  const ProcessedImage p = qwen3_vl_process_image(flat, tiny(), o);
  EXPECT_EQ(p.grid, (std::array<int64_t, 3>{1, 2, 8}));
  EXPECT_EQ(p.tokens, 4);
}

TEST(Qwen3VLImageProcessor, DecodesPngAndJpegAndNamesBadFiles) {
  const RgbImage im = random_image(12, 20, test::seed_for("qwen3_vl_decode"));
  const auto dir = std::filesystem::temp_directory_path() / ("fk_qwen3_vl_images_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string png = (dir / "a.png").string(), jpg = (dir / "a.jpg").string(), bad = (dir / "bad.png").string();
  ASSERT_TRUE(stbi_write_png(png.c_str(), 20, 12, 3, im.pixels.data(), 20 * 3));
  RgbImage smooth{12, 20, {}};  // JPEG keeps a smooth picture close; noise it would not
  for (int64_t y = 0; y < 12; ++y)
    for (int64_t x = 0; x < 20; ++x)
      smooth.pixels.insert(smooth.pixels.end(), {static_cast<uint8_t>(10 * x), static_cast<uint8_t>(20 * y), 128});
  ASSERT_TRUE(stbi_write_jpg(jpg.c_str(), 20, 12, 3, smooth.pixels.data(), 100));
  std::ofstream(bad) << "not an image";
  const RgbImage a = load_rgb_image(png);
  EXPECT_EQ(a.height, 12);
  EXPECT_EQ(a.width, 20);
  EXPECT_EQ(a.pixels, im.pixels);  // lossless
  const RgbImage b = load_rgb_image(jpg);
  ASSERT_EQ(b.pixels.size(), im.pixels.size());
  double err = 0;
  for (size_t i = 0; i < b.pixels.size(); ++i) err += std::abs(int{b.pixels[i]} - int{smooth.pixels[i]});
  EXPECT_LT(err / static_cast<double>(b.pixels.size()), 8.0);  // lossy, but the same picture
  try {
    load_rgb_image(bad);
    ADD_FAILURE() << "garbage decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not decode as PNG or JPEG"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fk::models::vlm
