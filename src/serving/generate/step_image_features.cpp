#include "serving/generate/step_image_features.h"

#include "fk/status.h"
#include "models/vlm/qwen3_vl/image_features.h"

namespace fk::engine {
namespace {

class ScatteredImageFeatures final : public StepImageFeatures {
 public:
  ScatteredImageFeatures(std::vector<StepImageSpan> spans, Device device) {
    for (StepImageSpan& s : spans) {
      // The step's runs of image tokens of this request: packed offsets and feature rows.
      std::vector<models::vlm::ImageTokenRun> runs;
      const std::vector<int64_t>& f = *s.feature_of;
      const int64_t end = std::min<int64_t>(s.start + s.count, static_cast<int64_t>(f.size()));
      for (int64_t i = s.start; i < end; ++i) {
        const int64_t row = f[static_cast<size_t>(i)];
        if (row < 0) continue;
        const int64_t token = s.packed + (i - s.start);
        if (!runs.empty() && runs.back().token + runs.back().length == token &&
            runs.back().feature + runs.back().length == row)
          ++runs.back().length;
        else
          runs.push_back({token, row, 1});
      }
      if (runs.empty()) continue;
      parts_.push_back({models::vlm::ImageFeatureScatter(std::move(runs), device), std::move(s.features)});
    }
  }

  void place(const TensorView& embeds, void* stream) const override {
    for (const Part& p : parts_) p.scatter.place(embeds, p.features->merged.view(), stream);
  }

  void inject(int64_t layer, const TensorView& hidden, void* stream) const override {
    for (const Part& p : parts_)
      if (layer < static_cast<int64_t>(p.features->deepstack.size()))
        p.scatter.inject(hidden, p.features->deepstack[static_cast<size_t>(layer)].view(), stream);
  }

 private:
  struct Part {
    models::vlm::ImageFeatureScatter scatter;
    std::shared_ptr<ImageFeatures> features;
  };
  std::vector<Part> parts_;
};

}  // namespace

std::unique_ptr<StepImageFeatures> make_step_image_features(std::vector<StepImageSpan> spans, Device device) {
  for (const StepImageSpan& s : spans)
    FK_CHECK(s.features && s.feature_of, "step image features: a request's features are missing");
  return std::make_unique<ScatteredImageFeatures>(std::move(spans), device);
}

}  // namespace fk::engine
