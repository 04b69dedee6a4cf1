// Encoded images for tests that send or read image files: PNG and JPEG bytes of an RgbImage
// (stb_image_write, compiled static into the including test: include from one file per test
// executable), standard base64 and data URLs.
#pragma once
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <gtest/gtest.h>
#include <stb/stb_image_write.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/image/rgb_image.h"

namespace fk::test {

inline void append_image_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

inline std::vector<uint8_t> png_bytes(const models::image::RgbImage& im) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(stbi_write_png_to_func(append_image_bytes, &out, static_cast<int>(im.width), static_cast<int>(im.height),
                                     3, im.pixels.data(), static_cast<int>(im.width * 3)));
  return out;
}

inline std::vector<uint8_t> jpeg_bytes(const models::image::RgbImage& im) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(stbi_write_jpg_to_func(append_image_bytes, &out, static_cast<int>(im.width), static_cast<int>(im.height),
                                     3, im.pixels.data(), 95));
  return out;
}

inline std::string base64(const std::vector<uint8_t>& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= bytes[i + 2];
    out += digits[(v >> 18) & 63];
    out += digits[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? digits[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? digits[v & 63] : '=';
  }
  return out;
}

inline std::string data_url(const std::string& type, const std::vector<uint8_t>& bytes) {
  return "data:" + type + ";base64," + base64(bytes);
}

}  // namespace fk::test
