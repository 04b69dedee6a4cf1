// The image classifiers' golden check, shared by the CPU tests and their GPU twins: a tiny
// config's upstream model (timm's MobileNetV4 conv_small in vision/mobilenetv4/ and conv_medium
// in mobilenetv4_medium/, made by tests/data/models/vision/make_mobilenetv4_goldens.py;
// transformers' ConvNeXt V2 in convnextv2/, made by make_convnextv2_goldens.py) against the
// engine's bf16 forward on the same weights and images.
//
// Tolerance: the engine stores every activation in bf16 (relative rounding 2^-9) after each
// of the layers on the longest path (~45 convolutions in conv_small, ~75 in conv_medium, ~40
// ops in the tiny ConvNeXt V2), and MobileNetV4's folded weights are rounded to bf16 once more
// after folding; these roundings are independent, so they add as a random walk:
// sqrt(75 + 75) * 2^-9 ~ 2.4% of a typical activation, which is what a logit can drift by.
// So per image: cosine >= 0.999 and a relative L2 error below 5%, on both the pooled
// features and the logits; cosine >= 0.99 on the logits less their mean over the images
// (the part that tells images apart, a fifth of the whole with these random weights, so the
// same absolute error weighs about four times more); and the top-1 class where the
// reference's top two logits are further apart than the error.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/runtime.h"
#include "models/registry.h"
#include "models/vision/image_classify.h"
#include "models/vision/image_classifier.h"

namespace fk::models::vision::classifier_golden {

// The golden folders under tests/data/models/vision/.
inline constexpr const char* kSmall = "mobilenetv4";
inline constexpr const char* kMedium = "mobilenetv4_medium";
inline constexpr const char* kConvNextV2 = "convnextv2";

inline std::filesystem::path data_dir(const char* folder) {
  return std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/vision" / folder;
}

inline std::vector<double> row(const TensorView& v, int64_t i) {
  const int64_t width = v.shape[1];
  std::vector<double> out(static_cast<size_t>(width));
  for (int64_t j = 0; j < width; ++j)
    out[static_cast<size_t>(j)] =
        load_element(static_cast<const char*>(v.data) + (i * v.strides[0] + j) * v.element_size(), v.dtype);
  return out;
}

struct Agreement {
  double cosine, relative;
};

inline Agreement agreement(const std::vector<double>& got, const std::vector<double>& want) {
  double dot = 0, gg = 0, ww = 0, err = 0;
  for (size_t j = 0; j < want.size(); ++j) {
    dot += got[j] * want[j], gg += got[j] * got[j], ww += want[j] * want[j];
    err += (got[j] - want[j]) * (got[j] - want[j]);
  }
  return {dot / std::sqrt(gg * ww), std::sqrt(err / ww)};
}

// A host copy of a (possibly device) [N, C] view.
inline Tensor host_copy(const TensorView& v) {
  Tensor t = Tensor::empty({v.shape[0], v.shape[1]}, v.dtype);
  rt::memcpy_sync(t.data(), Device::cpu(), v.data, v.device, static_cast<size_t>(t.nbytes()));
  return t;
}

inline void check_tiny(Device device, const char* folder) {
  const std::filesystem::path dir = data_dir(folder);
  const safetensors::File g = safetensors::File::open(dir / "golden.safetensors");
  auto model = create_model(dir.string());
  auto* classifier = dynamic_cast<ImageClassifier*>(model.get());
  ASSERT_NE(classifier, nullptr);
  LoadOptions o;
  o.device = device;
  o.dtype = DType::bf16;
  o.checkpoint = dir / "model.safetensors";
  const Tensor images = g.load_tensor("images");
  o.max_seqs = images.size(0);
  classifier->load(o);
  const Tensor logits = classifier_logits(*classifier, images);
  const Tensor pooled = host_copy(classifier->pooled_output());
  const TensorView want_logits = g.view("logits"), want_pooled = g.view("pooled");
  ASSERT_EQ(logits.size(1), want_logits.shape[1]);
  ASSERT_EQ(pooled.size(1), want_pooled.shape[1]);
  const int64_t n = images.size(0), classes = logits.size(1);
  // What tells the images apart: each logit minus its mean over the images (with random
  // weights a large part of every logit is the same for all images).
  std::vector<double> got_mean(static_cast<size_t>(classes)), want_mean(static_cast<size_t>(classes));
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<double> got = row(logits.view(), i), want = row(want_logits, i);
    for (int64_t j = 0; j < classes; ++j)
      got_mean[static_cast<size_t>(j)] += got[static_cast<size_t>(j)] / static_cast<double>(n),
          want_mean[static_cast<size_t>(j)] += want[static_cast<size_t>(j)] / static_cast<double>(n);
  }
  for (int64_t i = 0; i < n; ++i) {
    const Agreement p = agreement(row(pooled.view(), i), row(want_pooled, i));
    const std::vector<double> got = row(logits.view(), i), want = row(want_logits, i);
    const Agreement l = agreement(got, want);
    std::printf("[ golden ] %s %s image %lld: pooled cosine %.6f rel %.4f, logits cosine %.6f rel %.4f\n", folder,
                device.is_cpu() ? "cpu" : "cuda", static_cast<long long>(i), p.cosine, p.relative, l.cosine,
                l.relative);
    EXPECT_GE(p.cosine, 0.999) << "image " << i << ": pooled features";
    EXPECT_LT(p.relative, 0.05) << "image " << i << ": pooled features";
    EXPECT_GE(l.cosine, 0.999) << "image " << i << ": logits";
    EXPECT_LT(l.relative, 0.05) << "image " << i << ": logits";
    size_t top = 0, second = want[0] > want[1] ? 1 : 0;
    for (size_t j = 0; j < want.size(); ++j)
      if (want[j] > want[top]) top = j;
    for (size_t j = 0; j < want.size(); ++j)
      if (j != top && (second == top || want[j] > want[second])) second = j;
    double norm = 0;
    for (double w : want) norm += w * w;
    std::vector<double> got_c = got, want_c = want;
    for (int64_t j = 0; j < classes; ++j)
      got_c[static_cast<size_t>(j)] -= got_mean[static_cast<size_t>(j)],
          want_c[static_cast<size_t>(j)] -= want_mean[static_cast<size_t>(j)];
    const Agreement c = agreement(got_c, want_c);
    std::printf("[ golden ] %s image %lld: logits less their mean over the images: cosine %.6f rel %.4f\n", folder,
                static_cast<long long>(i), c.cosine, c.relative);
    EXPECT_GE(c.cosine, 0.99) << "image " << i << ": logits less their mean over the images";
    if (want[top] - want[second] > 0.1 * std::sqrt(norm)) {
      const size_t got_top = static_cast<size_t>(std::max_element(got.begin(), got.end()) - got.begin());
      EXPECT_EQ(got_top, top) << "image " << i << ": top-1 class";
    }
  }
}

}  // namespace fk::models::vision::classifier_golden
