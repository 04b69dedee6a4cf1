// The runner's logits processors: for a step where some request that samples uses
// logit_bias, min_tokens, bad_words or penalties, the registry ops of fk/ops/sampling.h turn
// the step's logit rows into an f32 copy that `sample` draws from (the raw logits stay for
// logprobs, which vLLM also reports before processing). Other steps run none of this.
//
// Per row the host packs the request's parameters and token lists (prompt, then output);
// an output token still pending from the step in flight (asynchronous scheduling) is
// filled in on the device from that step's sampler output, as the step's input ids are.
#include <algorithm>
#include <cstring>
#include <limits>

#include "fk/op_registry.h"
#include "fk/ops/sampling.h"
#include "runtime/views.h"
#include "serving/generate/model_runner.h"
#include "serving/generate/pending_tokens.h"

namespace fk::engine {

struct ModelRunner::LogitsProcessorBuffers {
  Tensor processed, counts;  // [rows, V] f32 and i32, grown as needed
  // The step's packed lists on the device, kept until the next step replaces them.
  Tensor bias_ids, bias, bias_indptr, tokens, token_indptr, prompt_len, word_tokens, word_indptr, row_words, rep,
      freq, pres, fill_dst, fill_src;
};

namespace {

template <class T>
Tensor to_device(const std::vector<T>& v, DType dt, Device dev, void* stream) {
  Tensor host = Tensor::empty({static_cast<int64_t>(v.size())}, dt);
  if (!v.empty()) std::memcpy(host.data(), v.data(), v.size() * sizeof(T));
  if (dev.type == DeviceType::cpu) return host;
  Tensor d = Tensor::empty(host.shape(), dt, dev, stream);
  d.copy_from(host);
  return d;
}

}  // namespace

TensorView ModelRunner::apply_logits_processors(std::span<const StepRequest> step, const TensorView& logits,
                                                bool graph) {
  // The request of each logit row, as launch() assigns them: one row per packed sequence
  // for a graph (padding sequences have none), else the requests that sample, in order.
  const int64_t R = logits.shape[0], V = logits.shape[1];
  std::vector<const Request*> row_request(static_cast<size_t>(R), nullptr);
  bool any = false;
  for (size_t n = 0, row = 0; n < step.size(); ++n) {
    const StepRequest& sr = step[order_.empty() ? n : order_[n]];
    if (!sr.needs_logits) continue;
    const size_t r = graph ? n : row++;
    if (r < row_request.size()) row_request[r] = sr.request;
    any = any || sr.request->params.uses_logits_processors();
  }
  if (!any) return logits;

  std::vector<int32_t> bias_ids, bias_indptr{0}, tokens, token_indptr{0}, prompt_len, word_tokens, word_indptr{0},
      row_words{0}, fill_dst, fill_src;
  std::vector<float> bias, rep, freq, pres;
  bool penalties = false;
  constexpr float kBan = -std::numeric_limits<float>::infinity();
  for (const Request* r : row_request) {
    if (r != nullptr && r->params.uses_logits_processors()) {
      const SamplingParams& p = r->params;
      p.validate_token_ids(V);
      for (const auto& [id, b] : p.logit_bias) {
        bias_ids.push_back(static_cast<int32_t>(id));
        bias.push_back(b);
      }
      // The outputs before the token this step draws (its Philox offset).
      const int64_t outputs = r->sampled_output_index();
      if (outputs < p.min_tokens) {
        auto ban = [&](int64_t id) {
          if (id < 0 || id >= V) return;
          bias_ids.push_back(static_cast<int32_t>(id));
          bias.push_back(kBan);
        };
        if (!p.ignore_eos)
          for (int64_t id : r->eos_token_ids) ban(id);
        for (int64_t id : p.stop_token_ids) ban(id);
      }
      const bool row_penalties = p.repetition_penalty != 1 || p.frequency_penalty != 0 || p.presence_penalty != 0;
      penalties = penalties || row_penalties;
      if (row_penalties || !p.bad_words.empty()) {
        // Bad words read only the output; penalties also the prompt.
        const int64_t first = row_penalties ? 0 : static_cast<int64_t>(r->prompt_tokens.size());
        const int64_t known = r->known_tokens(), pending = r->num_pending_tokens - 1;
        FK_CHECK(pending == 0 || (pending == 1 && last_rows_.count(r)), "model runner: request ", r->id, " has ",
                 pending, " output tokens not yet known at its sampling step");
        for (int64_t i = first; i < known; ++i) tokens.push_back(static_cast<int32_t>(r->token_at(i)));
        if (pending == 1) {
          fill_dst.push_back(static_cast<int32_t>(tokens.size()));
          fill_src.push_back(static_cast<int32_t>(last_rows_.at(r)));
          tokens.push_back(0);
        }
        prompt_len.push_back(static_cast<int32_t>(static_cast<int64_t>(r->prompt_tokens.size()) - first));
      } else {
        prompt_len.push_back(0);
      }
      for (const auto& w : p.bad_words) {
        for (int64_t id : w) word_tokens.push_back(static_cast<int32_t>(id));
        word_indptr.push_back(static_cast<int32_t>(word_tokens.size()));
      }
      rep.push_back(p.repetition_penalty);
      freq.push_back(p.frequency_penalty);
      pres.push_back(p.presence_penalty);
    } else {
      prompt_len.push_back(0);
      rep.push_back(1.f);
      freq.push_back(0.f);
      pres.push_back(0.f);
    }
    bias_indptr.push_back(static_cast<int32_t>(bias_ids.size()));
    token_indptr.push_back(static_cast<int32_t>(tokens.size()));
    row_words.push_back(static_cast<int32_t>(word_indptr.size() - 1));
  }

  if (!processors_) processors_ = std::make_shared<LogitsProcessorBuffers>();
  LogitsProcessorBuffers& pb = *processors_;
  const Device dev = logits.device;
  if (!pb.processed.defined() || pb.processed.size(0) < R || pb.processed.size(1) != V)
    pb.processed = Tensor::empty({R, V}, DType::f32, dev, stream_);
  pb.bias_ids = to_device(bias_ids, DType::i32, dev, stream_);
  pb.bias = to_device(bias, DType::f32, dev, stream_);
  pb.bias_indptr = to_device(bias_indptr, DType::i32, dev, stream_);
  const TensorView out = first_rows(pb.processed, R);
  call_op(ops::ApplyLogitBiasArgs{out, logits, pb.bias_ids, pb.bias, pb.bias_indptr}, backend_, stream_);
  if (tokens.empty() && word_tokens.empty()) return out;

  pb.tokens = to_device(tokens, DType::i32, dev, stream_);
  pb.token_indptr = to_device(token_indptr, DType::i32, dev, stream_);
  pb.prompt_len = to_device(prompt_len, DType::i32, dev, stream_);
  if (!fill_dst.empty()) {
    pb.fill_dst = to_device(fill_dst, DType::i32, dev, stream_);
    pb.fill_src = to_device(fill_src, DType::i32, dev, stream_);
    fill_pending_tokens(pb.tokens, sampled_, pb.fill_dst, pb.fill_src, stream_);
  }
  if (!word_tokens.empty()) {
    pb.word_tokens = to_device(word_tokens, DType::i32, dev, stream_);
    pb.word_indptr = to_device(word_indptr, DType::i32, dev, stream_);
    pb.row_words = to_device(row_words, DType::i32, dev, stream_);
    call_op(ops::ApplyBadWordsArgs{out, pb.tokens, pb.token_indptr, pb.prompt_len, pb.word_tokens, pb.word_indptr,
                                   pb.row_words},
            backend_, stream_);
  }
  if (penalties) {
    if (!pb.counts.defined() || pb.counts.size(0) < R || pb.counts.size(1) != V)
      pb.counts = Tensor::empty({R, V}, DType::i32, dev, stream_);
    pb.rep = to_device(rep, DType::f32, dev, stream_);
    pb.freq = to_device(freq, DType::f32, dev, stream_);
    pb.pres = to_device(pres, DType::f32, dev, stream_);
    call_op(ops::ApplyPenaltiesArgs{out, pb.tokens, pb.token_indptr, pb.prompt_len, pb.rep, pb.freq, pb.pres,
                                    first_rows(pb.counts, R)},
            backend_, stream_);
  }
  return out;
}

}  // namespace fk::engine
