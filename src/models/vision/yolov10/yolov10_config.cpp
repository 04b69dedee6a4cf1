#include "models/vision/yolov10/yolov10_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "fk/status.h"

namespace fk::models::vision {
namespace {

using nlohmann::json;
using B = Yolov10Block;

// One row of a model yaml before scaling: [from, repeats, module, args].
struct YamlRow {
  std::vector<int> from;
  int repeats;
  B kind;
  int64_t channels;  // args[0] (0: none)
  int kernel = 1, stride = 1;
  bool shortcut = false, large_kernel = false;
};

// The rows every scale shares; `p5_backbone` (model.8), `p4_head` (model.19) and
// `p5_head` (model.22) are the rows where the scales differ.
std::vector<YamlRow> yaml_rows(const YamlRow& p5_backbone, const YamlRow& p4_head, const YamlRow& p5_head) {
  return {
      {{-1}, 1, B::conv, 64, 3, 2},         // 0 P1/2
      {{-1}, 1, B::conv, 128, 3, 2},        // 1 P2/4
      {{-1}, 3, B::c2f, 128, 1, 1, true},   // 2
      {{-1}, 1, B::conv, 256, 3, 2},        // 3 P3/8
      {{-1}, 6, B::c2f, 256, 1, 1, true},   // 4
      {{-1}, 1, B::scdown, 512, 3, 2},      // 5 P4/16
      {{-1}, 6, B::c2f, 512, 1, 1, true},   // 6
      {{-1}, 1, B::scdown, 1024, 3, 2},     // 7 P5/32
      p5_backbone,                          // 8
      {{-1}, 1, B::sppf, 1024, 5, 1},       // 9
      {{-1}, 1, B::psa, 1024},              // 10
      {{-1}, 1, B::upsample, 0, 1, 2},      // 11
      {{-1, 6}, 1, B::concat, 0},           // 12
      {{-1}, 3, B::c2f, 512},               // 13
      {{-1}, 1, B::upsample, 0, 1, 2},      // 14
      {{-1, 4}, 1, B::concat, 0},           // 15
      {{-1}, 3, B::c2f, 256},               // 16 P3/8
      {{-1}, 1, B::conv, 256, 3, 2},        // 17
      {{-1, 13}, 1, B::concat, 0},          // 18
      p4_head,                              // 19 P4/16
      {{-1}, 1, B::scdown, 512, 3, 2},      // 20
      {{-1, 10}, 1, B::concat, 0},          // 21
      p5_head,                              // 22 P5/32
      {{16, 19, 22}, 1, B::detect, 0},      // 23 v10Detect
  };
}

std::vector<YamlRow> rows_of_scale(const std::string& scale) {
  const YamlRow c2f_p5{{-1}, 3, B::c2f, 1024, 1, 1, true};
  const YamlRow c2f_p4{{-1}, 3, B::c2f, 512};
  const YamlRow cib_lk_p5{{-1}, 3, B::c2f_cib, 1024, 1, 1, true, true};
  if (scale == "n") return yaml_rows(c2f_p5, c2f_p4, cib_lk_p5);
  if (scale == "s") return yaml_rows(cib_lk_p5, c2f_p4, cib_lk_p5);
  // m: C2fCIB without the large-kernel branch at P5 (backbone and head) and the P4 head.
  const YamlRow cib_p5{{-1}, 3, B::c2f_cib, 1024, 1, 1, true};
  const YamlRow cib_p4{{-1}, 3, B::c2f_cib, 512, 1, 1, true};
  return yaml_rows(cib_p5, cib_p4, cib_p5);
}

struct ScaleDefaults {
  double depth, width;
  int64_t max_channels;
};

ScaleDefaults scale_defaults(const std::string& scale, std::string_view source) {
  if (scale == "n") return {0.33, 0.25, 1024};
  if (scale == "s") return {0.33, 0.50, 1024};
  if (scale == "m") return {0.67, 0.75, 768};
  if (scale == "b" || scale == "l" || scale == "x")
    FK_FAIL(FK_ERR_UNSUPPORTED, source, ": YOLOv10 scale '", scale,
            "' is not supported (the engine builds the n, s and m graphs)");
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": unknown YOLOv10 scale '", scale, "' (n, s or m)");
}

int64_t make_divisible(double x, int64_t divisor) {
  return static_cast<int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

double number(const json& j, const char* key, double fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number(), source, ": '", key, "' must be a number, got ", j[key].dump());
  return j[key].get<double>();
}

int64_t integer(const json& j, const char* key, int64_t fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": '", key, "' must be an integer, got ", j[key].dump());
  return j[key].get<int64_t>();
}

}  // namespace

std::string_view yolov10_block_name(Yolov10Block kind) {
  switch (kind) {
    case B::conv: return "Conv";
    case B::c2f: return "C2f";
    case B::c2f_cib: return "C2fCIB";
    case B::scdown: return "SCDown";
    case B::sppf: return "SPPF";
    case B::psa: return "PSA";
    case B::upsample: return "Upsample";
    case B::concat: return "Concat";
    case B::detect: return "v10Detect";
  }
  return "?";
}

