// PNG and JPEG decoding through stb_image (Debian libstb-dev, header only: its
// implementation is compiled here, static to this file). A build without the header still
// compiles; decoding then refuses by name.
#include <fstream>
#include <iterator>

#include "fk/status.h"
#include "models/image/rgb_image.h"

#if __has_include(<stb/stb_image.h>)
#define FK_HAVE_STB_IMAGE 1
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#include <stb/stb_image.h>
#else
#define FK_HAVE_STB_IMAGE 0
#endif

namespace fk::models::image {

RgbImage decode_rgb_image(const std::vector<uint8_t>& bytes, const std::string& what) {
#if FK_HAVE_STB_IMAGE
  FK_CHECK(!bytes.empty(), "image ", what, ": no bytes");
  int w = 0, h = 0, channels = 0;
  stbi_uc* px = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels, 3);
  if (px == nullptr)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "image ", what, " does not decode as PNG or JPEG (", stbi_failure_reason(), ")");
  RgbImage out{h, w, std::vector<uint8_t>(px, px + static_cast<size_t>(w) * static_cast<size_t>(h) * 3)};
  stbi_image_free(px);
  return out;
#else
  FK_FAIL(FK_ERR_UNSUPPORTED, "image ", what, ": this build has no image decoder (install libstb-dev and rebuild)");
#endif
}

RgbImage load_rgb_image(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  FK_CHECK(in.good(), "image ", path.string(), ": cannot open");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_rgb_image(bytes, path.string());
}

}  // namespace fk::models::image
