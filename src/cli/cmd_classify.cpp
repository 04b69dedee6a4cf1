// `fk classify --model M`: an image classifier of the Batch pattern (MobileNetV4, ConvNeXt V2) over
// images given by --image (PNG or JPEG files, preprocessed as timm's eval transform:
// models/vision/image_input.h) or, without them, a batch of random images of a fixed seed
// (standard normal values: images already normalised, the model's input), printing each
// image's top-5 classes and their logits as JSON, with the median time of the forward pass
// and the copy of the logits (preprocessing not included).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/batch_cli.h"
#include "cli/command.h"
#include "cli/model_lookup.h"
#include "cli/variant_option.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/image/rgb_image.h"
#include "models/vision/image_input.h"
#include "models/vision/image_classify.h"
#include "models/vision/image_classifier.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct ClassifyCli {
  std::string model = "tiny-mobilenetv4";
  std::string device = "auto";
  std::string dtype = "bf16";
  uint64_t seed = 0;
  int64_t batch = -1;  // unset: the --image files' count, else 1
  std::vector<std::string> image_files;
  int64_t image_size = 0;  // 0: the config's
  int64_t iters = 1;       // > 1: one warm-up, then the median of this many timed runs
  std::string json_out;
  std::vector<std::string> variants;
};

void run(const ClassifyCli& o) {
  select_variants(o.variants);
  const std::string device = batch_device(o.device, "classify");
  const DType dtype = batch_dtype16(o.dtype, "classify");
  const int64_t batch = image_batch(o.batch, o.image_files, "classify");
  FK_CHECK(o.iters >= 1, "classify: --iters must be positive, got ", o.iters);
  FK_CHECK(o.image_size >= 0, "classify: --image-size must be positive, got ", o.image_size);
  const models::ModelSource src = lookup_model(o.model, models::RunPattern::batch, device, "fk classify");
  std::string config = src.config_json;
  if (o.image_size > 0) {  // the convolutions take any size: the config says which one to plan for
    json c = json::parse(config);
    c["image_size"] = o.image_size;
    config = c.dump();
  }
  std::unique_ptr<models::Model> m = models::create_model_from_config(config, src.source);
  auto* model = dynamic_cast<models::vision::ImageClassifier*>(m.get());
  FK_CHECK(model != nullptr, "classify: model '", o.model, "' (architecture '", src.registration->architecture,
           "') is not an image classifier this command runs");
  const int64_t s = model->image_size();
  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_seqs = batch;
  model->load(lo);
  Tensor images;
  if (o.image_files.empty()) {
    images = Tensor::empty({batch, s, s, 3}, DType::f32);
    fill_normal(images, o.seed + 1, 0, 0.0f, 1.0f);
  } else {
    const models::vision::ClassifierTransform t = model->transform();
    std::vector<std::vector<float>> pixels;
    for (const std::string& f : o.image_files)
      pixels.push_back(models::vision::classifier_pixels(models::image::load_rgb_image(f), t));
    images = models::vision::stack_pixels(pixels, s);
  }
  const Tensor on_device = models::vision::classifier_upload(*model, images);
  Tensor logits;
  const double seconds =
      median_run_seconds(o.iters, [&] { logits = models::vision::classifier_run(*model, on_device); });
  const auto top5 = models::vision::top_k_classes(logits, 5);
  json data = json::parse(models::vision::top_k_classes_json(top5));
  for (size_t i = 0; i < o.image_files.size(); ++i) data[i]["image"] = o.image_files[i];

  json j{{"model", o.model},
         {"architecture", src.registration->architecture},
         {"weights", src.preset ? "dummy" : "checkpoint"},
         {"device", device},
         {"dtype", o.dtype},
         {"images", batch},
         {"image_size", s},
         {"seconds", seconds},  // the median forward pass (--iters) over the uploaded images, logits copied back
         {"images_per_s", static_cast<double>(batch) / seconds},
         {"iters", o.iters},
         {"data", data},
         {"command", invoked_command()}};
  emit_json(j, o.json_out, "classify", concat("classified ", batch, " images with ", o.model, " on ", device));
}

void setup(CLI::App& app) {
  static ClassifyCli o;
  auto* cmd = app.add_subcommand("classify",
                                 "Image classification (MobileNetV4, ConvNeXt V2) of PNG/JPEG files (--image) or random "
                                 "normalised images: top-5 classes and logits as JSON");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Model dtype: f16 or bf16")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of dummy weights and random images")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Random images in the batch (default 1; with --image: their count)");
  cmd->add_option("--image", o.image_files, "A PNG or JPEG file to classify (repeatable: one batch)");
  cmd->add_option("--image-size", o.image_size, "Square input size in pixels (0: the model config's)")
      ->capture_default_str();
  cmd->add_option("--iters", o.iters, "Timed runs after a warm-up (seconds: their median); 1: one run, no warm-up")
      ->capture_default_str();
  cmd->add_option("--json-out", o.json_out, "Write the JSON to this file instead of stdout");
  add_variant_option(cmd, o.variants);
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
