#include "models/vision/image_input.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::models::vision {
namespace {

// The size x size window of `r` at (top, left), / 255, normalised.
std::vector<float> normalised(const image::RgbImage& r, int64_t top, int64_t left, const ClassifierTransform& t) {
  std::vector<float> out(static_cast<size_t>(t.size * t.size * 3));
  for (int64_t y = 0; y < t.size; ++y)
    for (int64_t x = 0; x < t.size; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        const double v = r.pixels[static_cast<size_t>(((top + y) * r.width + left + x) * 3 + c)] / 255.0;
        out[static_cast<size_t>((y * t.size + x) * 3 + c)] =
            static_cast<float>((v - t.mean[static_cast<size_t>(c)]) / t.std[static_cast<size_t>(c)]);
      }
  return out;
}

}  // namespace

std::vector<float> classifier_pixels(const image::RgbImage& im, const ClassifierTransform& t) {
  FK_CHECK(t.size > 0 && t.crop_pct > 0 && t.crop_pct <= 1, "image transform: size ", t.size, " and crop_pct ",
           t.crop_pct, " must be positive, crop_pct at most 1");
  FK_CHECK(im.height > 0 && im.width > 0, "image transform: an image of ", im.height, " x ", im.width, " is empty");
  if (t.squash) return normalised(image::resize_bicubic(im, t.size, t.size), 0, 0, t);
  const int64_t scale_size = static_cast<int64_t>(std::floor(static_cast<double>(t.size) / t.crop_pct));
  int64_t h = scale_size, w = scale_size;
  if (im.height < im.width) {
    w = static_cast<int64_t>(static_cast<double>(scale_size) * static_cast<double>(im.width) /
                             static_cast<double>(im.height));
  } else if (im.width < im.height) {
    h = static_cast<int64_t>(static_cast<double>(scale_size) * static_cast<double>(im.height) /
                             static_cast<double>(im.width));
  }
  const image::RgbImage r = image::resize_bicubic(im, h, w);
  // Python's round(): halves to even (std::nearbyint under the default rounding mode).
  const int64_t top = static_cast<int64_t>(std::nearbyint(static_cast<double>(h - t.size) / 2.0));
  const int64_t left = static_cast<int64_t>(std::nearbyint(static_cast<double>(w - t.size) / 2.0));
  return normalised(r, top, left, t);
}

Letterboxed letterbox(const image::RgbImage& im, int64_t size) {
  FK_CHECK(size > 0, "letterbox: the size must be positive, got ", size);
  FK_CHECK(im.height > 0 && im.width > 0, "letterbox: an image of ", im.height, " x ", im.width, " is empty");
  Letterboxed l;
  l.height = im.height, l.width = im.width;
  l.scale = std::min(static_cast<double>(size) / static_cast<double>(im.height),
                     static_cast<double>(size) / static_cast<double>(im.width));
  const int64_t w = std::clamp<int64_t>(std::lround(static_cast<double>(im.width) * l.scale), 1, size);
  const int64_t h = std::clamp<int64_t>(std::lround(static_cast<double>(im.height) * l.scale), 1, size);
  const image::RgbImage r = image::resize_bilinear(im, h, w);
  l.pad_x = std::lround(static_cast<double>(size - w) / 2.0 - 0.1);
  l.pad_y = std::lround(static_cast<double>(size - h) / 2.0 - 0.1);
  l.pixels.assign(static_cast<size_t>(size * size * 3), static_cast<float>(114.0 / 255.0));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c)
        l.pixels[static_cast<size_t>(((l.pad_y + y) * size + l.pad_x + x) * 3 + c)] =
            static_cast<float>(r.pixels[static_cast<size_t>((y * w + x) * 3 + c)] / 255.0);
  return l;
}

std::array<float, 4> unletterbox_box(const Letterboxed& l, const float box[4]) {
  std::array<float, 4> out{};
  for (int i = 0; i < 4; ++i) {
    const bool is_x = i % 2 == 0;
    const double v = (box[i] - static_cast<double>(is_x ? l.pad_x : l.pad_y)) / l.scale;
    out[static_cast<size_t>(i)] =
        static_cast<float>(std::clamp(v, 0.0, static_cast<double>(is_x ? l.width : l.height)));
  }
  return out;
}

Tensor stack_pixels(const std::vector<std::vector<float>>& images, int64_t size) {
  FK_CHECK(!images.empty(), "images: none to stack");
  const size_t per = static_cast<size_t>(size * size * 3);
  Tensor t = Tensor::empty({static_cast<int64_t>(images.size()), size, size, 3}, DType::f32);
  for (size_t i = 0; i < images.size(); ++i) {
    FK_CHECK(images[i].size() == per, "images: image ", i, " holds ", images[i].size(), " values, not ", size, " x ",
             size, " x 3");
    std::copy(images[i].begin(), images[i].end(), t.data_as<float>() + i * per);
  }
  return t;
}

}  // namespace fk::models::vision
