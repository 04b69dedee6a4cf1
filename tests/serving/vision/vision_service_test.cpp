// fk serve for image models over real HTTP (CPU): /v1/classify on the tiny MobileNetV4 golden
// checkpoint gives the classes and logits of the model run directly on the same decoded,
// preprocessed images, also when a request spans several forward passes, with softmax
// probabilities; /v1/detect on tiny-yolov10 (dummy weights) gives boxes inside each image's
// own pixels, its threshold and cap honoured; PNG and JPEG data URLs; every bad input a 400
// naming the field and the image; the other model kind's route a 404; /v1/models' task.
#include "serving/vision/vision_service.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "models/registry.h"
#include "models/vision/image_input.h"
#include "models/vision/image_classify.h"
#include "models/vision/mobilenetv4/mobilenetv4_model.h"
#include "serving/http/batch_test_server.h"
#include "support/image_bytes.h"
#include "support/test_seed.h"

namespace fk::serve {
namespace {

using nlohmann::json;

std::unique_ptr<models::Model> loaded(std::unique_ptr<models::Model> m, const std::filesystem::path& checkpoint,
                                      int64_t max_batch) {
  models::LoadOptions o;
  o.dtype = DType::bf16;
  o.checkpoint = checkpoint;
  o.max_seqs = max_batch;
  m->load(o);
  return m;
}

// A vision server on a loaded model, for batches of `max_batch` images.
class VisionTestServer : public BatchTestServer {
 public:
  VisionTestServer(std::unique_ptr<models::Model> m, int64_t max_batch)
      : BatchTestServer(vision_batch_service(std::make_shared<VisionService>(std::move(m), max_batch, "vis"))) {}
  json get_json(const std::string& path) const { return json::parse(get(path), nullptr, false); }
};

models::image::RgbImage picture(std::mt19937_64& rng, int64_t h, int64_t w) {
  models::image::RgbImage im{h, w, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  std::uniform_real_distribution<double> u(0, 1);
  const double a = u(rng) * 4, b = u(rng) * 4;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < 3; ++c)
        im.pixels[static_cast<size_t>((y * w + x) * 3 + c)] =
            static_cast<uint8_t>(128 + 100 * std::sin(a * x / w * 6.28 + b * y / h * 6.28 + 2.0 * c));
  return im;
}

std::filesystem::path mobilenetv4_dir() {
  return std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/vision/mobilenetv4";
}

TEST(VisionService, ClassifyAsTheModelOnTheSameImagesInOneOrManyPasses) {
  std::mt19937_64 rng(test::seed_for("vision_classify"));
  std::vector<models::image::RgbImage> images = {picture(rng, 70, 90), picture(rng, 64, 64), picture(rng, 100, 50)};
  std::vector<std::vector<uint8_t>> files = {test::png_bytes(images[0]), test::jpeg_bytes(images[1]),
                                             test::png_bytes(images[2])};
  // The expected answer: the model run directly on the decoded, preprocessed images.
  auto direct = models::create_model(mobilenetv4_dir().string());
  direct = loaded(std::move(direct), mobilenetv4_dir() / "model.safetensors", 3);
  auto& mnv4 = dynamic_cast<models::vision::MobileNetV4Model&>(*direct);
  const models::vision::ClassifierTransform t = mnv4.transform();
  std::vector<std::vector<float>> pixels;
  for (const auto& f : files)
    pixels.push_back(models::vision::classifier_pixels(models::image::decode_rgb_image(f, "t"), t));
  const Tensor logits = models::vision::classifier_logits(mnv4, models::vision::stack_pixels(pixels, t.size));
  const auto want = models::vision::top_k_classes(logits, 3);

  for (int64_t max_batch : {3, 2}) {  // one pass; two passes
    SCOPED_TRACE(max_batch);
    VisionTestServer server(
        loaded(models::create_model(mobilenetv4_dir().string()), mobilenetv4_dir() / "model.safetensors", max_batch),
        max_batch);
    const json body = {{"model", "vis"},
                       {"top_k", 3},
                       {"images",
                        {test::data_url("image/png", files[0]), test::data_url("image/jpeg", files[1]),
                         test::data_url("image/png", files[2])}}};
    auto [st, r] = server.post("/v1/classify", body);
    ASSERT_EQ(st, 200) << r.dump();
    ASSERT_EQ(r["data"].size(), 3u);
    EXPECT_EQ(r["usage"]["images"], 3);
    for (size_t i = 0; i < 3; ++i) {
      const json& d = r["data"][i];
      EXPECT_EQ(d["index"], i);
      EXPECT_EQ(d["classes"].get<std::vector<int64_t>>(), want[i].classes) << i;
      const auto got_logits = d["logits"].get<std::vector<float>>();
      for (size_t k = 0; k < 3; ++k) EXPECT_FLOAT_EQ(got_logits[k], want[i].logits[k]) << i;
      const auto p = d["probabilities"].get<std::vector<double>>();
      ASSERT_EQ(p.size(), 3u);
      EXPECT_TRUE(p[0] >= p[1] && p[1] >= p[2] && p[0] < 1 && p[2] > 0) << d.dump();
      // softmax: p_a / p_b = exp(logit_a - logit_b)
      EXPECT_NEAR(p[0] / p[1], std::exp(double(got_logits[0]) - got_logits[1]), 1e-6 * p[0] / p[1]);
    }
    auto [st1, one] = server.post("/v1/classify", {{"image", test::data_url("image/png", files[2])}});
    ASSERT_EQ(st1, 200) << one.dump();
    EXPECT_EQ(one["data"][0]["classes"][0], want[2].classes[0]);
    EXPECT_EQ(one["data"][0]["classes"].size(), 5u);  // top_k's default, at most the classes (10)
  }
}

TEST(VisionService, DetectBoxesInTheImagesPixels) {
  const models::ModelSource src = models::resolve_model("tiny-yolov10");
  auto m = models::create_model_from_config(src.config_json, src.source);
  models::LoadOptions o;
  o.dtype = DType::f16;
  o.max_seqs = 2;
  m->load(o);
  VisionTestServer server(std::move(m), 2);
  std::mt19937_64 rng(test::seed_for("vision_detect"));
  const auto wide = test::png_bytes(picture(rng, 40, 90)), tall = test::png_bytes(picture(rng, 80, 30));
  auto [st, r] = server.post(
      "/v1/detect",
      {{"images", {test::data_url("image/png", wide), test::data_url("image/png", tall)}}, {"score_threshold", 0.0}});
  ASSERT_EQ(st, 200) << r.dump();
  ASSERT_EQ(r["data"].size(), 2u);
  const int64_t sizes[2][2] = {{90, 40}, {30, 80}};
  for (size_t i = 0; i < 2; ++i) {
    const json& d = r["data"][i];
    EXPECT_EQ(d["width"], sizes[i][0]);
    EXPECT_EQ(d["height"], sizes[i][1]);
    ASSERT_FALSE(d["boxes"].empty());
    EXPECT_EQ(d["boxes"].size(), d["scores"].size());
    EXPECT_EQ(d["boxes"].size(), d["classes"].size());
    double last = 2;
    for (size_t k = 0; k < d["boxes"].size(); ++k) {
      const auto b = d["boxes"][k].get<std::vector<double>>();
      EXPECT_TRUE(0 <= b[0] && b[0] <= b[2] && b[2] <= sizes[i][0] && 0 <= b[1] && b[1] <= b[3] && b[3] <= sizes[i][1])
          << d["boxes"][k].dump();
      const double s = d["scores"][k];
      EXPECT_LE(s, last);  // best first
      last = s;
    }
  }
  const size_t all = r["data"][0]["boxes"].size();
  auto [st2, capped] = server.post(
      "/v1/detect", {{"image", test::data_url("image/png", wide)}, {"score_threshold", 0.0}, {"max_detections", 3}});
  ASSERT_EQ(st2, 200);
  EXPECT_EQ(capped["data"][0]["boxes"].size(), std::min<size_t>(3, all));
  const double median = r["data"][0]["scores"][all / 2];
  auto [st3, high] =
      server.post("/v1/detect", {{"image", test::data_url("image/png", wide)}, {"score_threshold", median}});
  ASSERT_EQ(st3, 200);
  for (const auto& s : high["data"][0]["scores"]) EXPECT_GE(s.get<double>(), median);
  EXPECT_EQ(server.get_json("/v1/models")["data"][0]["task"], "detect");
  auto [st4, wrong] = server.post("/v1/classify", {{"image", test::data_url("image/png", wide)}});
  EXPECT_EQ(st4, 404) << wrong.dump();
}

TEST(VisionService, BadInputsNameTheFieldAndImage) {
  VisionTestServer server(
      loaded(models::create_model(mobilenetv4_dir().string()), mobilenetv4_dir() / "model.safetensors", 2), 2);
  std::mt19937_64 rng(test::seed_for("vision_errors"));
  const std::string good = test::data_url("image/png", test::png_bytes(picture(rng, 20, 20)));
  const auto expect_400 = [&](const json& body, const std::string& param, const std::string& words) {
    auto [st, r] = server.post("/v1/classify", body);
    EXPECT_EQ(st, 400) << body.dump().substr(0, 200);
    EXPECT_EQ(r["error"]["param"], param) << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(words), std::string::npos) << r.dump();
  };
  expect_400(json::object(), "images", "needs 'images'");
  expect_400({{"images", json::array()}}, "images", "non-empty list");
  expect_400({{"images", {good, 3}}}, "images", "image 1 must be a URL string");
  expect_400({{"images", {good, "data:image/png;base64,@@@"}}}, "images", "image 1: the data URL's data is not base64");
  expect_400({{"images", {"https://example.com/a.png"}}}, "images", "image 0: the image URL");
  expect_400({{"images", {"data:image/gif;base64,R0lG"}}}, "images", "image/gif");
  expect_400({{"images", {test::data_url("image/png", {1, 2, 3})}}}, "images", "does not decode as PNG or JPEG");
  expect_400({{"images", {"/etc/hostname"}}}, "images", "reads none");
  expect_400({{"image", good}, {"top_k", 0}}, "top_k", "'top_k' must be an integer in [1, 10]");
  auto [st, r] = server.post("/v1/classify", {{"image", good}, {"model", "other"}});
  EXPECT_EQ(st, 404) << r.dump();
  auto [st2, r2] = server.post("/v1/detect", {{"image", good}});
  EXPECT_EQ(st2, 404) << r2.dump();
  auto [st3, r3] = server.post("/v1/classify", {{"image", good}});  // the server still answers
  EXPECT_EQ(st3, 200) << r3.dump();
  EXPECT_EQ(server.get_json("/v1/models")["data"][0]["task"], "classify");
}

}  // namespace
}  // namespace fk::serve
