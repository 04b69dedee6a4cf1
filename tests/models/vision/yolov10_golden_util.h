// The YOLOv10 golden check shared by the CPU and GPU golden tests (see
// yolov10_golden_test.cpp): expands the 4-bit weight codes into a float32 checkpoint folder,
// runs the tiny model in float16 on `device` and compares with the reference's outputs.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <string>
#include <unistd.h>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/registry.h"
#include "models/vision/yolov10/yolov10_detect.h"
#include "models/vision/yolov10/yolov10_model.h"

namespace fk::models::vision::golden {

inline std::filesystem::path data_dir() { return std::filesystem::path(FK_SOURCE_DIR) / "tests/data/models/yolov10"; }

// A folder holding config.json and model.safetensors (float32, upstream names).
inline std::filesystem::path expand_checkpoint(const std::filesystem::path& to) {
  const safetensors::File codes = safetensors::File::open(data_dir() / "weights_u4.safetensors");
  std::vector<Tensor> keep;
  safetensors::NamedViews views;
  for (const std::string& name : codes.names()) {
    const auto meta = codes.metadata().find(name);
    FK_CHECK(meta != codes.metadata().end(), "golden weights: no range for '", name, "'");
    // "lo,hi,d0xd1x..."
    const std::string& m = meta->second;
    const size_t c1 = m.find(','), c2 = m.find(',', c1 + 1);
    const double lo = std::stod(m.substr(0, c1)), hi = std::stod(m.substr(c1 + 1, c2 - c1 - 1));
    Shape shape;
    for (size_t at = c2 + 1; at <= m.size();) {
      const size_t x = std::min(m.find('x', at), m.size());
      shape.push_back(std::stoll(m.substr(at, x - at)));
      at = x + 1;
    }
    Tensor t = Tensor::empty(shape, DType::f32);
    const auto bytes = codes.bytes(name);
    FK_CHECK(static_cast<int64_t>(bytes.size()) == (t.numel() + 1) / 2, "golden weights: '", name,
             "' does not hold ", t.numel(), " packed 4-bit codes");
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int k = (bytes[static_cast<size_t>(i / 2)] >> (4 * (i % 2))) & 15;
      t.data_as<float>()[i] = static_cast<float>(lo + (hi - lo) * static_cast<double>(k) / 14.0);
    }
    views.emplace_back(name, t.view());
    keep.push_back(std::move(t));
  }
  std::filesystem::create_directories(to);
  safetensors::save(to / "model.safetensors", views);
  std::filesystem::copy_file(data_dir() / "config.json", to / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  return to;
}

inline std::vector<double> doubles(const TensorView& v) {
  std::vector<double> out(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = load_element(static_cast<const char*>(v.data) + i * static_cast<size_t>(v.element_size()), v.dtype);
  return out;
}

inline void check_tiny(Device device) {
  const safetensors::File g = safetensors::File::open(data_dir() / "golden.safetensors");
  const std::filesystem::path folder =
      expand_checkpoint(std::filesystem::temp_directory_path() / ("fk_yolov10_golden_" + std::to_string(::getpid())));
  auto model = create_model(folder.string());
  auto* yolo = dynamic_cast<Yolov10Model*>(model.get());
  ASSERT_NE(yolo, nullptr);
  const Yolov10Config& c = yolo->config();
  LoadOptions o;
  o.device = device;
  o.dtype = DType::f16;
  o.checkpoint = folder / "model.safetensors";
  o.max_seqs = 2;
  model->load(o);

  // NCHW float16 images to NHWC.
  const Tensor nchw = g.load_tensor("images");
  const int64_t n = nchw.size(0), s = c.imgsz;
  ASSERT_EQ(nchw.size(2), s);
  Tensor images = Tensor::empty({n, s, s, 3}, DType::f16);
  const size_t es = 2;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < 3; ++ch)
      for (int64_t y = 0; y < s; ++y)
        for (int64_t x = 0; x < s; ++x)
          std::memcpy(static_cast<char*>(images.data()) + static_cast<size_t>(((i * s + y) * s + x) * 3 + ch) * es,
                      static_cast<const char*>(nchw.data()) + static_cast<size_t>(((i * 3 + ch) * s + y) * s + x) * es, es);
  const Tensor on_device = device.is_cpu() ? images : images.to(device);
  StepInputs in;
  in.tensors = {{"images", on_device.view()}};
  model->plan(in, nullptr);
  const TensorView raw_view = model->forward(in, nullptr);
  const Tensor raw_host = [&] {
    Tensor t = Tensor::empty(Shape(raw_view.shape, raw_view.shape + 3), raw_view.dtype);
    rt::memcpy_sync(t.data(), Device::cpu(), raw_view.data, raw_view.device, static_cast<size_t>(raw_view.nbytes()));
    return t;
  }();
  const std::vector<double> got = doubles(raw_host.view()), want = doubles(g.view("raw"));
  ASSERT_EQ(got.size(), want.size());
  const size_t per = want.size() / static_cast<size_t>(n);

  const std::vector<double> boxes = doubles(g.view("boxes")), scores = doubles(g.view("scores"));
  const Tensor labels = g.load_tensor("labels");
  const int64_t k = g.info("scores").shape[1];
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<double> w(want.begin() + i * per, want.begin() + (i + 1) * per);
    const std::vector<double> r(got.begin() + i * per, got.begin() + (i + 1) * per);
    double err = 0, norm = 0;
    for (size_t j = 0; j < w.size(); ++j) err += (r[j] - w[j]) * (r[j] - w[j]), norm += w[j] * w[j];
    EXPECT_LT(std::sqrt(err / norm), 5e-3) << "image " << i << ": raw head output, relative L2 error";

    // The decode and selection of the reference's own raw output give its detections.
    const std::vector<Yolov10Detection> ref = yolov10_select(c, yolov10_decode(c, w));
    ASSERT_EQ(static_cast<int64_t>(ref.size()), k);
    // Scores closer than float rounding may come out in either order (torch's f32 sigmoid,
    // the op's double one): labels and boxes are compared where the order is clear.
    auto clear = [&](int64_t d, double gap) {
      const size_t at = static_cast<size_t>(i * k + d);
      return (d == 0 || scores[at - 1] - scores[at] > gap) && (d + 1 == k || scores[at] - scores[at + 1] > gap);
    };
    for (int64_t d = 0; d < k; ++d) {
      const size_t at = static_cast<size_t>(i * k + d);
      EXPECT_NEAR(ref[static_cast<size_t>(d)].score, scores[at], 1e-6) << "image " << i << " detection " << d;
      if (!clear(d, 1e-5)) continue;
      EXPECT_EQ(ref[static_cast<size_t>(d)].label, labels.data_as<int64_t>()[at]) << "image " << i << " detection " << d;
      for (int q = 0; q < 4; ++q)
        EXPECT_NEAR(ref[static_cast<size_t>(d)].box[q], boxes[at * 4 + static_cast<size_t>(q)],
                    1e-3 + 1e-4 * std::abs(boxes[at * 4 + static_cast<size_t>(q)]))
            << "image " << i << " detection " << d;
    }
    // The engine's float16 detections: the same top scores and boxes within rounding.
    const std::vector<Yolov10Detection> mine = yolov10_select(c, yolov10_decode(c, r));
    for (int64_t d = 0; d < std::min<int64_t>(k, 10); ++d) {
      const size_t at = static_cast<size_t>(i * k + d);
      EXPECT_NEAR(mine[static_cast<size_t>(d)].score, scores[at], 2e-3) << "image " << i << " detection " << d;
    }
    // The top box, where the float16 run cannot have swapped the first two.
    const Yolov10Detection& top = mine[0];
    if (clear(0, 5e-3))
      for (int q = 0; q < 4; ++q)
        EXPECT_NEAR(top.box[q], boxes[static_cast<size_t>(i * k) * 4 + static_cast<size_t>(q)], 0.5)
            << "image " << i << " top box";
  }
  std::filesystem::remove_all(folder);
}

}  // namespace fk::models::vision::golden
