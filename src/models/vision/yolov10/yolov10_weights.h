// A YOLOv10 detector's weights, named as the upstream state dict names them
// ("model.<i>.<submodule>...": Conv's conv.weight and bn.{weight,bias,running_mean,
// running_var,num_batches_tracked}, v10Detect's one2one_cv2 / one2one_cv3 / dfl), turned at
// load into what the forward pass runs: one conv2d call per Conv module, its BatchNorm
// folded in (fold_batch_norm), OIHW permuted to OHWI, RepVGGDW's two depthwise branches
// fused into one 7x7 filter (fuse_parallel_convs), and PSA's qkv projection re-laid out for
// the attention op (below). The training-only tensors (the one-to-many head cv2 / cv3,
// num_batches_tracked, the DFL's fixed arange filter) are declared but not read.
//
// Per block, the calls in order (Yolov10LayerWeights::convs):
//   Conv: [conv]; SCDown: [cv1, cv2]; SPPF: [cv1, cv2];
//   C2f: [cv1, cv2, m.0.cv1, m.0.cv2, m.1.cv1, ...];
//   C2fCIB: [cv1, cv2, m.0.cv1.0 .. m.0.cv1.4, m.1.cv1.0, ...] (cv1.2 the fused RepVGGDW when
//     the block has large kernels);
//   PSA: [cv1, cv2, attn.qkv, attn.proj, attn.pe, ffn.0, ffn.1];
//   v10Detect, per level: [one2one_cv2.l.0, .1, .2, one2one_cv3.l.0.0, .0.1, .1.0, .1.1, .2].
// PSA's qkv: upstream its output channels are per head [q (key_dim), k (key_dim), v
// (head_dim)]; here they are [q of every head, k of every head, v of every head], each head
// head_dim wide, q and k zero-padded from key_dim to head_dim (zero rows and bias: the
// padded lanes add nothing to q . k). The attention op then reads q, k and v as strided
// [tokens, heads, head_dim] views and the positional conv reads v as one channel slice.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vision/yolov10/yolov10_config.h"

namespace fk::models::vision {

// One conv2d call: OHWI weight and bias of the model dtype on the model's device.
struct Yolov10Conv {
  Tensor weight, bias;  // [K, R, S, C / groups], [K]
  int64_t c_in = 0, c_out = 0;
  int kernel = 1, stride = 1, pad = 0, groups = 1;
  bool silu = false;
};

struct Yolov10LayerWeights {
  std::vector<Yolov10Conv> convs;  // in the order above; empty for Upsample and Concat
};

struct Yolov10Weights {
  std::vector<Yolov10LayerWeights> layers;  // one per config layer
};

// PSA's attention geometry: heads of head_dim, q and k of key_dim (before padding).
struct Yolov10Attention {
  int64_t dim = 0, heads = 0, head_dim = 0, key_dim = 0;
};
Yolov10Attention yolov10_attention(const Yolov10Config& c);

// Every tensor of the upstream state dict, upstream names and shapes (f32).
std::vector<TensorDecl> yolov10_weight_decls(const Yolov10Config& c);

// A tensor of the state dict as a host f32 tensor of the declared shape; throws naming a
// missing or mis-shaped tensor.
using Yolov10TensorSource = std::function<Tensor(const std::string& name, const Shape& shape)>;

// The weights read through `source`, transformed as above, in `dtype` on `device`.
Yolov10Weights build_yolov10_weights(const Yolov10Config& c, const Yolov10TensorSource& source, DType dtype,
                                     Device device);
// A source reading a safetensors checkpoint (a file, a folder or a shard index).
Yolov10Weights load_yolov10_weights(const Yolov10Config& c, const std::filesystem::path& path, DType dtype,
                                    Device device);
// A random state dict of every declared tensor (host f32) from Philox(seed): conv filters
// with standard deviation sqrt(1.8 / fan_in) (enough gain through SiLU that the outputs
// still depend on the image after ~40 layers; less decays to the biases), BatchNorm scales near 1, small shifts and means,
// variances in [0.5, 1.5), small biases; the DFL filter its fixed 0..reg_max-1.
std::map<std::string, Tensor> random_yolov10_state_dict(const Yolov10Config& c, uint64_t seed);
Yolov10Weights random_yolov10_weights(const Yolov10Config& c, uint64_t seed, DType dtype, Device device);

}  // namespace fk::models::vision
