#include "ops/yolo/yolov10_c2f_composed.h"

#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/conv.h"
#include "fk/status.h"
#include "ops/common/validate.h"
#include "ops/common/views.h"

namespace fk::ops {
namespace {

using A = Yolov10C2fArgs;

// Channels [c0, c0 + count) of an NHWC view.
TensorView channels(const TensorView& v, int64_t c0, int64_t count) { return views::last_dim(v, c0, count); }

void expect_filter(const char* arg, const TensorView& w, const TensorView& b, int64_t k, int64_t r, int64_t c,
                   DType dt, DeviceType backend) {
  constexpr const char* op = A::kName;
  expect_rank(op, arg, w, 4);
  expect_dtype(op, arg, w, dt);
  expect_contiguous(op, arg, w);
  expect_device(op, arg, w, backend);
  FK_CHECK(w.shape[0] == k && w.shape[1] == r && w.shape[2] == r && w.shape[3] == c, op, ": ", arg, " must be [", k,
           ", ", r, ", ", r, ", ", c, "], got ", describe(w));
  expect_rank(op, "bias", b, 1);
  expect_dtype(op, "bias", b, dt);
  expect_device(op, "bias", b, backend);
  FK_CHECK(b.shape[0] == k, op, ": the bias of ", arg, " must be [", k, "], got ", describe(b));
}

template <DeviceType B>
fk_status composed(const void* args, void* stream) {
  return op_guard([&] {
    const A& a = *static_cast<const A*>(args);
    validate_yolov10_c2f(a, B);
    const int64_t c = a.cv1_weight.shape[0] / 2, n = a.num_bottlenecks;
    auto conv = [&](const TensorView& in, const TensorView& out, const TensorView& w, const TensorView& bias, int pad,
                    const TensorView& residual) {
      Conv2dArgs cv{};
      cv.out = out, cv.input = in, cv.weight = w, cv.bias = bias, cv.residual = residual;
      cv.pad_h = cv.pad_w = pad;
      cv.activation = ConvActivation::silu;
      call_op(cv, B, stream);
    };
    conv(a.input, channels(a.concat, 0, 2 * c), a.cv1_weight, a.cv1_bias, 0, TensorView{});
    for (int64_t j = 0; j < n; ++j) {
      const TensorView in = channels(a.concat, (1 + j) * c, c);
      conv(in, a.mid, a.m_weight[2 * j], a.m_bias[2 * j], 1, TensorView{});
      conv(a.mid, channels(a.concat, (2 + j) * c, c), a.m_weight[2 * j + 1], a.m_bias[2 * j + 1], 1,
           a.shortcut ? in : TensorView{});
    }
    conv(a.concat, a.out, a.cv2_weight, a.cv2_bias, 0, TensorView{});
  });
}

// out[k] = silu(bias[k] + sum over the r x r taps and channels), "same" padding, in double.
std::vector<double> conv_silu(const std::vector<double>& x, int64_t n, int64_t h, int64_t w, int64_t cin,
                              const TensorView& wt, const TensorView& bias) {
  const int64_t k_out = wt.shape[0], r = wt.shape[1], pad = r / 2;
  std::vector<double> y(static_cast<size_t>(n * h * w * k_out));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < h; ++p)
      for (int64_t q = 0; q < w; ++q)
        for (int64_t k = 0; k < k_out; ++k) {
          double s = get(bias, k);
          for (int64_t u = 0; u < r; ++u) {
            const int64_t yy = p - pad + u;
            if (yy < 0 || yy >= h) continue;
            for (int64_t v = 0; v < r; ++v) {
              const int64_t xx = q - pad + v;
              if (xx < 0 || xx >= w) continue;
              const double* px = &x[static_cast<size_t>(((i * h + yy) * w + xx) * cin)];
              for (int64_t ch = 0; ch < cin; ++ch) s += get(wt, k, u, v, ch) * px[ch];
            }
          }
          y[static_cast<size_t>(((i * h + p) * w + q) * k_out + k)] = s / (1.0 + std::exp(-s));
        }
  return y;
}

}  // namespace

