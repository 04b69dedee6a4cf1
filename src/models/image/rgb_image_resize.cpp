#include <algorithm>
#include <cmath>

#include "fk/status.h"
#include "models/image/rgb_image.h"

namespace fk::models::image {
namespace {

// PIL's bicubic kernel (a = -0.5).
double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

// For each output index along one axis: the first input index and the normalised weights
// (PIL's precompute_coeffs: the kernel stretched by the scale when shrinking).
struct Taps {
  std::vector<int64_t> first;
  std::vector<std::vector<double>> weights;
};

Taps taps(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filter_scale = std::max(scale, 1.0);
  const double support = 2.0 * filter_scale;
  Taps t;
  for (int64_t o = 0; o < out; ++o) {
    const double center = (static_cast<double>(o) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(center - support + 0.5));
    const int64_t hi = std::min<int64_t>(in, static_cast<int64_t>(center + support + 0.5));
    std::vector<double> w;
    double sum = 0;
    for (int64_t i = lo; i < hi; ++i) {
      w.push_back(bicubic((static_cast<double>(i) - center + 0.5) / filter_scale));
      sum += w.back();
    }
    for (double& x : w) x = sum != 0 ? x / sum : 0;
    t.first.push_back(lo);
    t.weights.push_back(std::move(w));
  }
  return t;
}

uint8_t to_u8(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

void check_rgb(const RgbImage& im) {
  FK_CHECK(im.height > 0 && im.width > 0 && static_cast<int64_t>(im.pixels.size()) == im.height * im.width * 3,
           "resize: an RGB image of ", im.height, " x ", im.width, " needs ", im.height * im.width * 3, " bytes, has ",
           im.pixels.size());
}

}  // namespace

RgbImage resize_bicubic(const RgbImage& im, int64_t height, int64_t width) {
  check_rgb(im);
  if (height == im.height && width == im.width) return im;
  // Horizontal pass into 8-bit rows, then vertical (PIL's order and rounding).
  const Taps tx = taps(im.width, width), ty = taps(im.height, height);
  std::vector<uint8_t> mid(static_cast<size_t>(im.height * width * 3));
  for (int64_t y = 0; y < im.height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        double v = 0;
        const auto& w = tx.weights[static_cast<size_t>(x)];
        for (size_t k = 0; k < w.size(); ++k)
          v += w[k] * im.pixels[static_cast<size_t>(
                          (y * im.width + tx.first[static_cast<size_t>(x)] + static_cast<int64_t>(k)) * 3 + c)];
        mid[static_cast<size_t>((y * width + x) * 3 + c)] = to_u8(v);
      }
  RgbImage out{height, width, std::vector<uint8_t>(static_cast<size_t>(height * width * 3))};
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        double v = 0;
        const auto& w = ty.weights[static_cast<size_t>(y)];
        for (size_t k = 0; k < w.size(); ++k)
          v += w[k] * mid[static_cast<size_t>(
                          ((ty.first[static_cast<size_t>(y)] + static_cast<int64_t>(k)) * width + x) * 3 + c)];
        out.pixels[static_cast<size_t>((y * width + x) * 3 + c)] = to_u8(v);
      }
  return out;
}

RgbImage resize_bilinear(const RgbImage& im, int64_t height, int64_t width) {
  check_rgb(im);
  FK_CHECK(height > 0 && width > 0, "resize: a target of ", height, " x ", width, " pixels is empty");
  if (height == im.height && width == im.width) return im;
  // Per output index along an axis: the two input indices and the second one's weight.
  struct Pair {
    int64_t i0, i1;
    double w1;
  };
  auto pairs = [](int64_t in, int64_t out) {
    std::vector<Pair> p(static_cast<size_t>(out));
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    for (int64_t o = 0; o < out; ++o) {
      const double src = std::max(0.0, (static_cast<double>(o) + 0.5) * scale - 0.5);
      const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
      p[static_cast<size_t>(o)] = {i0, std::min(i0 + 1, in - 1), src - static_cast<double>(i0)};
    }
    return p;
  };
  const std::vector<Pair> px = pairs(im.width, width), py = pairs(im.height, height);
  RgbImage out{height, width, std::vector<uint8_t>(static_cast<size_t>(height * width * 3))};
  auto at = [&](int64_t y, int64_t x, int64_t c) {
    return static_cast<double>(im.pixels[static_cast<size_t>((y * im.width + x) * 3 + c)]);
  };
  for (int64_t y = 0; y < height; ++y) {
    const Pair& a = py[static_cast<size_t>(y)];
    for (int64_t x = 0; x < width; ++x) {
      const Pair& b = px[static_cast<size_t>(x)];
      for (int64_t c = 0; c < 3; ++c) {
        const double top = at(a.i0, b.i0, c) * (1 - b.w1) + at(a.i0, b.i1, c) * b.w1;
        const double bottom = at(a.i1, b.i0, c) * (1 - b.w1) + at(a.i1, b.i1, c) * b.w1;
        out.pixels[static_cast<size_t>((y * width + x) * 3 + c)] = to_u8(top * (1 - a.w1) + bottom * a.w1);
      }
    }
  }
  return out;
}

}  // namespace fk::models::image
