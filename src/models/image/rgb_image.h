// An 8-bit RGB image and what every model family's image input starts from: decoding (PNG,
// JPEG) and resampling as the upstream preprocessors do (PIL's antialiased bicubic for timm
// and Qwen-VL, OpenCV's bilinear for YOLO's letterbox).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace fk::models::image {

// Rows top to bottom, pixels interleaved (R, G, B).
struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [height, width, 3]
};

// Bicubic resize (PIL's filter: a = -0.5, support widened by the scale when shrinking),
// values rounded and clamped to 8 bits as PIL stores them.
RgbImage resize_bicubic(const RgbImage& image, int64_t height, int64_t width);

// Bilinear resize as OpenCV's INTER_LINEAR: half-pixel centres, two input pixels per axis
// whatever the scale (no antialiasing), values rounded to 8 bits.
RgbImage resize_bilinear(const RgbImage& image, int64_t height, int64_t width);

// PNG or JPEG (anything stb_image decodes) to RGB; throws naming the file and stb's reason.
RgbImage load_rgb_image(const std::filesystem::path& path);
RgbImage decode_rgb_image(const std::vector<uint8_t>& bytes, const std::string& what);

}  // namespace fk::models::image
