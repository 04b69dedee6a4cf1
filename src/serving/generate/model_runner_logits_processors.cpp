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
#include "fk/runtime.h"
#include "fk/ops/sampling.h"
#include "runtime/device.h"
#include "runtime/views.h"
#include "serving/generate/model_runner.h"
#include "serving/generate/pending_tokens.h"

namespace fk::engine {

struct ModelRunner::LogitsProcessorBuffers {
  Tensor processed, counts;  // [rows, V] f32 and i32, grown as needed
  // The step's packed lists, 4-byte words (i32 ids and offsets, f32 biases and penalties),
  // uploaded in one stream-ordered copy: written on the stream after the previous steps'
  // reads of them. The host side alternates between two pinned buffers, each rewritten only
  // once its copy (two launches back, so long collected) is done.
  Tensor lists;
  Tensor staging[2];
  std::unique_ptr<StreamEvent> staged[2];
  int next = 0;
};

namespace {

// The step's lists as one run of words, and where each list starts in it.
class ListWords {
 public:
  template <class T>
  int64_t add(const std::vector<T>& v) {
    static_assert(sizeof(T) == 4);
    const auto at = static_cast<int64_t>(words_.size());
    words_.resize(words_.size() + v.size());
    if (!v.empty()) std::memcpy(words_.data() + at, v.data(), v.size() * 4);
    return at;
  }
  const std::vector<uint32_t>& words() const { return words_; }

 private:
  std::vector<uint32_t> words_;
};

// Words [at, at + n) of the uploaded lists as a 1-D view of `dtype` (4-byte).
TensorView list_view(const Tensor& lists, int64_t at, size_t n, DType dtype) {
  TensorView v = row_range(lists, at, static_cast<int64_t>(n));
  v.dtype = dtype;
  return v;
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

  ListWords w;
  const int64_t at_bias_ids = w.add(bias_ids), at_bias = w.add(bias), at_bias_indptr = w.add(bias_indptr),
                at_tokens = w.add(tokens), at_token_indptr = w.add(token_indptr), at_prompt_len = w.add(prompt_len),
                at_word_tokens = w.add(word_tokens), at_word_indptr = w.add(word_indptr),
                at_row_words = w.add(row_words), at_rep = w.add(rep), at_freq = w.add(freq), at_pres = w.add(pres),
                at_fill_dst = w.add(fill_dst), at_fill_src = w.add(fill_src);
  const auto n_words = static_cast<int64_t>(w.words().size());

  const bool cuda = backend_ == DeviceType::cuda;
  if (!processors_) {
    processors_ = std::make_shared<LogitsProcessorBuffers>();
    for (auto& e : processors_->staged) e = std::make_unique<StreamEvent>(cuda);
  }
  LogitsProcessorBuffers& pb = *processors_;
  const Device dev = logits.device;
  const int k = pb.next;
  pb.next ^= 1;
  pb.staged[k]->wait();
  if (!pb.staging[k].defined() || pb.staging[k].numel() < n_words) {
    const int64_t cap = std::max<int64_t>(n_words, 4096);
    pb.staging[k] = cuda ? Tensor::empty_pinned({cap}, DType::i32) : Tensor::empty({cap}, DType::i32);
  }
  std::memcpy(pb.staging[k].data(), w.words().data(), static_cast<size_t>(n_words) * 4);
  if (!pb.lists.defined() || pb.lists.numel() < n_words)
    pb.lists = Tensor::empty({std::max<int64_t>(n_words, 4096)}, DType::i32, dev, stream_);
  rt::memcpy_async(pb.lists.data(), dev, pb.staging[k].data(), Device::cpu(), static_cast<size_t>(n_words) * 4,
                   stream_);
  pb.staged[k]->record(stream_);
  auto i32 = [&](int64_t at, size_t n) { return list_view(pb.lists, at, n, DType::i32); };
  auto f32 = [&](int64_t at, size_t n) { return list_view(pb.lists, at, n, DType::f32); };

  if (!pb.processed.defined() || pb.processed.size(0) < R || pb.processed.size(1) != V)
    pb.processed = Tensor::empty({R, V}, DType::f32, dev, stream_);
  const TensorView out = first_rows(pb.processed, R);
  call_op(ops::ApplyLogitBiasArgs{out, logits, i32(at_bias_ids, bias_ids.size()), f32(at_bias, bias.size()),
                                  i32(at_bias_indptr, bias_indptr.size())},
          backend_, stream_);
  if (tokens.empty() && word_tokens.empty()) return out;

  const TensorView tok = i32(at_tokens, tokens.size()), tok_indptr = i32(at_token_indptr, token_indptr.size()),
                   plen = i32(at_prompt_len, prompt_len.size());
  if (!fill_dst.empty())
    fill_pending_tokens(tok, sampled_, i32(at_fill_dst, fill_dst.size()), i32(at_fill_src, fill_src.size()), stream_);
  if (!word_tokens.empty())
    call_op(ops::ApplyBadWordsArgs{out, tok, tok_indptr, plen, i32(at_word_tokens, word_tokens.size()),
                                   i32(at_word_indptr, word_indptr.size()), i32(at_row_words, row_words.size())},
            backend_, stream_);
  if (penalties) {
    if (!pb.counts.defined() || pb.counts.size(0) < R || pb.counts.size(1) != V)
      pb.counts = Tensor::empty({R, V}, DType::i32, dev, stream_);
    call_op(ops::ApplyPenaltiesArgs{out, tok, tok_indptr, plen, f32(at_rep, rep.size()), f32(at_freq, freq.size()),
                                    f32(at_pres, pres.size()), first_rows(pb.counts, R)},
            backend_, stream_);
  }
  return out;
}

}  // namespace fk::engine
