// One convolution of a vision model's forward through the registry's conv2d: the folded
// weight and bias, the geometry and the epilogue (activation, then an optional residual).
#pragma once
#include "fk/op_registry.h"
#include "fk/ops/conv.h"

namespace fk::models::vision {

inline void call_conv2d(const TensorView& weight, const TensorView& bias, int stride, int pad, int groups,
                        ops::ConvActivation activation, const TensorView& in, const TensorView& out, DeviceType be,
                        void* stream, const TensorView& residual = TensorView{}) {
  ops::Conv2dArgs a{};
  a.out = out;
  a.input = in;
  a.weight = weight;
  a.bias = bias;
  a.residual = residual;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.groups = groups;
  a.activation = activation;
  call_op(a, be, stream);
}

}  // namespace fk::models::vision
