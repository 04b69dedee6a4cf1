// image_url content parts in chat completions, over HTTP on 127.0.0.1 (tiny-qwen3-vl, CPU,
// dummy weights). The model folder holds tiny-qwen3-vl's config with its vision token ids
// moved onto a test tokenizer (the Qwen2 byte-level fixture plus <|vision_start|>,
// <|vision_end|>, <|image_pad|> and <|video_pad|>) and a chat template written as
// Qwen3-VL's places image parts. Images are random pictures (a seed per run) made here as
// PNG and JPEG bytes and sent as data URLs, file:// URLs and plain paths.
//   - a chat with images gives the prompt ids the template and processor make (checked
//     against ids built here) and the same greedy tokens and log-probabilities as the
//     engine given those ids and images directly;
//   - the three ways of naming one image, and the older string form of image_url, agree,
//     streamed or not;
//   - text-only chats still run on the VLM;
//   - every bad input is a 400 naming what is wrong, and the next good request succeeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "models/llm/model_config.h"
#include "models/vlm/qwen3_vl/image_encoder.h"
#include "models/vlm/qwen3_vl/image_processor.h"
#include "models/vlm/qwen3_vl/image_prompt.h"
#include "serving/http/image_parts.h"
#include "serving/http/serve_test_server.h"
#include "support/image_bytes.h"
#include "support/test_seed.h"

