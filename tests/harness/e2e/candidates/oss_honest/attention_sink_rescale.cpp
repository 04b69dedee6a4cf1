// expect: PASSED
// A plain CPU attention sink rescale: inside gpt-oss's engine it runs in every layer,
// reached through gpt_oss_layer's parts, and must agree with the baseline token for token.
// oss_sink_flipped/ compiles this file with FLIP_SINK_SIGN: the sink logit enters with the
// wrong sign (a sink that adds to the attention instead of draining it).
#include <cmath>
#include <cstring>

#include "fk/dtype_convert.h"
#include "fk/ops/attention_sink.h"

namespace {

#ifdef FLIP_SINK_SIGN
constexpr double kSinkSign = -1.0;
#else
constexpr double kSinkSign = 1.0;
#endif

double load(fk::DType t, const void* p) {
  if (t == fk::DType::f32) return *static_cast<const float*>(p);
  uint16_t b;
  std::memcpy(&b, p, 2);
  return t == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
void store(fk::DType t, void* p, double x) {
  const float f = static_cast<float>(x);
  if (t == fk::DType::f32) {
    std::memcpy(p, &f, 4);
    return;
  }
  const uint16_t b = t == fk::DType::bf16 ? fk::float_to_bf16(f) : fk::float_to_f16(f);
  std::memcpy(p, &b, 2);
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::AttentionSinkRescaleArgs*>(raw);
  const int64_t T = a.out.shape[0], H = a.out.shape[1], D = a.out.shape[2], es = a.out.element_size();
  const auto* lse = static_cast<const float*>(a.lse.data);
  const auto* sinks = static_cast<const float*>(a.sinks.data);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      // out * S / (S + e^sink) with S = 2^lse; a row that saw no key stays zero.
      const double z = lse[t * H + h] * std::log(2.0) - kSinkSign * sinks[h];
      const double scale = std::isfinite(z) ? 1.0 / (1.0 + std::exp(-z)) : 0.0;
      char* row = static_cast<char*>(a.out.data) + (t * a.out.strides[0] + h * a.out.strides[1]) * es;
      for (int64_t d = 0; d < D; ++d) store(a.out.dtype, row + d * es, load(a.out.dtype, row + d * es) * scale);
    }
  return FK_OK;
}

}  // namespace

FK_EXPORT_CANDIDATE(attention_sink_rescale, run)
