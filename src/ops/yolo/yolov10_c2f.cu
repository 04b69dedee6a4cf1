// yolov10_c2f's CUDA baseline: its convolutions' CUDA baselines through the registry
// (yolov10_c2f_composed.cpp). A fused candidate keeps the block's intermediates on chip.
#include "fk/op_registry.h"
#include "ops/yolo/yolov10_c2f_composed.h"

namespace fk::ops {
namespace {

FK_REGISTER_IMPL("yolov10_c2f", cuda, yolov10_c2f_composed_cuda);

}  // namespace
}  // namespace fk::ops