namespace fk::serve {
namespace {

namespace fs = std::filesystem;
namespace vlm = models::vlm;
using fixtures::TestServer;
using nlohmann::json;

// How far apart two runs' log-probabilities of one token may be when the runs batch their
// steps differently: the CPU engine rounds logits to bf16 (steps of 1/32 to 1/16 at these
// magnitudes; measured differences up to 1/32), so a few such steps.
constexpr double kNearTie = 0.1;
constexpr int64_t kVisionStart = 1004, kVisionEnd = 1005, kImagePad = 1006, kVideoPad = 1007;

// A server that reads local image files inside `folder` (--allowed-local-media-path).
ServerConfig reading_images_in(const fs::path& folder) {
  ServerConfig sc = TestServer::config();
  sc.allowed_local_media_path = folder.string();
  return sc;
}

// A model folder: tiny-qwen3-vl's config, the test tokenizer with the vision tokens, and
// the template. Removed with the object.
struct VlModelDir {
  fs::path dir;
  explicit VlModelDir(const std::string& tag) {
    dir = fs::temp_directory_path() / ("fk-" + tag + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ifstream tf(std::string(FK_SOURCE_DIR) + "/tests/data/tokenizers/bytelevel_qwen2.json");
    json tok = json::parse(tf);
    const std::pair<int64_t, const char*> vision[] = {{kVisionStart, "<|vision_start|>"},
                                                      {kVisionEnd, "<|vision_end|>"},
                                                      {kImagePad, "<|image_pad|>"},
                                                      {kVideoPad, "<|video_pad|>"}};
    for (const auto& [id, content] : vision)
      tok["added_tokens"].push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                     {"rstrip", false}, {"normalized", false}, {"special", true}});
    std::ofstream(dir / "tokenizer.json") << tok.dump();
    json config = json::parse(model_config_json_by_name("tiny-qwen3-vl"));
    config["text_config"]["vocab_size"] = kVideoPad + 1;
    config["vision_start_token_id"] = kVisionStart;
    config["vision_end_token_id"] = kVisionEnd;
    config["image_token_id"] = kImagePad;
    config["video_token_id"] = kVideoPad;
    std::ofstream(dir / "config.json") << config.dump();
    std::ifstream tmpl(std::string(FK_SOURCE_DIR) + "/tests/data/chat_templates/qwen3_vl.jinja");
    const std::string chat_template((std::istreambuf_iterator<char>(tmpl)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "tokenizer_config.json")
        << json{{"chat_template", chat_template}, {"eos_token", "<|im_end|>"}}.dump();
  }
  ~VlModelDir() { fs::remove_all(dir); }
  engine::EngineConfig engine() const {
    engine::EngineConfig c = fixtures::tiny_engine(dir.string());
    c.dummy_weights = true;
    c.num_pages = 128;
    c.max_model_len = 512;
    return c;
  }
  tokenizer::Tokenizer tokenizer() const { return tokenizer::Tokenizer::from_file(dir / "tokenizer.json"); }
};

// A smooth random picture (JPEG keeps it close) with some noise.
vlm::RgbImage random_image(std::mt19937_64& rng, int64_t h, int64_t w) {
  vlm::RgbImage im{h, w, std::vector<uint8_t>(static_cast<size_t>(h * w * 3))};
  std::uniform_real_distribution<double> u(0, 1);
  const double a = u(rng) * 4, b = u(rng) * 4, c = u(rng) * 6;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t ch = 0; ch < 3; ++ch) {
        const double v = 128 + 90 * std::sin(a * x / w * 6.28 + b * y / h * 6.28 + c * ch) + 20 * (u(rng) - 0.5);
        im.pixels[static_cast<size_t>((y * w + x) * 3 + ch)] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return im;
}

using test::base64;
using test::data_url;
using test::jpeg_bytes;
using test::png_bytes;

json image_part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }
json text_part(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

json chat(const json& content, int64_t max_tokens) {
  return {{"model", "tiny"},
          {"messages", json::array({{{"role", "user"}, {"content", content}}})},
          {"temperature", 0},
          {"max_tokens", max_tokens},
          {"logprobs", true}};
}

// What the engine makes of these ids and images, greedy, with log-probabilities.
engine::GenerationResult engine_run(const VlModelDir& model, const std::vector<int64_t>& ids,
                                    const std::vector<std::vector<uint8_t>>& image_files, int64_t max_tokens) {
  engine::Engine e(model.engine());
  const auto* vl = dynamic_cast<const vlm::Qwen3VLImageEncoder*>(e.image_encoder());
  EXPECT_NE(vl, nullptr);
  std::vector<vlm::ProcessedImage> processed;
  const vlm::ImageProcessorOptions o = vlm::qwen3_vl_processor_options(vl->config(), vl->max_patches());
  for (const auto& bytes : image_files)
    processed.push_back(vlm::qwen3_vl_process_image(vlm::decode_rgb_image(bytes, "test"), vl->config(), o));
  engine::SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.logprobs = 0;
  e.add_request(ids, p, "ref", processed.empty() ? nullptr : vlm::qwen3_vl_image_prompt(*vl, processed).images);
  std::vector<engine::GenerationResult> done;
  while (e.has_unfinished())
    for (auto& g : e.step()) done.push_back(std::move(g));
  EXPECT_EQ(done.size(), 1u);
  return done.empty() ? engine::GenerationResult{} : done[0];
}

// `ids` with each image token widened to that image's token count (as the processor does).
std::vector<int64_t> widened(const VlModelDir& model, const std::vector<int64_t>& ids,
                             const std::vector<std::vector<uint8_t>>& image_files) {
  engine::Engine e(model.engine());
  const auto* vl = dynamic_cast<const vlm::Qwen3VLImageEncoder*>(e.image_encoder());
  const vlm::ImageProcessorOptions o = vlm::qwen3_vl_processor_options(vl->config(), vl->max_patches());
  std::vector<int64_t> out;
  size_t next = 0;
  for (const int64_t id : ids) {
    if (id != kImagePad) {
      out.push_back(id);
      continue;
    }
    const auto im = vlm::qwen3_vl_process_image(vlm::decode_rgb_image(image_files.at(next++), "test"), vl->config(), o);
    EXPECT_EQ(im.tokens, im.grid[1] * im.grid[2] / 4);
    out.insert(out.end(), im.tokens, kImagePad);
  }
  EXPECT_EQ(next, image_files.size());
  return out;
}

// The answer's tokens and log-probabilities against the engine's.
void expect_same_as_engine(const json& answer, const engine::GenerationResult& ref, const tokenizer::Tokenizer& tok,
                           int64_t prompt_tokens) {
  ASSERT_TRUE(answer.contains("choices")) << answer.dump();
  EXPECT_EQ(answer["usage"]["prompt_tokens"], prompt_tokens);
  const json& lp = answer["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), ref.output_tokens.size()) << answer.dump();
  ASSERT_EQ(ref.output_logprobs.size(), ref.output_tokens.size());
  for (size_t i = 0; i < lp.size(); ++i) {
    const int64_t one[] = {ref.output_tokens[i]};
    EXPECT_EQ(lp[i]["token"], tok.decode(one)) << "token " << i;
    EXPECT_NEAR(lp[i]["logprob"].get<double>(), ref.output_logprobs[i].logprob, 1e-4) << "token " << i;
  }
  // The answer's text leaves special tokens out, as vLLM's does by default.
  EXPECT_EQ(answer["choices"][0]["message"]["content"], tok.decode(ref.output_tokens, /*skip_special_tokens=*/true));
}

TEST(ImageParts, DecodesBase64AndNamesBadCharacters) {
  auto text = [](std::string_view s) {
    const auto b = decode_base64(s);
    return std::string(b.begin(), b.end());
  };
  EXPECT_EQ(text("aGVsbG8="), "hello");
  EXPECT_EQ(text("aGVsbG8"), "hello");
  EXPECT_EQ(text("aGVsbG8h"), "hello!");
  EXPECT_EQ(text(""), "");
  std::mt19937_64 rng(test::seed_for("base64"));
  std::vector<uint8_t> bytes(rng() % 200);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  EXPECT_EQ(decode_base64(base64(bytes)), bytes);
  try {
    decode_base64("aGV@bG8=");
    ADD_FAILURE() << "a bad character was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("character 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode_base64("aGVsb"), Error);  // a lone last character is no byte
  EXPECT_THROW(decode_base64("aGVs==="), Error);
}

TEST(ImageParts, ChatWithImagesMatchesTheEngineGivenTheSameIdsAndImages) {
  const VlModelDir model("image-parts-match");
  const auto tok = model.tokenizer();
  std::mt19937_64 rng(test::seed_for("image-parts-match"));
  std::uniform_int_distribution<int64_t> side(12, 64);
  const std::vector<uint8_t> a = png_bytes(random_image(rng, side(rng), side(rng)));
  const std::vector<uint8_t> b = jpeg_bytes(random_image(rng, side(rng), side(rng)));
  const std::vector<uint8_t> c = png_bytes(random_image(rng, side(rng), side(rng)));
  const fs::path c_file = model.dir / "c.png";
  std::ofstream(c_file, std::ios::binary).write(reinterpret_cast<const char*>(c.data()), static_cast<std::streamsize>(c.size()));
  const json content = json::array({text_part("Look: "), image_part(data_url("image/png", a)), text_part("and "),
                                    {{"type", "image_url"}, {"image_url", data_url("image/jpeg", b)}},
                                    image_part("file://" + c_file.string()), text_part("what?")});
  const std::string rendered =
      "<|im_start|>user\nLook: <|vision_start|><|image_pad|><|vision_end|>and "
      "<|vision_start|><|image_pad|><|vision_end|><|vision_start|><|image_pad|><|vision_end|>what?<|im_end|>\n"
      "<|im_start|>assistant\n";
  const std::vector<int64_t> ids = widened(model, tok.encode(rendered, false), {a, b, c});
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kVisionStart), 3);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kVisionEnd), 3);

  TestServer server(model.engine(), reading_images_in(model.dir));
  int status = 0;
  const json t = server.post("/tokenize", {{"model", "tiny"}, {"messages", chat(content, 1)["messages"]}}, &status);
  ASSERT_EQ(status, 200) << t.dump();
  EXPECT_EQ(t["tokens"].get<std::vector<int64_t>>(), ids);

  const json answer = server.post("/v1/chat/completions", chat(content, 6), &status);
  ASSERT_EQ(status, 200) << answer.dump();
  expect_same_as_engine(answer, engine_run(model, ids, {a, b, c}, 6), tok, static_cast<int64_t>(ids.size()));

  // n = 2: each sequence carries its own copy of the images and is prefilled beside the
  // other (in other chunks than alone): the same distributions, up to float rounding; the
  // greedy tokens agree until a near tie that the rounding may decide either way.
  json two = chat(content, 4);
  two["n"] = 2;
  two["top_logprobs"] = 2;
  const json both = server.post("/v1/chat/completions", two, &status);
  ASSERT_EQ(status, 200) << both.dump();
  ASSERT_EQ(both["choices"].size(), 2u);
  const json& c0 = both["choices"][0]["logprobs"]["content"];
  const json& c1 = both["choices"][1]["logprobs"]["content"];
  ASSERT_EQ(c0.size(), c1.size());
  for (size_t i = 0; i < c0.size(); ++i) {
    if (c0[i]["token"] != c1[i]["token"]) {
      EXPECT_NEAR(c0[i]["top_logprobs"][0]["logprob"].get<double>(), c0[i]["top_logprobs"][1]["logprob"].get<double>(),
                  kNearTie)
          << "token " << i << " differs without a near tie";
      break;
    }
    EXPECT_NEAR(c0[i]["logprob"].get<double>(), c1[i]["logprob"].get<double>(), kNearTie) << "token " << i;
  }
}

