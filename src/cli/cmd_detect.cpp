// `fk detect --model M`: an object detector of the Batch pattern (YOLOv10) over images
// given by --image (PNG or JPEG files, letterboxed to the model's square input as YOLO's
// preprocessing: models/vision/image_input.h) or, without them, a batch of random images of
// a fixed seed (RGB in [0, 1] at the input size), printing each image's detections as JSON:
// boxes (x1, y1, x2, y2 in the image's pixels: the file's, or the input's), scores and
// classes of the NMS-free one-to-one head's top-k, with the median time of a run (forward and
// top-k; preprocessing not included).
#include <algorithm>
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
#include "models/checkpoint_tensor.h"
#include "models/image/rgb_image.h"
#include "models/vision/image_input.h"
#include "models/vision/yolov10/yolov10_detect.h"
#include "models/vision/yolov10/yolov10_model.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct DetectCli {
  std::string model = "tiny-yolov10";
  std::string device = "auto";
  std::string dtype = "f16";
  uint64_t seed = 0;
  int64_t batch = -1;  // unset: the --image files' count, else 1
  std::vector<std::string> image_files;
  int64_t iters = 1;  // > 1: one warm-up, then the median of this many timed runs
  std::string json_out;
  std::vector<std::string> variants;
};

void run(const DetectCli& o) {
  select_variants(o.variants);
  const std::string device = batch_device(o.device, "detect");
  const DType dtype = batch_dtype16(o.dtype, "detect");
  const int64_t batch = image_batch(o.batch, o.image_files, "detect");
  const models::ModelSource src = lookup_model(o.model, models::RunPattern::batch, device, "fk detect");
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::vision::Yolov10Model*>(m.get());
  FK_CHECK(model != nullptr, "detect: model '", o.model, "' (architecture '", src.registration->architecture,
           "') is not an object detector this command runs");
  const int64_t s = model->config().imgsz;
  models::LoadOptions lo;
  lo.device = device == "cuda" ? Device::cuda() : Device::cpu();
  lo.dtype = dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_seqs = batch;
  model->load(lo);
  Tensor images;
  std::vector<models::vision::Letterboxed> boxed;
  if (o.image_files.empty()) {
    images = Tensor::empty({batch, s, s, 3}, lo.dtype, lo.device);
    fill_uniform(images, o.seed + 1, 0, 0.0f, 1.0f);
  } else {
    std::vector<std::vector<float>> pixels;
    for (const std::string& f : o.image_files) {
      boxed.push_back(models::vision::letterbox(models::image::load_rgb_image(f), s));
      pixels.push_back(std::move(boxed.back().pixels));
    }
    images = models::f32_to_model(models::vision::stack_pixels(pixels, s), lo.dtype, lo.device);
  }
  models::StepInputs in;
  in.tensors = {{"images", images.view()}};
  FK_CHECK(o.iters >= 1, "detect: --iters must be positive, got ", o.iters);
  // One run: the forward and the top-k on the host (copying boxes and scores synchronises).
  auto detect_once = [&] {
    model->plan(in, nullptr);
    model->forward(in, nullptr);
    return models::vision::yolov10_detect(model->config(), model->boxes_output(), model->scores_output());
  };
  std::vector<std::vector<models::vision::Yolov10Detection>> dets;
  const double seconds = median_run_seconds(o.iters, [&] { dets = detect_once(); });
  for (size_t i = 0; i < boxed.size(); ++i)  // boxes in the files' pixels
    for (models::vision::Yolov10Detection& d : dets[i]) {
      const std::array<float, 4> b = models::vision::unletterbox_box(boxed[i], d.box);
      std::copy(b.begin(), b.end(), d.box);
    }
  json data = json::parse(models::vision::yolov10_detections_json(dets));
  for (size_t i = 0; i < o.image_files.size(); ++i)
    data[i]["image"] = o.image_files[i], data[i]["width"] = boxed[i].width, data[i]["height"] = boxed[i].height;

  json j{{"model", o.model},
         {"architecture", src.registration->architecture},
         {"weights", src.preset ? "dummy" : "checkpoint"},
         {"device", device},
         {"dtype", o.dtype},
         {"images", batch},
         {"imgsz", s},
         {"seconds", seconds},  // the median run's (--iters)
         {"iters", o.iters},
         {"data", data},
         {"command", invoked_command()}};
  emit_json(j, o.json_out, "detect", concat("detected in ", batch, " images with ", o.model, " on ", device));
}

void setup(CLI::App& app) {
  static DetectCli o;
  auto* cmd = app.add_subcommand("detect",
                                 "Object detection (YOLOv10) of PNG/JPEG files (--image) or random "
                                 "images: boxes, scores and classes as JSON");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Model dtype: f16 or bf16")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of dummy weights and random images")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Random images in the batch (default 1; with --image: their count)");
  cmd->add_option("--image", o.image_files, "A PNG or JPEG file to detect objects in (repeatable: one batch)");
  cmd->add_option("--iters", o.iters, "Timed runs after a warm-up (seconds: their median); 1: one run, no warm-up")
      ->capture_default_str();
  cmd->add_option("--json-out", o.json_out, "Write the JSON to this file instead of stdout");
  add_variant_option(cmd, o.variants);
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
