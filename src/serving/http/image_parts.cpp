#include "serving/http/image_parts.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fk/status.h"
#include "models/vlm/qwen3_vl/image_prompt.h"
#include "serving/http/openai_api.h"

namespace fk::serve {

using nlohmann::ordered_json;
namespace vlm = models::vlm;

namespace {

[[noreturn]] void refuse_part(size_t m, size_t p, const std::string& what) {
  invalid_request("messages", concat("message ", m, ": content part ", p, ": ", what));
}

// A URL as an error message shows it: data URLs and long paths cut short.
std::string shown_url(const std::string& url) { return url.size() <= 48 ? url : url.substr(0, 48) + "..."; }

bool url_starts_with(const std::string& s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// The bytes of a data URL: data:<media type>[;parameters];base64,<data>.
std::vector<uint8_t> data_url_bytes(const std::string& url, const ImageRefusal& refuse) {
  const size_t comma = url.find(',');
  if (comma == std::string::npos) refuse(concat("the data URL '", shown_url(url), "' has no ',' before its data"));
  std::string header = url.substr(5, comma - 5);
  std::transform(header.begin(), header.end(), header.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string media = header.substr(0, header.find(';'));
  if (media.rfind("image/", 0) != 0)
    refuse(concat("the data URL's media type '", media, "' is not an image (send image/png or image/jpeg)"));
  if (media != "image/png" && media != "image/jpeg" && media != "image/jpg")
    refuse(concat("the image type '", media, "' is not supported: send image/png or image/jpeg"));
  const bool base64 = header.size() >= 7 && header.compare(header.size() - 7, 7, ";base64") == 0;
  if (!base64) refuse(concat("the data URL of type '", media, "' is not base64 (its header needs ';base64')"));
  try {
    return decode_base64(std::string_view(url).substr(comma + 1));
  } catch (const Error& e) {
    refuse(concat("the data URL's data is not base64: ", e.what()));
  }
}

// Whether `path` lies inside the folder `allowed` (both resolved: symbolic links, . and ..).
bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& allowed) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  const std::filesystem::path a = std::filesystem::weakly_canonical(allowed, ec);
  if (ec || a.empty()) return false;
  auto pi = p.begin();
  for (auto ai = a.begin(); ai != a.end(); ++ai, ++pi) {
    if (ai->empty()) continue;  // a trailing separator
    if (pi == p.end() || *pi != *ai) return false;
  }
  return true;
}

}  // namespace

void ImageRefusal::operator()(const std::string& what) const { invalid_request(param, prefix + what); }

std::vector<uint8_t> image_url_bytes(const std::string& url, const std::filesystem::path& allowed_local_media,
                                     const ImageRefusal& refuse, std::string& what) {
  if (url_starts_with(url, "data:")) return data_url_bytes(url, refuse);
  if (url_starts_with(url, "http://") || url_starts_with(url, "https://"))
    refuse(concat("the image URL '", shown_url(url), "' is on the network; this server fetches nothing from the ",
                  "network: send a data URL (data:image/png;base64,...) or a local file path"));
  std::string path = url;
  if (url_starts_with(url, "file://")) {
    path = url.substr(7);
    if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  }
  if (path.empty() || path[0] != '/')
    refuse(concat("the image URL '", shown_url(url), "' is neither a data URL nor a local file (file:///path or an ",
                  "absolute path)"));
  if (allowed_local_media.empty())
    refuse(concat("the image '", shown_url(url), "' is a local file, and this server reads none: send a data URL ",
                  "(data:image/png;base64,...), or start fk serve with --allowed-local-media-path DIR"));
  if (!inside_folder(path, allowed_local_media))
    refuse(concat("the image file '", shown_url(path), "' is outside the folder this server reads images from ",
                  "(--allowed-local-media-path)"));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    refuse(concat("the image file '", shown_url(path), "' does not exist (or is not a file)"));
  what = concat("'", shown_url(path), "'");
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) refuse(concat("the image file '", shown_url(path), "' cannot be read"));
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

namespace {

// The URL of an image_url part: {"url": ...} or the older plain string.
std::string part_url(const ordered_json& part, size_t m, size_t p) {
  const auto iu = part.find("image_url");
  if (iu != part.end() && iu->is_string()) return iu->get<std::string>();
  if (iu != part.end() && iu->is_object()) {
    const auto u = iu->find("url");
    if (u != iu->end() && u->is_string()) return u->get<std::string>();
  }
  refuse_part(m, p, "an 'image_url' part needs 'image_url': {\"url\": \"...\"} (or a URL string)");
}

bool is_video_part(const std::string& type) {
  return type == "video_url" || type == "video" || type == "input_video";
}

}  // namespace

std::vector<uint8_t> decode_base64(std::string_view text) {
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '=') --end;
  FK_CHECK(text.size() - end <= 2, "more than two '=' of padding");
  for (size_t i = 0; i < end; ++i) {
    const int v = base64_digit(text[i]);
    FK_CHECK(v >= 0, "character ", i, " (byte ", static_cast<int>(static_cast<unsigned char>(text[i])),
             ") is not a base64 character");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  FK_CHECK(bits < 6, "the data ends in a lone character (", end, " characters is not a whole number of bytes)");
  return out;
}

int64_t max_images_per_request(const vlm::Qwen3VLImageEncoder& encoder) {
  const vlm::Qwen3VLVisionConfig& c = encoder.config();
  const vlm::ImageProcessorOptions o = vlm::qwen3_vl_processor_options(c, encoder.max_patches());
  const int64_t fewest = std::max<int64_t>(1, o.min_pixels / (c.patch_size * c.patch_size));
  return std::max<int64_t>(1, encoder.max_patches() / fewest);
}

ordered_json take_image_parts(const ordered_json& messages, const vlm::Qwen3VLImageEncoder* encoder,
                              const std::filesystem::path& allowed_local_media,
                              const tokenizer::Tokenizer& tok, std::vector<vlm::ProcessedImage>& images) {
  if (!messages.is_array()) return messages;  // chat_messages_for_template names the problem
  ordered_json out = messages;
  // Count first: a request over the limit is refused before any image is decoded.
  int64_t count = 0;
  for (size_t m = 0; m < out.size(); ++m) {
    const auto c = out[m].is_object() ? out[m].find("content") : out[m].end();
    if (!out[m].is_object() || c == out[m].end() || !c->is_array()) continue;
    for (size_t p = 0; p < c->size(); ++p) {
      const ordered_json& part = (*c)[p];
      if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) continue;
      const std::string type = part["type"].get<std::string>();
      if (is_video_part(type))
        refuse_part(m, p, concat("video parts (type '", type, "') are not supported: send the frames as 'image_url' parts"));
      if (type == "image")
        refuse_part(m, p, "parts of type 'image' are not taken: send images as 'image_url' parts");
      if (type != "image_url") continue;
      if (encoder == nullptr) refuse_part(m, p, "this model reads no images (an 'image_url' part was sent to a text model)");
      ++count;
    }
  }
  if (count == 0) return out;
  const int64_t limit = max_images_per_request(*encoder);
  if (count > limit)
    invalid_request("messages", concat("the messages bring ", count, " images; this model takes at most ", limit,
                                       " per request (its vision tower takes ", encoder->max_patches(),
                                       " patches, and an image is at least ", encoder->max_patches() / limit, ")"));
  const vlm::ImageProcessorOptions options = vlm::qwen3_vl_processor_options(encoder->config(), encoder->max_patches());
  const std::string placeholder = tok.id_to_token(encoder->vision_start_token_id()) +
                                  tok.id_to_token(encoder->image_token_id()) +
                                  tok.id_to_token(encoder->vision_end_token_id());
  int64_t patches = 0;
  for (size_t m = 0; m < out.size(); ++m) {
    if (!out[m].is_object() || !out[m].contains("content") || !out[m]["content"].is_array()) continue;
    ordered_json& content = out[m]["content"];
    for (size_t p = 0; p < content.size(); ++p) {
      ordered_json& part = content[p];
      if (!part.is_object() || !part.contains("type") || part["type"] != "image_url") continue;
      const std::string url = part_url(part, m, p);
      std::string what = concat("of message ", m, " part ", p);
      const std::vector<uint8_t> bytes = image_url_bytes(
          url, allowed_local_media, {"messages", concat("message ", m, ": content part ", p, ": ")}, what);
      try {
        images.push_back(vlm::qwen3_vl_process_image(vlm::decode_rgb_image(bytes, what), encoder->config(), options));
      } catch (const Error& e) {
        refuse_part(m, p, e.what());
      }
      patches += images.back().pixel_values.size(0);
      if (patches > encoder->max_patches())
        invalid_request("messages", concat("the messages' images come to ", patches, " patches by message ", m, " part ",
                                           p, "; this model's vision tower takes at most ", encoder->max_patches(),
                                           " per request: send fewer or smaller images"));
      part = ordered_json{{"type", "text"}, {"text", placeholder}};
    }
  }
  return out;
}