TEST(ImageParts, ADataUrlAFileUrlAndAPathGiveTheSameAnswer) {
  const VlModelDir model("image-parts-forms");
  std::mt19937_64 rng(test::seed_for("image-parts-forms"));
  const std::vector<uint8_t> png = png_bytes(random_image(rng, 40, 56));
  const fs::path file = model.dir / "a.png";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  TestServer server(model.engine(), reading_images_in(model.dir));
  std::vector<json> answers;
  for (const json& part : {image_part(data_url("image/png", png)), image_part("file://" + file.string()),
                           image_part(file.string()), json{{"type", "image_url"}, {"image_url", file.string()}}}) {
    int status = 0;
    answers.push_back(server.post("/v1/chat/completions", chat(json::array({part, text_part("Say.")}), 4), &status));
    ASSERT_EQ(status, 200) << answers.back().dump();
  }
  for (size_t i = 1; i < answers.size(); ++i) {
    EXPECT_EQ(answers[i]["choices"][0]["message"], answers[0]["choices"][0]["message"]) << i;
    EXPECT_EQ(answers[i]["choices"][0]["logprobs"], answers[0]["choices"][0]["logprobs"]) << i;
    EXPECT_EQ(answers[i]["usage"], answers[0]["usage"]) << i;
  }
  // Streamed, the same image gives the same text.
  json streamed = chat(json::array({image_part(file.string()), text_part("Say.")}), 4);
  streamed["stream"] = true;
  std::string text;
  for (const json& event : server.post_stream("/v1/chat/completions", streamed))
    if (event.contains("choices") && !event["choices"].empty())
      text += event["choices"][0]["delta"].value("content", "");
  EXPECT_EQ(text, answers[0]["choices"][0]["message"]["content"].get<std::string>());
}

