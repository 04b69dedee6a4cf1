#include "models/vlm/qwen3_vl/image_processor.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::models::vlm {

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