void validate_yolov10_c2f(const A& a, DeviceType backend) {
  constexpr const char* op = A::kName;
  expect_rank(op, "input", a.input, 4);
  expect_dtype_in(op, "input", a.input, {DType::f16, DType::bf16, DType::f32});
  expect_device(op, "input", a.input, backend);
  FK_CHECK(a.num_bottlenecks >= 1 && a.num_bottlenecks <= A::kMaxBottlenecks, op, ": num_bottlenecks must be in [1, ",
           A::kMaxBottlenecks, "], got ", a.num_bottlenecks);
  FK_CHECK(a.shortcut == 0 || a.shortcut == 1, op, ": shortcut must be 0 or 1, got ", a.shortcut);
  const DType dt = a.input.dtype;
  const int64_t n_img = a.input.shape[0], h = a.input.shape[1], w = a.input.shape[2], c1 = a.input.shape[3];
  FK_CHECK(a.cv1_weight.rank == 4 && a.cv1_weight.shape[0] >= 2 && a.cv1_weight.shape[0] % 2 == 0, op,
           ": cv1_weight must be [2c, 1, 1, C1] with an even 2c, got ", describe(a.cv1_weight));
  const int64_t c = a.cv1_weight.shape[0] / 2, n = a.num_bottlenecks, c2 = a.cv2_weight.shape[0];
  expect_filter("cv1_weight", a.cv1_weight, a.cv1_bias, 2 * c, 1, c1, dt, backend);
  expect_filter("cv2_weight", a.cv2_weight, a.cv2_bias, c2, 1, (2 + n) * c, dt, backend);
  for (int64_t j = 0; j < 2 * n; ++j) expect_filter("m_weight", a.m_weight[j], a.m_bias[j], c, 3, c, dt, backend);
  for (const auto& [name, v, ch] : {std::tuple{"out", a.out, c2}, std::tuple{"concat", a.concat, (2 + n) * c},
                                    std::tuple{"mid", a.mid, c}}) {
    expect_rank(op, name, v, 4);
    if (std::string_view(name) == "out") expect_written_dtype(op, name, v, dt, backend);
    else expect_dtype(op, name, v, dt);
    expect_device(op, name, v, backend);
    FK_CHECK(v.shape[0] == n_img && v.shape[1] == h && v.shape[2] == w && v.shape[3] == ch, op, ": ", name,
             " must be [", n_img, ", ", h, ", ", w, ", ", ch, "], got ", describe(v));
    if (std::string_view(name) != "out") expect_contiguous(op, name, v);
    expect_no_overlap(op, name, v, "input", a.input);
  }
  expect_no_overlap(op, "out", a.out, "concat", a.concat);
  expect_no_overlap(op, "out", a.out, "mid", a.mid);
  expect_no_overlap(op, "concat", a.concat, "mid", a.mid);
}

void yolov10_c2f_reference(const A& a) {
  const int64_t n_img = a.input.shape[0], h = a.input.shape[1], w = a.input.shape[2], c1 = a.input.shape[3];
  const int64_t c = a.cv1_weight.shape[0] / 2, n = a.num_bottlenecks, c2 = a.cv2_weight.shape[0];
  const int64_t pixels = n_img * h * w;
  std::vector<double> x(static_cast<size_t>(pixels * c1));
  for (int64_t i = 0; i < n_img; ++i)
    for (int64_t p = 0; p < h; ++p)
      for (int64_t q = 0; q < w; ++q)
        for (int64_t ch = 0; ch < c1; ++ch) x[static_cast<size_t>(((i * h + p) * w + q) * c1 + ch)] = get(a.input, i, p, q, ch);
  const std::vector<double> y01 = conv_silu(x, n_img, h, w, c1, a.cv1_weight, a.cv1_bias);
  const int64_t width = (2 + n) * c;
  std::vector<double> cat(static_cast<size_t>(pixels * width));
  for (int64_t px = 0; px < pixels; ++px)
    for (int64_t ch = 0; ch < 2 * c; ++ch) cat[static_cast<size_t>(px * width + ch)] = y01[static_cast<size_t>(px * 2 * c + ch)];
  std::vector<double> last(y01.size() / 2);
  for (int64_t px = 0; px < pixels; ++px)
    for (int64_t ch = 0; ch < c; ++ch) last[static_cast<size_t>(px * c + ch)] = y01[static_cast<size_t>(px * 2 * c + c + ch)];
  for (int64_t j = 0; j < n; ++j) {
    const std::vector<double> mid = conv_silu(last, n_img, h, w, c, a.m_weight[2 * j], a.m_bias[2 * j]);
    std::vector<double> o = conv_silu(mid, n_img, h, w, c, a.m_weight[2 * j + 1], a.m_bias[2 * j + 1]);
    if (a.shortcut)
      for (size_t i = 0; i < o.size(); ++i) o[i] += last[i];
    for (int64_t px = 0; px < pixels; ++px)
      for (int64_t ch = 0; ch < c; ++ch) cat[static_cast<size_t>(px * width + (2 + j) * c + ch)] = o[static_cast<size_t>(px * c + ch)];
    last = std::move(o);
  }
  const std::vector<double> y = conv_silu(cat, n_img, h, w, width, a.cv2_weight, a.cv2_bias);
  for (int64_t i = 0; i < n_img; ++i)
    for (int64_t p = 0; p < h; ++p)
      for (int64_t q = 0; q < w; ++q)
        for (int64_t k = 0; k < c2; ++k) set(a.out, y[static_cast<size_t>(((i * h + p) * w + q) * c2 + k)], i, p, q, k);
}

fk_status yolov10_c2f_composed_cpu(const void* args, void* stream) { return composed<DeviceType::cpu>(args, stream); }
fk_status yolov10_c2f_composed_cuda(const void* args, void* stream) { return composed<DeviceType::cuda>(args, stream); }

}  // namespace fk::ops
