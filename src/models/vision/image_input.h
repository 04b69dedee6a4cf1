// The vision models' upstream preprocessing: a decoded RGB image to the model's input pixels
// ([size, size, 3], channels last, f32), as the models were trained and are served upstream.
//
// - the classifiers' eval transform (timm's; transformers' ConvNeXt below 384): the shorter
//   side resized to floor(size / crop_pct) and the longer in proportion (truncated, as
//   torchvision's Resize), bicubic (PIL's, antialiased); the centre size x size crop (offsets
//   rounded half to even, as Python's round); values / 255, less the mean, over the std per
//   channel. With `squash` (transformers' ConvNeXt at 384 and above) the image is resized to
//   size x size whatever its aspect, no crop.
// - YOLO's letterbox (the detectors): scaled by r = min(size / h, size / w) to
//   round(w r) x round(h r) (OpenCV's bilinear), centred on a size x size canvas of grey 114
//   (left and top padding round(pad - 0.1), as Ultralytics' LetterBox), values / 255. A
//   detection's box maps back to the original image by (box - pad) / r, clipped to it.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "models/image/rgb_image.h"

namespace fk::models::vision {

struct ClassifierTransform {
  int64_t size = 224;
  double crop_pct = 0.875;
  std::array<double, 3> mean = {0.485, 0.456, 0.406};  // ImageNet's
  std::array<double, 3> std = {0.229, 0.224, 0.225};
  bool squash = false;
};

std::vector<float> classifier_pixels(const image::RgbImage& image, const ClassifierTransform& t);

struct Letterboxed {
  std::vector<float> pixels;  // [size, size, 3] in [0, 1]
  double scale = 1;           // r
  int64_t pad_x = 0, pad_y = 0;
  int64_t height = 0, width = 0;  // the original image's
};

Letterboxed letterbox(const image::RgbImage& image, int64_t size);

// x1, y1, x2, y2 in the letterboxed input's pixels to the original image's, clipped to it.
std::array<float, 4> unletterbox_box(const Letterboxed& l, const float box[4]);

// Images' pixels ([size, size, 3] each) as one host f32 tensor [N, size, size, 3].
Tensor stack_pixels(const std::vector<std::vector<float>>& images, int64_t size);

}  // namespace fk::models::vision
