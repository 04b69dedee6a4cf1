// yolov10_c2f: argument checks, the composed baseline (conv2d calls through the registry)
// and the double-precision reference.
#pragma once
#include "fk/op.h"
#include "fk/ops/yolo.h"

namespace fk::ops {

void validate_yolov10_c2f(const Yolov10C2fArgs& a, DeviceType backend);
fk_status yolov10_c2f_composed_cpu(const void* args, void* stream);
fk_status yolov10_c2f_composed_cuda(const void* args, void* stream);
// Every intermediate in double; writes out in its dtype (f64 for the oracle).
void yolov10_c2f_reference(const Yolov10C2fArgs& a);

}  // namespace fk::ops
