// Argument checks of dfl_box_decode (shared by the CPU and CUDA implementations).
#pragma once
#include "fk/ops/detect.h"
#include "fk/status.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_dfl_box_decode(const DflBoxDecodeArgs& a, DeviceType backend) {
  constexpr const char* op = DflBoxDecodeArgs::kName;
  FK_CHECK(a.reg_max >= 1, op, ": reg_max must be >= 1, got ", a.reg_max);
  expect_rank(op, "raw", a.raw, 3);
  expect_dtype_in(op, "raw", a.raw, {DType::f16, DType::bf16, DType::f32});
  expect_rows_contiguous(op, "raw", a.raw);
  expect_device(op, "raw", a.raw, backend);
  const int64_t n = a.raw.shape[0], anchors = a.raw.shape[1], nc = a.raw.shape[2] - 4 * int64_t{a.reg_max};
  FK_CHECK(nc >= 1, op, ": raw's last dimension (", a.raw.shape[2], ") must exceed 4 * reg_max (", 4 * a.reg_max,
           ") by the classes");
  expect_rank(op, "anchors", a.anchors, 2);
  expect_dtype(op, "anchors", a.anchors, DType::f32);
  expect_contiguous(op, "anchors", a.anchors);
  expect_device(op, "anchors", a.anchors, backend);
  FK_CHECK(a.anchors.shape[0] == anchors && a.anchors.shape[1] == 3, op, ": anchors must be [", anchors,
           ", 3] (x, y, stride per anchor of raw), got ", describe(a.anchors));
  for (const auto& [name, v, width] : {std::tuple{"boxes", a.boxes, int64_t{4}}, std::tuple{"scores", a.scores, nc}}) {
    expect_rank(op, name, v, 3);
    expect_written_dtype(op, name, v, DType::f32, backend);
    expect_contiguous(op, name, v);
    expect_device(op, name, v, backend);
    FK_CHECK(v.shape[0] == n && v.shape[1] == anchors && v.shape[2] == width, op, ": ", name, " must be [", n, ", ",
             anchors, ", ", width, "], got ", describe(v));
    expect_no_overlap(op, name, v, "raw", a.raw);
    expect_no_overlap(op, name, v, "anchors", a.anchors);
  }
  expect_no_overlap(op, "boxes", a.boxes, "scores", a.scores);
}

}  // namespace fk::ops