std::shared_ptr<const engine::RequestImages> place_images(std::vector<int64_t>& ids,
                                                          const std::vector<vlm::ProcessedImage>& images,
                                                          const vlm::Qwen3VLImageEncoder* encoder) {
  if (encoder == nullptr) return nullptr;
  const int64_t pad = encoder->image_token_id();
  const auto found = static_cast<size_t>(std::count(ids.begin(), ids.end(), pad));
  if (images.empty() && found == 0) return nullptr;
  if (found != images.size())
    invalid_request("messages", concat("the rendered conversation holds ", found, " image tokens for ", images.size(),
                                       " images: the chat template must write one per image part, and message text ",
                                       "must not spell the image token itself"));
  std::vector<int64_t> wide;
  wide.reserve(ids.size());
  size_t next = 0;
  for (const int64_t id : ids) {
    if (id == pad)
      wide.insert(wide.end(), images[next++].tokens, pad);
    else
      wide.push_back(id);
  }
  vlm::ImagePrompt ip = vlm::qwen3_vl_image_prompt(*encoder, images);
  try {
    encoder->prepare(*ip.images, wide);  // the engine's own checks, answered here as the client's error
  } catch (const Error& e) {
    invalid_request("messages", e.what());
  }
  ids = std::move(wide);
  return ip.images;
}

}  // namespace fk::serve
