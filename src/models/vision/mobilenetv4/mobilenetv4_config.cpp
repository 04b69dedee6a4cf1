#include "models/vision/mobilenetv4/mobilenetv4_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "fk/status.h"
#include "ops/conv/conv_validate.h"

namespace fk::models::vision {
namespace {

using nlohmann::json;
using K = MobileNetV4BlockKind;

// One row of timm's arch def before channel rounding: "cn_r1_k3_s2_e1_c32" is
// {cn, repeats 1, kernel 3, stride 2, channels 32}; "uir_r4_a0_k3_s1_e2_c96" is
// {uir, 4, dw_start 0, dw_mid 3, stride 1, expansion 2, 96}; "er_r1_k3_s2_e4_c48" is
// {er, 1, -, conv_exp kernel 3, stride 2, expansion 4, 48}.
struct MobileNetV4ArchRow {
  K kind;
  int repeats;
  int start;   // uir: "a" (dw_start kernel); cn: unused
  int kernel;  // cn, er: "k"; uir: "k" (dw_mid kernel, 0: none)
  int stride;
  double expansion;
  int64_t channels;
};

// mobilenetv4_conv_small, stage by stage.
const std::vector<std::vector<MobileNetV4ArchRow>>& mnv4_conv_small_arch() {
  static const std::vector<std::vector<MobileNetV4ArchRow>> arch = {
      {{K::conv_bn_act, 1, 0, 3, 2, 1, 32}, {K::conv_bn_act, 1, 0, 1, 1, 1, 32}},
      {{K::conv_bn_act, 1, 0, 3, 2, 1, 96}, {K::conv_bn_act, 1, 0, 1, 1, 1, 64}},
      {{K::uir, 1, 5, 5, 2, 3, 96}, {K::uir, 4, 0, 3, 1, 2, 96}, {K::uir, 1, 3, 0, 1, 4, 96}},
      {{K::uir, 1, 3, 3, 2, 6, 128},
       {K::uir, 1, 5, 5, 1, 4, 128},
       {K::uir, 1, 0, 5, 1, 4, 128},
       {K::uir, 1, 0, 5, 1, 3, 128},
       {K::uir, 2, 0, 3, 1, 4, 128}},
      {{K::conv_bn_act, 1, 0, 1, 1, 1, 960}},
  };
  return arch;
}

// mobilenetv4_conv_medium, stage by stage.
const std::vector<std::vector<MobileNetV4ArchRow>>& mnv4_conv_medium_arch() {
  static const std::vector<std::vector<MobileNetV4ArchRow>> arch = {
      {{K::edge_residual, 1, 0, 3, 2, 4, 48}},
      {{K::uir, 1, 3, 5, 2, 4, 80}, {K::uir, 1, 3, 3, 1, 2, 80}},
      {{K::uir, 1, 3, 5, 2, 6, 160},
       {K::uir, 2, 3, 3, 1, 4, 160},
       {K::uir, 1, 3, 5, 1, 4, 160},
       {K::uir, 1, 3, 3, 1, 4, 160},
       {K::uir, 1, 3, 0, 1, 4, 160},
       {K::uir, 1, 0, 0, 1, 2, 160},
       {K::uir, 1, 3, 0, 1, 4, 160}},
      {{K::uir, 1, 5, 5, 2, 6, 256},
       {K::uir, 1, 5, 5, 1, 4, 256},
       {K::uir, 2, 3, 5, 1, 4, 256},
       {K::uir, 1, 0, 0, 1, 4, 256},
       {K::uir, 1, 3, 0, 1, 4, 256},
       {K::uir, 1, 3, 5, 1, 2, 256},
       {K::uir, 1, 5, 5, 1, 4, 256},
       {K::uir, 2, 0, 0, 1, 4, 256},
       {K::uir, 1, 5, 0, 1, 2, 256}},
      {{K::conv_bn_act, 1, 0, 1, 1, 1, 960}},
  };
  return arch;
}

double mnv4_number(const json& j, const char* key, double fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number(), source, ": '", key, "' must be a number, got ", j[key].dump());
  return j[key].get<double>();
}

int64_t mnv4_integer(const json& j, const char* key, int64_t fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": '", key, "' must be an integer, got ", j[key].dump());
  return j[key].get<int64_t>();
}

int64_t mnv4_out_size(int64_t in, int kernel, int stride) {
  return ops::conv_out_size(in, kernel, stride, kernel / 2, 1);
}

}  // namespace