TEST(ImageParts, TextOnlyChatsStillRunOnTheVlm) {
  const VlModelDir model("image-parts-text");
  const auto tok = model.tokenizer();
  TestServer server(model.engine());
  const std::vector<int64_t> ids = tok.encode("<|im_start|>user\nHello there.<|im_end|>\n<|im_start|>assistant\n", false);
  for (const json& content : {json("Hello there."), json::array({text_part("Hello there.")})}) {
    int status = 0;
    const json answer = server.post("/v1/chat/completions", chat(content, 5), &status);
    ASSERT_EQ(status, 200) << answer.dump();
    expect_same_as_engine(answer, engine_run(model, ids, {}, 5), tok, static_cast<int64_t>(ids.size()));
  }
}

// A 400 invalid_request_error on 'messages' whose message holds `named`.
void expect_refused(const TestServer& server, const json& content, const std::string& named) {
  int status = 0;
  const json answer = server.post("/v1/chat/completions", chat(content, 2), &status);
  EXPECT_EQ(status, 400) << named << ": " << answer.dump();
  ASSERT_TRUE(answer.contains("error")) << answer.dump();
  EXPECT_EQ(answer["error"]["type"], "invalid_request_error");
  EXPECT_EQ(answer["error"]["param"], "messages");
  EXPECT_NE(answer["error"]["message"].get<std::string>().find(named), std::string::npos)
      << "expected '" << named << "' in: " << answer["error"]["message"];
}

