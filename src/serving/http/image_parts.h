// Images in chat messages (Qwen3-VL): OpenAI's `image_url` content parts, as
//   {"type": "image_url", "image_url": {"url": U}}  or the older  {"type": "image_url", "image_url": U},
// where U is a data URL (data:image/png;base64,... or data:image/jpeg;base64,...), a
// file:// URL or an absolute path on the server's disk. Nothing is fetched from the
// network: an http(s) URL is refused by name. Each image is decoded and run through the
// model's image processor; its part becomes a text part holding the model's
// <|vision_start|><|image_pad|><|vision_end|> tokens, which is what Qwen3-VL's chat template
// writes for an image part (a template that joins parts into one string gets the same text
// joined with the others). After the rendered prompt is encoded, each image's one
// <|image_pad|> is widened to one token per merged patch, as the upstream processor does,
// and the request carries the images' pixel values and grids.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/vlm/qwen3_vl/image_encoder.h"
#include "models/vlm/qwen3_vl/image_processor.h"
#include "serving/generate/request_images.h"
#include "text/tokenizer.h"

namespace fk::serve {

// The bytes of standard base64 text (padding optional); throws fk::Error naming the first
// character that is not base64.
std::vector<uint8_t> decode_base64(std::string_view text);

// How an image URL is refused: ApiError 400 on `param`, the message `prefix` + what is wrong.
struct ImageRefusal {
  std::string param, prefix;
  [[noreturn]] void operator()(const std::string& what) const;
};

// An image's bytes from its URL: a data URL (data:image/png;base64,... or image/jpeg) or a
// local file (file:///path or an absolute path) inside `allowed_local_media` (symbolic links
// and .. resolved first; empty: none); a network URL, another media type, data that is not
// base64 or a missing file is refused. `what` becomes the file's name for a local file (the
// decoder's errors name it).
std::vector<uint8_t> image_url_bytes(const std::string& url, const std::filesystem::path& allowed_local_media,
                                     const ImageRefusal& refuse, std::string& what);

// The most images one request may bring: the vision tower's patches over the fewest patches
// the processor makes of an image.
int64_t max_images_per_request(const models::vlm::Qwen3VLImageEncoder& encoder);

// `messages` with every image part replaced by the text of its placeholder tokens (spelled
// by `tok`), the images decoded and processed into `images` in order. `encoder` null: the
// model reads no images, and an image part is refused naming that. Local files are read
// only inside `allowed_local_media` (symbolic links and .. resolved first); empty: none. Video parts are refused
// (unsupported). Throws ApiError (400, param "messages") naming the message, the part and
// what is wrong: a URL that is neither a data URL nor a local path, an http(s) URL, a data
// URL that is not base64 or not an image, a missing file, bytes that do not decode, more
// images or patches than the model takes.
nlohmann::ordered_json take_image_parts(const nlohmann::ordered_json& messages,
                                        const models::vlm::Qwen3VLImageEncoder* encoder,
                                        const std::filesystem::path& allowed_local_media, const tokenizer::Tokenizer& tok,
                                        std::vector<models::vlm::ProcessedImage>& images);

// Widens the image tokens of `ids` (one per image, in order) to each image's token count and
// returns the request's images, checked against the prompt by the model's encoder. Null
// when there are no images and no image tokens. Throws ApiError (400) when the rendered
// prompt holds another number of image tokens than there are images (the template dropped
// an image, or the text spelled the token itself).
std::shared_ptr<const engine::RequestImages> place_images(std::vector<int64_t>& ids,
                                                          const std::vector<models::vlm::ProcessedImage>& images,
                                                          const models::vlm::Qwen3VLImageEncoder* encoder);

}  // namespace fk::serve