int64_t mobilenetv4_make_divisible(double v) {
  constexpr int64_t divisor = 8;
  int64_t r = std::max<int64_t>(divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (static_cast<double>(r) < 0.9 * v) r += divisor;
  return r;
}

int64_t mobilenetv4_round_channels(int64_t channels, double multiplier) {
  return multiplier == 0 ? channels : mobilenetv4_make_divisible(static_cast<double>(channels) * multiplier);
}

int64_t MobileNetV4Config::stem_size() const { return mnv4_out_size(image_size, 3, 2); }

MobileNetV4Config parse_mobilenetv4_config(std::string_view config_json, std::string_view source) {
  json j;
  try {
    j = json::parse(config_json);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  MobileNetV4Config c;
  // timm's hub config.json names the model ("architecture": "mobilenetv4_conv_small") and
  // keeps the input size in pretrained_cfg; the engine's own form has model_type and variant.
  const std::string timm_arch = j.contains("architecture") && j["architecture"].is_string()
                                    ? j["architecture"].get<std::string>()
                                    : std::string();
  if (!timm_arch.empty() && !j.contains("model_type")) {
    FK_CHECK(timm_arch.rfind("mobilenetv4_", 0) == 0, source, ": timm architecture '", timm_arch,
             "' is not a MobileNetV4");
    j["variant"] = timm_arch.substr(timm_arch.find('_') + 1);
    if (j.contains("pretrained_cfg") && j["pretrained_cfg"].is_object() &&
        j["pretrained_cfg"].contains("input_size") && j["pretrained_cfg"]["input_size"].is_array() &&
        j["pretrained_cfg"]["input_size"].size() == 3 && !j.contains("image_size"))
      j["image_size"] = j["pretrained_cfg"]["input_size"][2];
    if (j.contains("pretrained_cfg") && j["pretrained_cfg"].is_object() && j["pretrained_cfg"].contains("crop_pct") &&
        !j.contains("crop_pct"))
      j["crop_pct"] = j["pretrained_cfg"]["crop_pct"];
  } else {
    c.model_type = j.value("model_type", std::string());
    FK_CHECK(c.model_type == "mobilenetv4", source, ": model_type must be 'mobilenetv4', got '", c.model_type, "'");
  }
  c.model_type = "mobilenetv4";
  FK_CHECK(j.contains("variant") && j["variant"].is_string(), source,
           ": a MobileNetV4 config needs a 'variant' (conv_small or conv_medium)");
  c.variant = j["variant"].get<std::string>();
  if (c.variant == "conv_large" || c.variant.rfind("hybrid", 0) == 0 || c.variant == "conv_aa_large" ||
      c.variant == "conv_blur_medium" || c.variant == "conv_aa_medium")
    FK_FAIL(FK_ERR_UNSUPPORTED, source, ": MobileNetV4 variant '", c.variant,
            "' is not supported (the engine builds conv_small and conv_medium; the others need mobile attention or "
            "anti-aliased downsampling blocks)");
  FK_CHECK(c.variant == "conv_small" || c.variant == "conv_medium", source, ": unknown MobileNetV4 variant '",
           c.variant, "' (conv_small, conv_medium)");
  c.num_classes = mnv4_integer(j, "num_classes", 1000, source);
  c.image_size = mnv4_integer(j, "image_size", c.variant == "conv_medium" ? 256 : 224, source);
  c.crop_pct = mnv4_number(j, "crop_pct", c.variant == "conv_medium" ? 0.95 : 0.875, source);
  FK_CHECK(c.crop_pct > 0 && c.crop_pct <= 1, source, ": crop_pct must lie in (0, 1], got ", c.crop_pct);
  c.channel_multiplier = mnv4_number(j, "channel_multiplier", 1.0, source);
  c.num_features = mnv4_integer(j, "num_features", 1280, source);
  c.bn_eps = mnv4_number(j, "bn_eps", 1e-5, source);
  FK_CHECK(c.num_classes >= 1 && c.num_classes <= 100000, source, ": num_classes must lie in [1, 100000], got ",
           c.num_classes);
  FK_CHECK(c.image_size >= 32 && c.image_size <= 4096, source, ": image_size must lie in [32, 4096], got ",
           c.image_size);
  FK_CHECK(c.channel_multiplier > 0 && c.channel_multiplier <= 4, source,
           ": channel_multiplier must lie in (0, 4], got ", c.channel_multiplier);
  FK_CHECK(c.num_features >= 1 && c.num_features <= 65536, source, ": num_features must lie in [1, 65536], got ",
           c.num_features);
  FK_CHECK(c.bn_eps > 0, source, ": bn_eps must be positive, got ", c.bn_eps);

  c.stem_channels = c.channel_multiplier < 1.0 ? 32 : mobilenetv4_round_channels(32, c.channel_multiplier);
  int64_t ch = c.stem_channels, size = c.stem_size();
  const auto& arch = c.variant == "conv_medium" ? mnv4_conv_medium_arch() : mnv4_conv_small_arch();
  for (size_t stage = 0; stage < arch.size(); ++stage) {
    int index = 0;
    for (const MobileNetV4ArchRow& row : arch[stage])
      for (int rep = 0; rep < row.repeats; ++rep, ++index) {
        MobileNetV4Block b;
        b.prefix = "blocks." + std::to_string(stage) + "." + std::to_string(index) + ".";
        b.kind = row.kind;
        b.c_in = ch;
        b.c_out = mobilenetv4_round_channels(row.channels, c.channel_multiplier);
        b.stride = rep == 0 ? row.stride : 1;  // a repeated row strides only in its first block
        if (row.kind == K::conv_bn_act) {
          b.kernel = row.kernel;
          size = mnv4_out_size(size, b.kernel, b.stride);
        } else if (row.kind == K::edge_residual) {
          b.kernel = row.kernel;
          b.mid = mobilenetv4_make_divisible(static_cast<double>(b.c_in) * row.expansion);
          size = mnv4_out_size(size, b.kernel, b.stride);
          b.residual = b.c_in == b.c_out && b.stride == 1;
        } else {
          b.dw_start = row.start;
          b.dw_mid = row.kernel;
          b.mid = mobilenetv4_make_divisible(static_cast<double>(b.c_in) * row.expansion);
          FK_CHECK(b.stride == 1 || b.dw_start > 0 || b.dw_mid > 0, source, ": a strided UIR needs a depthwise conv");
          // The stride sits on dw_mid when there is one, else on dw_start.
          if (b.dw_start > 0) size = mnv4_out_size(size, b.dw_start, b.dw_mid > 0 ? 1 : b.stride);
          if (b.dw_mid > 0) size = mnv4_out_size(size, b.dw_mid, b.stride);
          b.residual = b.c_in == b.c_out && b.stride == 1;
        }
        b.out_size = size;
        ch = b.c_out;
        c.blocks.push_back(b);
      }
  }
  return c;
}

}  // namespace fk::models::vision
