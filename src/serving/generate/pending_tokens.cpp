#include "serving/generate/pending_tokens.h"

#include <cstdint>

#include "fk/status.h"

namespace fk::engine {

void fill_pending_tokens(const TensorView& input_ids, const TensorView& sampled, const TensorView& dst,
                         const TensorView& src, void* stream) {
  FK_CHECK(input_ids.dtype == DType::i32 && sampled.dtype == DType::i64 && dst.dtype == DType::i32 &&
               src.dtype == DType::i32 && dst.shape[0] == src.shape[0],
           "fill_pending_tokens: expects input_ids i32, sampled i64 and dst, src i32 of one length");
  if (dst.shape[0] == 0) return;
  if (input_ids.device.type != DeviceType::cpu) return fill_pending_tokens_cuda(input_ids, sampled, dst, src, stream);
  auto* ids = static_cast<int32_t*>(input_ids.data);
  const auto* drawn = static_cast<const int64_t*>(sampled.data);
  const auto* d = static_cast<const int32_t*>(dst.data);
  const auto* s = static_cast<const int32_t*>(src.data);
  for (int64_t j = 0; j < dst.shape[0]; ++j) {
    if (d[j] < 0) continue;
    FK_CHECK(d[j] < input_ids.shape[0] && s[j] >= 0 && s[j] < sampled.shape[0], "fill_pending_tokens: entry ", j,
             " copies sampled[", s[j], "] to input_ids[", d[j], "], outside [", sampled.shape[0], "] / [",
             input_ids.shape[0], "]");
    ids[d[j]] = static_cast<int32_t>(drawn[s[j]]);
  }
}

}  // namespace fk::engine