TEST(ImageParts, BadInputsAreRefusedByNameAndTheServerKeepsServing) {
  const VlModelDir model("image-parts-bad");
  std::mt19937_64 rng(test::seed_for("image-parts-bad"));
  const std::vector<uint8_t> good_png = png_bytes(random_image(rng, 24, 32));
  const json good = json::array({text_part("Hi "), image_part(data_url("image/png", good_png))});
  const std::vector<uint8_t> not_image = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  std::vector<uint8_t> cut_png(good_png.begin(), good_png.begin() + static_cast<std::ptrdiff_t>(good_png.size() / 3));
  json nine = json::array();
  for (int i = 0; i < 9; ++i) nine.push_back(image_part(data_url("image/png", good_png)));
  // Three images of 128 x 128 pixels: 1024 patches each, over the tower's 2048.
  json large = json::array();
  for (int i = 0; i < 3; ++i) large.push_back(image_part(data_url("image/png", png_bytes(random_image(rng, 128, 128)))));
  // Local files are read inside model.dir/images only: a real image beside that folder, and
  // a link inside it to that image, are refused without being read.
  const fs::path images = model.dir / "images", outside = model.dir / "outside.png";
  fs::create_directories(images);
  std::ofstream(outside, std::ios::binary)
      .write(reinterpret_cast<const char*>(good_png.data()), static_cast<std::streamsize>(good_png.size()));
  fs::remove(images / "link.png");
  fs::create_symlink(outside, images / "link.png");
  const std::vector<std::pair<json, std::string>> cases = {
      {json::array({image_part(data_url("image/png", not_image))}), "does not decode as PNG or JPEG"},
      {json::array({image_part(data_url("image/png", cut_png))}), "does not decode as PNG or JPEG"},
      {json::array({image_part("data:image/png;base64,iVBO*w0KGgo=")}), "is not base64"},
      {json::array({image_part("data:image/png," + base64(good_png))}), "is not base64"},
      {json::array({image_part(data_url("text/plain", not_image))}), "'text/plain' is not an image"},
      {json::array({image_part(data_url("image/gif", not_image))}), "'image/gif' is not supported"},
      {json::array({image_part((images / "none.png").string())}), "does not exist"},
      {json::array({image_part("file://" + (images / "none.png").string())}), "does not exist"},
      {json::array({image_part("/nonexistent/fk/none.png")}), "outside the folder this server reads images from"},
      {json::array({image_part(outside.string())}), "outside the folder this server reads images from"},
      {json::array({image_part((images / ".." / "outside.png").string())}), "outside the folder"},
      {json::array({image_part((images / "link.png").string())}), "outside the folder"},
      {json::array({image_part("pictures/a.png")}), "neither a data URL nor a local file"},
      {json::array({image_part("https://example.com/a.png")}), "fetches nothing from the network"},
      {json::array({image_part("http://127.0.0.1/a.png")}), "fetches nothing from the network"},
      {json::array({json{{"type", "image_url"}}}), "needs 'image_url'"},
      {json::array({json{{"type", "image_url"}, {"image_url", {{"detail", "low"}}}}}), "needs 'image_url'"},
      {json::array({json{{"type", "video_url"}, {"video_url", {{"url", "/a.mp4"}}}}}), "video parts"},
      {json::array({text_part("a <|image_pad|> b")}), "0 images"},
      {nine, "9 images; this model takes at most 8"},
      {large, "patches"},
  };
  TestServer server(model.engine(), reading_images_in(images));
  for (const auto& [content, named] : cases) {
    expect_refused(server, content, named);
    int status = 0;
    const json ok = server.post("/v1/chat/completions", chat(good, 2), &status);
    ASSERT_EQ(status, 200) << "after '" << named << "': " << ok.dump();
    EXPECT_EQ(ok["choices"][0]["logprobs"]["content"].size(), 2u);
  }
  EXPECT_TRUE(server.wait_idle(std::chrono::seconds(10)));
}

TEST(ImageParts, LocalFilesAreReadOnlyWhereTheServerWasToldTo) {
  const VlModelDir model("image-parts-local");
  std::mt19937_64 rng(test::seed_for("image-parts-local"));
  const std::vector<uint8_t> png = png_bytes(random_image(rng, 24, 32));
  const fs::path file = model.dir / "a.png";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  {
    TestServer server(model.engine());  // no --allowed-local-media-path
    expect_refused(server, json::array({image_part(file.string())}), "reads none: send a data URL");
    expect_refused(server, json::array({image_part("file://" + file.string())}), "--allowed-local-media-path DIR");
  }
  TestServer server(model.engine(), reading_images_in(model.dir));
  int status = 0;
  server.post("/v1/chat/completions", chat(json::array({image_part(file.string())}), 2), &status);
  EXPECT_EQ(status, 200);
}

TEST(ImageParts, AnImageForATextModelIsRefusedByName) {
  const fixtures::TextModelDir model("image-parts-text-model");
  TestServer server(model.engine());
  std::mt19937_64 rng(test::seed_for("image-parts-text-model"));
  const json content =
      json::array({text_part("Hi"), image_part(data_url("image/png", png_bytes(random_image(rng, 8, 8))))});
  expect_refused(server, content, "this model reads no images");
  int status = 0;
  server.post("/v1/chat/completions", chat(json::array({text_part("Hi")}), 2), &status);
  EXPECT_EQ(status, 200);
}

}  // namespace
}  // namespace fk::serve
