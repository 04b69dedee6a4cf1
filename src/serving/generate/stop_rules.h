// When a request stops generating: checked each time a sampled token is appended.
#pragma once
#include "serving/generate/request.h"

namespace fk::engine {

// Why appending r's last output token finishes r, or FinishReason::none. Stop tokens win over
// length limits: once r has params.min_tokens outputs, a token in eos_token_ids (unless
// params.ignore_eos) or in params.stop_token_ids finishes it with reason stop (the token is
// kept); otherwise reaching params.max_tokens outputs, or max_model_len tokens in all (when
// set), finishes it with reason length.
FinishReason stop_reason(const Request& r);

}  // namespace fk::engine
