#include "models/vlm/qwen3_vl/image_processor.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::models::vlm {
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

}  // namespace

std::array<int64_t, 2> qwen3_vl_smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                             int64_t max_pixels) {
  FK_CHECK(height > 0 && width > 0, "qwen3_vl image processor: an image of ", height, " x ", width, " pixels is empty");
  FK_CHECK(factor > 0 && min_pixels > 0 && max_pixels >= min_pixels, "qwen3_vl image processor: factor ", factor,
           " and the pixel range [", min_pixels, ", ", max_pixels, "] must be positive and ordered");
  FK_CHECK(std::max(height, width) <= 200 * std::min(height, width), "qwen3_vl image processor: an image of ", height,
           " x ", width, " has an aspect ratio over 200");
  const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  // Python's round(): halves to even.
  auto round_to = [&](double x) { return static_cast<int64_t>(std::nearbyint(x / f)) * factor; };
  int64_t hb = std::max(factor, round_to(h)), wb = std::max(factor, round_to(w));
  if (hb * wb > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    hb = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    wb = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (hb * wb < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    hb = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    wb = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {hb, wb};
}

RgbImage resize_bicubic(const RgbImage& im, int64_t height, int64_t width) {
  FK_CHECK(im.height > 0 && im.width > 0 && static_cast<int64_t>(im.pixels.size()) == im.height * im.width * 3,
           "resize: an RGB image of ", im.height, " x ", im.width, " needs ", im.height * im.width * 3, " bytes, has ",
           im.pixels.size());
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
          v += w[k] * im.pixels[static_cast<size_t>((y * im.width + tx.first[static_cast<size_t>(x)] + static_cast<int64_t>(k)) * 3 + c)];
        mid[static_cast<size_t>((y * width + x) * 3 + c)] = to_u8(v);
      }
  RgbImage out{height, width, std::vector<uint8_t>(static_cast<size_t>(height * width * 3))};
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        double v = 0;
        const auto& w = ty.weights[static_cast<size_t>(y)];
        for (size_t k = 0; k < w.size(); ++k)
          v += w[k] * mid[static_cast<size_t>(((ty.first[static_cast<size_t>(y)] + static_cast<int64_t>(k)) * width + x) * 3 + c)];
        out.pixels[static_cast<size_t>((y * width + x) * 3 + c)] = to_u8(v);
      }
  return out;
}

ImageProcessorOptions qwen3_vl_processor_options(const Qwen3VLVisionConfig& c, int64_t max_patches) {
  ImageProcessorOptions o;
  const int64_t area = c.patch_size * c.patch_size;
  o.min_pixels = 256 * area;
  o.max_pixels = std::max(o.min_pixels, std::min<int64_t>(65536, max_patches) * area);
  return o;
}

ProcessedImage qwen3_vl_process_image(const RgbImage& image, const Qwen3VLVisionConfig& c,
                                      const ImageProcessorOptions& o) {
  FK_CHECK(c.in_channels == 3, "qwen3_vl image processor: RGB images need in_channels 3, the config has ",
           c.in_channels);
  const int64_t P = c.patch_size, m = c.spatial_merge_size, Tp = c.temporal_patch_size;
  const auto [H, W] = qwen3_vl_smart_resize(image.height, image.width, P * m, o.min_pixels, o.max_pixels);
  const RgbImage r = resize_bicubic(image, H, W);
  const int64_t gh = H / P, gw = W / P, dim = 3 * Tp * P * P;
  ProcessedImage out;
  out.grid = {1, gh, gw};
  out.tokens = gh * gw / (m * m);
  out.pixel_values = Tensor::empty({gh * gw, dim}, DType::f32);
  float* dst = out.pixel_values.data_as<float>();
  int64_t patch = 0;
  for (int64_t bh = 0; bh < gh / m; ++bh)
    for (int64_t bw = 0; bw < gw / m; ++bw)
      for (int64_t mh = 0; mh < m; ++mh)
        for (int64_t mw = 0; mw < m; ++mw, ++patch) {
          const int64_t y0 = (bh * m + mh) * P, x0 = (bw * m + mw) * P;
          float* row = dst + patch * dim;
          for (int64_t ch = 0; ch < 3; ++ch)
            for (int64_t t = 0; t < Tp; ++t)  // the still image repeated over the frames
              for (int64_t py = 0; py < P; ++py)
                for (int64_t px = 0; px < P; ++px) {
                  const double v = r.pixels[static_cast<size_t>(((y0 + py) * W + x0 + px) * 3 + ch)] / 255.0;
                  row[((ch * Tp + t) * P + py) * P + px] =
                      static_cast<float>((v - o.mean[static_cast<size_t>(ch)]) / o.std[static_cast<size_t>(ch)]);
                }
        }
  return out;
}

}  // namespace fk::models::vlm
