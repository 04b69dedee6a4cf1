#include "ops/layer/gpt_oss_layer_check.h"

#include <cmath>

#include "fk/element.h"
#include "fk/ops/gpt_oss_layer.h"
#include "ops/common/layer_cost.h"
#include "ops/layer/gpt_oss_layer_reference.h"
#include "ops/layer/moe_layer_routing.h"

namespace fk::ops {
namespace {

using Args = GptOssLayerArgs;

}  // namespace

// Against the oracle (f64 intermediates) an implementation differs by its own roundings, as
// decoder_layer's (decoder_layer_def.cpp): each output gets the dtype's default tolerance
// plus 8 * half-ulp * the typical size of what writes it:
//   k_cache, v_cache: the rows of this step's k and v (the QKV projection of unit-rms rows,
//             plus its bias);
//   residual: o's projection of attention outputs no larger than the values, plus o_bias;
//   hidden:   the experts' down projection of act = (u + 1) g sigmoid(alpha g), with g and u
//             of about sigma = sqrt(H) rms(post_attention_norm) rms(w13) (clamped at the
//             limit), so act ~ (sigma + 1) sigma and a rounding of g moves it by as much.
Tolerance gpt_oss_layer_tolerance(const OpCase& c, const TensorArg& arg, DType dt) {
  Tolerance tol = default_tolerance(dt);
  const auto& a = c.as<Args>();
  const double u = half_rounding_unit(a.input_norm.dtype);
  double scale = 0;
  if (arg.name == "k_cache" || arg.name == "v_cache") {
    scale = std::sqrt(static_cast<double>(a.qkv_weight.shape[1])) * sampled_rms(a.input_norm) *
                sampled_rms(a.qkv_weight) +
            sampled_rms(a.qkv_bias);
  } else if (arg.name == "residual") {
    scale = std::sqrt(static_cast<double>(a.o_weight.shape[1])) * sampled_rms(a.o_weight) + sampled_rms(a.o_bias);
  } else if (arg.name == "hidden") {
    const double sigma = std::min(static_cast<double>(a.swiglu_limit),
                                  std::sqrt(static_cast<double>(a.w13.shape[2])) * sampled_rms(a.post_attention_norm) *
                                          sampled_rms(a.w13) +
                                      sampled_rms(a.w13_bias));
    scale = std::sqrt(static_cast<double>(a.w2.shape[2])) * (sigma + 1) * sigma * sampled_rms(a.w2) +
            sampled_rms(a.w2_bias);
  }
  tol.atol += 8 * u * scale;
  return tol;
}

std::string check_gpt_oss_layer_outputs(const OpCase& host, const OpCase& oracle, const OpCase& actual) {
  return check_moe_layer_outputs<Args>(host, oracle, actual, gpt_oss_layer_tolerance,
                                       gpt_oss_layer_router(host.as<Args>()));
}

}  // namespace fk::ops
