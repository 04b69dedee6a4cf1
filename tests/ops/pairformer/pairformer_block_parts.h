// The Pairformer block written out as its seven part calls (AlphaFold3 Algorithm 17), each
// with workspace tensors of its own, for tests that hold pairformer_block or the OpenFold3
// model to the parts: through the registry's active implementations (the baseline's
// calls), or each part's CPU baseline on f64 single / pair (its double-precision reference).
#pragma once
#include <cstdint>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer_block.h"
#include "fk/tensor.h"

namespace fk::test {

enum class PartsPath : uint8_t {
  registry,        // call_op on `backend`: the parts' active implementations
  cpu_references,  // the parts' CPU baselines (single and pair must be f64)
};

// One block on single [B, N, Cs] and pair [B, N, N, Cz] in place; masks may be empty views.
// Workspace tensors are of the weights' dtype on the pair's device.
inline void run_pairformer_block_parts(const TensorView& single, const TensorView& pair, const TensorView& single_mask,
                                       const TensorView& pair_mask, const ops::PairformerBlockWeights& w,
                                       int64_t tri_heads, int64_t single_heads, PartsPath path,
                                       void* stream = nullptr) {
  const DType dt = w.tri_mul_out.in_weight.dtype;
  const Device dev = pair.device;
  const int64_t B = pair.shape[0], N = pair.shape[1], Cz = pair.shape[3], Cs = single.shape[2];
  auto ws = [&](const Shape& s) { return Tensor::empty(s, dt, dev); };
  auto call = [&](const char* name, const void* args) {
    if (path == PartsPath::registry) {
      OpRegistry::global().call(name, dev.type, args, stream);
      return;
    }
    const fk_op_fn ref = OpRegistry::global().baseline(name, DeviceType::cpu);
    FK_CHECK(ref != nullptr && ref(args, nullptr) == FK_OK, name, " reference failed: ", last_error_message());
  };
  for (int incoming = 0; incoming < 2; ++incoming) {
    const ops::TriangleMultiplicationWeights& tw = incoming ? w.tri_mul_in : w.tri_mul_out;
    const int64_t C = tw.out_weight.shape[1];
    Tensor t0 = ws({B, N, N, Cz}), t1 = ws({B, N, N, 4 * C + Cz}), t2 = ws({B, C, N, N}), t3 = ws({B, C, N, N}),
           t4 = ws({B, N, N, C}), t5 = ws({B, N, N, Cz});
    ops::TriangleMultiplicationArgs a{};
    a.pair = pair, a.mask = pair_mask, a.w = tw;
    a.normed = t0, a.projected = t1, a.left = t2, a.right = t3, a.product = t4, a.update = t5;
    a.incoming = incoming;
    call(a.kName, &a);
  }
  for (int ending = 0; ending < 2; ++ending) {
    const ops::TriangleAttentionWeights& tw = ending ? w.tri_att_end : w.tri_att_start;
    const int64_t H = tri_heads, D = tw.out_weight.shape[1] / tri_heads;
    Tensor t0 = ws({B, N, N, Cz}), t1 = ws({B, N, N, 4 * H * D}), q = ws({B * N, N, H, D}), k = ws({B * N, N, H, D}),
           v = ws({B * N, N, H, D}), bias = ws({B, H, N, N}), attn = ws({B * N, N, H, D}), gated = ws({B, N, N, H * D}),
           update = ws({B, N, N, Cz});
    ops::TriangleAttentionArgs a{};
    a.pair = pair, a.mask = pair_mask, a.w = tw;
    a.normed = t0, a.qkvg = t1, a.q = q, a.k = k, a.v = v, a.bias = bias, a.attn = attn, a.gated = gated;
    a.update = update;
    a.num_heads = static_cast<int32_t>(H);
    a.ending = ending;
    call(a.kName, &a);
  }
  auto transition = [&](const TensorView& x, int64_t rows, int64_t c, const ops::TransitionWeights& tw) {
    const int64_t f = tw.out_weight.shape[1];
    Tensor t0 = ws({rows, c}), t1 = ws({rows, 2 * f}), t2 = ws({rows, f}), t3 = ws({rows, c});
    ops::TransitionArgs a{};
    a.x = make_view(x.data, {rows, c}, x.dtype, x.device);
    a.w = tw;
    a.normed = t0, a.hidden = t1, a.act = t2, a.update = t3;
    call(a.kName, &a);
  };
  transition(pair, B * N * N, Cz, w.pair_transition);
  {
    const int64_t H = single_heads, D = w.attn_pair_bias.out_weight.shape[1] / single_heads;
    Tensor ns = ws({B, N, Cs}), np = ws({B, N, N, Cz}), q = ws({B, N, H, D}), kvg = ws({B, N, 3 * H * D}),
           k = ws({B, N, H, D}), v = ws({B, N, H, D}), g = ws({B, N, H, D}), bias = ws({B, H, N, N}),
           attn = ws({B, N, H, D}), update = ws({B, N, Cs});
    // The references read z as an input in the weights' dtype: the f64 pair rounded to it.
    Tensor rounded;
    if (path == PartsPath::cpu_references) {
      rounded = Tensor::empty({B, N, N, Cz}, dt);
      for (int64_t i = 0; i < rounded.numel(); ++i)
        store_element(static_cast<char*>(rounded.data()) + i * rounded.view().element_size(), dt,
                      load_element(static_cast<const char*>(pair.data) + i * pair.element_size(), pair.dtype));
    }
    ops::SingleAttentionPairBiasArgs a{};
    a.single = single, a.pair = rounded.defined() ? rounded.view() : pair, a.mask = single_mask;
    a.w = w.attn_pair_bias;
    a.normed_single = ns, a.normed_pair = np, a.q = q, a.kvg = kvg, a.k = k, a.v = v, a.g = g, a.bias = bias;
    a.attn = attn, a.update = update;
    a.num_heads = static_cast<int32_t>(H);
    call(a.kName, &a);
  }
  transition(single, B * N, Cs, w.single_transition);
}

}  // namespace fk::test