std::vector<int64_t> Yolov10Config::detect_channels() const {
  std::vector<int64_t> c;
  for (int f : detect().from) c.push_back(layers[static_cast<size_t>(f)].c_out);
  return c;
}

int64_t Yolov10Config::anchors() const {
  int64_t a = 0;
  for (int f : detect().from) {
    const int64_t g = imgsz / layers[static_cast<size_t>(f)].stride_px;
    a += g * g;
  }
  return a;
}

Yolov10Config parse_yolov10_config(std::string_view config_json, std::string_view source) {
  json j;
  try {
    j = json::parse(config_json);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  Yolov10Config c;
  c.model_type = j.value("model_type", std::string());
  FK_CHECK(c.model_type == "yolov10", source, ": model_type must be 'yolov10', got '", c.model_type, "'");
  FK_CHECK(j.contains("scale") && j["scale"].is_string(), source, ": a YOLOv10 config needs a 'scale' (n, s or m)");
  c.scale = j["scale"].get<std::string>();
  const ScaleDefaults d = scale_defaults(c.scale, source);
  c.depth_multiple = number(j, "depth_multiple", d.depth, source);
  c.width_multiple = number(j, "width_multiple", d.width, source);
  c.max_channels = integer(j, "max_channels", d.max_channels, source);
  c.nc = integer(j, "nc", 80, source);
  c.imgsz = integer(j, "imgsz", 640, source);
  c.reg_max = integer(j, "reg_max", 16, source);
  c.max_det = integer(j, "max_det", 300, source);
  c.bn_eps = number(j, "bn_eps", 1e-3, source);
  FK_CHECK(c.depth_multiple > 0 && c.depth_multiple <= 2 && c.width_multiple > 0 && c.width_multiple <= 2, source,
           ": depth_multiple and width_multiple must lie in (0, 2], got ", c.depth_multiple, " and ", c.width_multiple);
  FK_CHECK(c.max_channels >= 64, source, ": max_channels must be at least 64, got ", c.max_channels);
  FK_CHECK(c.nc >= 1 && c.nc <= 4096, source, ": nc (the classes) must lie in [1, 4096], got ", c.nc);
  FK_CHECK(c.imgsz >= 32 && c.imgsz % 32 == 0, source, ": imgsz must be a positive multiple of 32 (the P5 stride), got ",
           c.imgsz);
  FK_CHECK(c.reg_max == 16, source, ": reg_max must be 16 (the DFL bins of v10Detect), got ", c.reg_max);
  FK_CHECK(c.max_det >= 1, source, ": max_det must be positive, got ", c.max_det);
  FK_CHECK(c.bn_eps > 0, source, ": bn_eps must be positive, got ", c.bn_eps);
  if (j.contains("end2end") && j["end2end"].is_boolean())
    FK_CHECK(j["end2end"].get<bool>(), source,
             ": end2end false (the one-to-many head with NMS) is not supported: the engine runs the one-to-one head");

  const std::vector<YamlRow> rows = rows_of_scale(c.scale);
  for (size_t i = 0; i < rows.size(); ++i) {
    const YamlRow& r = rows[i];
    Yolov10Layer l;
    l.index = static_cast<int>(i);
    l.kind = r.kind;
    for (int f : r.from) l.from.push_back(f < 0 ? l.index + f : f);
    l.kernel = r.kernel;
    l.stride = r.stride;
    l.shortcut = r.shortcut;
    l.large_kernel = r.large_kernel;
    l.repeats = r.repeats > 1 ? std::max<int64_t>(std::llround(r.repeats * c.depth_multiple), 1) : r.repeats;
    const Yolov10Layer* prev = i == 0 ? nullptr : &c.layers[static_cast<size_t>(l.from[0])];
    l.c_in = prev ? prev->c_out : 3;
    const int64_t in_stride = prev ? prev->stride_px : 1;
    switch (r.kind) {
      case B::upsample:
        l.c_out = l.c_in;
        l.stride_px = in_stride / 2;
        break;
      case B::concat:
        l.c_in = 0;
        for (int f : l.from) l.c_in += c.layers[static_cast<size_t>(f)].c_out;
        l.c_out = l.c_in;
        l.stride_px = in_stride;
        break;
      case B::detect:
        l.c_in = l.c_out = 0;
        l.stride_px = 0;
        break;
      default:
        l.c_out = make_divisible(static_cast<double>(std::min(r.channels, c.max_channels)) * c.width_multiple, 8);
        l.stride_px = in_stride * r.stride;
        break;
    }
    c.layers.push_back(l);
  }
  // PSA's attention: heads of 64 channels or more over half of its channels (head_dim
  // = c / (c / 64)); the attention op takes head dims that are multiples of 8.
  const Yolov10Layer& psa = c.layers[10];
  const int64_t half = psa.c_out / 2, heads = half / 64;
  FK_CHECK(psa.c_out == psa.c_in && heads >= 1 && half % heads == 0 && (half / heads) % 8 == 0, source,
           ": PSA's attention needs half its channels (", half,
           ") split into heads of at least 64 with a head dim a multiple of 8; raise width_multiple or max_channels");
  return c;
}

}  // namespace fk::models::vision
