#include "serving/generate/model_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "serving/generate/pending_tokens.h"
#include "serving/generate/step_image_features.h"
#include "runtime/views.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/ops/sampling.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::engine {

namespace {

std::vector<int64_t> default_graph_sizes(int64_t max_seqs) {
  std::vector<int64_t> s;
  for (int64_t b : {1, 2, 4, 8})
    if (b <= max_seqs) s.push_back(b);
  for (int64_t b = 16; b <= max_seqs; b += 16) s.push_back(b);
  return s;
}

// Bytes the step arena needs for the largest step: T tokens, B sequences (and as many logit
// rows), a page table of P pages per sequence.
size_t arena_capacity(int64_t T, int64_t B, int64_t P) {
  auto a = [](int64_t n, size_t size) { return StepArena::padded_bytes(n, size); };
  return a(T, 4) + 2 * a(T, 8)                           // input_ids, positions, slot_mapping
         + 4 * a(B + 1, 4) + a(B, 4)                      // qo/kv indptr (and the prefill part's), last page lens
         + 4 * a(B, 4) + a(B, 4) + 2 * a(B, 8)            // logits_indices, temperature, top_k, top_p, min_p, seed, offset
         + 2 * a(B, 4)                                    // fill_dst, fill_src
         + 3 * a(B, 4)                                    // state slots and flags (recurrent models)
         + a(B * P, 4);                                   // kv_indices
}

}  // namespace

void ModelRunner::HostBatch::clear() {
  for (auto* v : {&input_ids, &qo_indptr, &kv_indptr, &kv_indices, &kv_last_page_len, &logits_indices, &top_k,
                  &prefill_qo_indptr, &prefill_kv_indptr, &fill_dst, &fill_src, &state_slots, &has_initial_state})
    v->clear();
  has_initial_state_bool.clear();
  mrope.clear();
  image_spans.clear();
  num_decode_seqs = 0;
  num_fills = 0;
  for (auto* v : {&positions, &slot_mapping, &seed, &offset}) v->clear();
  for (auto* v : {&temperature, &top_p, &min_p}) v->clear();
}

ModelRunner::ModelRunner(DecoderModel& model, KvCache& kv, RunnerConfig config, void* stream)
    : model_(model), kv_(kv), config_(std::move(config)), stream_(stream), backend_(model.device().type) {
  FK_CHECK(config_.max_tokens > 0 && config_.max_seqs > 0 && config_.max_pages_per_seq > 0,
           "model runner: max_tokens, max_seqs and max_pages_per_seq must be positive");
  if (backend_ == DeviceType::cuda && config_.cuda_graphs) {
    graph_sizes_ = config_.graph_batch_sizes.empty() ? default_graph_sizes(config_.max_seqs) : config_.graph_batch_sizes;
    std::sort(graph_sizes_.begin(), graph_sizes_.end());
    for (int64_t b : graph_sizes_)
      FK_CHECK(b > 0 && b <= config_.max_seqs && b <= config_.max_tokens, "graph batch size ", b,
               " must be in [1, min(max_seqs, max_tokens)]");
  }
  const Device dev = model.device();
  const int64_t T = config_.max_tokens, B = config_.max_seqs;
  auto host_buf = [&](int64_t n, DType t) { return Tensor::zeros({n}, t); };
  arena_ = StepArena(arena_capacity(T, B, config_.max_pages_per_seq), dev, backend_ == DeviceType::cuda, stream);
  qo_indptr_host_ = host_buf(B + 1, DType::i32);
  kv_indptr_host_ = host_buf(B + 1, DType::i32);
  kv_last_page_len_host_ = host_buf(B, DType::i32);
  prefill_qo_indptr_host_ = host_buf(B + 1, DType::i32);
  prefill_kv_indptr_host_ = host_buf(B + 1, DType::i32);
  recurrent_ = model.spec().has_recurrent_state();
  if (recurrent_) state_slots_host_ = host_buf(B, DType::i32);
  sampled_ = Tensor::zeros({B}, DType::i64, dev, stream);
  const bool cuda = backend_ == DeviceType::cuda;
  for (int i = 0; i < 2; ++i) {
    sampled_host_[i] = cuda ? Tensor::empty_pinned({B}, DType::i64) : Tensor::zeros({B}, DType::i64);
    sampled_ready_[i] = std::make_unique<StreamEvent>(cuda);
  }
  inputs_consumed_ = std::make_unique<StreamEvent>(cuda);
  mrope_ = !model.spec().config.mrope_section.empty();
  if (mrope_) {
    mrope_host_ = cuda ? Tensor::empty_pinned({3, T}, DType::i64) : Tensor::zeros({3, T}, DType::i64);
    mrope_dev_ = cuda ? Tensor::zeros({3, T}, DType::i64, dev, stream) : mrope_host_;
  }
}

void ModelRunner::wait() const {
  // The CPU backend runs synchronously (and a CUDA build may have no driver at all).
  if (backend_ == DeviceType::cuda) rt::stream_synchronize(stream_);
}

int64_t ModelRunner::graph_size_for(int64_t seqs) const {
  for (int64_t b : graph_sizes_)
    if (b >= seqs && graphs_.count({b, captured_grids().first})) return b;
  return 0;
}

std::pair<int32_t, int32_t> ModelRunner::captured_grids() const {
  if (config_.decode_graph_grid > 0) return {config_.decode_graph_grid, config_.decode_graph_grid};
  return {1, ops::kDecodeGraphGrids};
}

int32_t ModelRunner::graph_grid_for_packed_batch() const {
  if (config_.decode_graph_grid > 0) return config_.decode_graph_grid;
  const std::vector<int32_t>& indptr = host_.kv_indptr;
  std::vector<int32_t> pages(indptr.size() - 1);
  for (size_t i = 0; i + 1 < indptr.size(); ++i) pages[i] = indptr[i + 1] - indptr[i];
  return ops::decode_graph_grid(pages.data(), static_cast<int64_t>(pages.size()), kv_.page_size(),
                                model_.spec().config.num_key_value_heads, sm_count_);
}

void ModelRunner::pack(std::span<const StepRequest> step, int64_t padded_seqs, std::span<const size_t> order,
                       bool split_decodes) {
  HostBatch& h = host_;
  h.clear();
  const int64_t S = kv_.page_size();
  h.qo_indptr.push_back(0);
  h.kv_indptr.push_back(0);
  auto add_logit_row = [&](int64_t row, const Request* r) {
    h.logits_indices.push_back(static_cast<int32_t>(row));
    const SamplingParams* p = r ? &r->params : nullptr;
    h.temperature.push_back(p ? p->temperature : 0.0f);  // padding rows: greedy, ignored
    h.top_k.push_back(p ? p->top_k : 0);
    h.top_p.push_back(p ? p->top_p : 1.0f);
    h.min_p.push_back(p ? p->min_p : 0.0f);
    h.seed.push_back(r ? static_cast<int64_t>(r->seed) : 0);
    // The request's step: its n-th output token uses Philox offset n, so a request draws
    // the same tokens alone, in any batch and after a preemption.
    h.offset.push_back(r ? std::max<int64_t>(r->sampled_output_index(), 0) : 0);
  };
  // A step that computes prompt tokens of an image request rotates every token by its
  // M-RoPE positions (three equal rows for text); other steps by the 1-D positions, which
  // for an image request's later tokens carry its rope delta.
  std::vector<int64_t> mrope_rows[3];
  const bool mrope = std::any_of(step.begin(), step.end(), [](const StepRequest& sr) {
    return sr.request->images && sr.start < static_cast<int64_t>(sr.request->prompt_tokens.size());
  });
  for (size_t n = 0; n < step.size(); ++n) {
    const StepRequest& sr = step[order.empty() ? n : order[n]];
    const Request& r = *sr.request;
    FK_CHECK(!r.images || image_encoder_, "model runner: request ", r.id, " brings images, but the model reads none");
    if (r.images && sr.start < r.images->image_tokens_end)
      h.image_spans.push_back({r.images.get(), static_cast<int64_t>(h.input_ids.size()), sr.start, sr.count});
    FK_CHECK(sr.count > 0 && sr.start >= 0 && sr.start + sr.count <= r.total_tokens(), "model runner: request ",
             r.id, " schedules tokens [", sr.start, ", ", sr.start + sr.count, ") of ", r.total_tokens());
    const int64_t kv_len = sr.start + sr.count;
    const int64_t pages = (kv_len + S - 1) / S;
    FK_CHECK(static_cast<int64_t>(r.block_ids.size()) >= pages, "model runner: request ", r.id, " has ",
             r.block_ids.size(), " KV blocks for ", kv_len, " tokens");
    FK_CHECK(pages <= config_.max_pages_per_seq, "model runner: request ", r.id, " needs ", pages,
             " pages, more than max_pages_per_seq ", config_.max_pages_per_seq);
    for (int64_t i = sr.start; i < kv_len; ++i) {
      const int64_t token = r.token_at(i);
      if (token == Request::kPendingToken) {
        // Sampled by the step in flight: filled in on the device (pending_tokens.h).
        const auto row = last_rows_.find(&r);
        FK_CHECK(i == r.known_tokens() && row != last_rows_.end(), "model runner: request ", r.id, " position ", i,
                 " waits for a token the previous launch did not sample");
        h.fill_dst.push_back(static_cast<int32_t>(h.input_ids.size()));
        h.fill_src.push_back(static_cast<int32_t>(row->second));
      }
      h.input_ids.push_back(static_cast<int32_t>(token == Request::kPendingToken ? 0 : token));
      const RequestImages* im = r.images.get();
      const int64_t P = static_cast<int64_t>(r.prompt_tokens.size());
      const int64_t pos = im == nullptr ? i : i < P ? im->mrope_positions[static_cast<size_t>(i)] : i + im->rope_delta;
      h.positions.push_back(pos);
      if (mrope)
        for (int a = 0; a < 3; ++a)
          mrope_rows[a].push_back(im && i < P ? im->mrope_positions[static_cast<size_t>(a * P + i)] : pos);
      h.slot_mapping.push_back(int64_t{r.block_ids[static_cast<size_t>(i / S)]} * S + i % S);
    }
    if (recurrent_) {
      FK_CHECK(r.state_slot >= 0, "model runner: request ", r.id,
               " holds no recurrent state slot (the scheduler gives one to every running request of this model)");
      h.state_slots.push_back(r.state_slot);
      // A step from position 0 starts from zeros; a later chunk or decode from the slot.
      h.has_initial_state.push_back(sr.start > 0 ? 1 : 0);
      h.has_initial_state_bool.push_back(sr.start > 0 ? 1 : 0);
    }
    for (int64_t p = 0; p < pages; ++p) h.kv_indices.push_back(r.block_ids[static_cast<size_t>(p)]);
    h.kv_indptr.push_back(static_cast<int32_t>(h.kv_indices.size()));
    h.kv_last_page_len.push_back(static_cast<int32_t>(kv_len - (pages - 1) * S));
    h.qo_indptr.push_back(static_cast<int32_t>(h.input_ids.size()));
  }
  for (auto& row : mrope_rows) h.mrope.insert(h.mrope.end(), row.begin(), row.end());
  // Padding sequences of a captured graph: one token on the spare page, written nowhere.
  for (int64_t i = static_cast<int64_t>(step.size()); i < padded_seqs; ++i) {
    h.input_ids.push_back(0);
    h.positions.push_back(0);
    h.slot_mapping.push_back(-1);
    h.kv_indices.push_back(static_cast<int32_t>(padding_page()));
    h.kv_indptr.push_back(static_cast<int32_t>(h.kv_indices.size()));
    h.kv_last_page_len.push_back(1);
    h.qo_indptr.push_back(static_cast<int32_t>(h.input_ids.size()));
    if (recurrent_) {  // no slot: the state ops read zeros for it and write nothing
      h.state_slots.push_back(-1);
      h.has_initial_state.push_back(0);
      h.has_initial_state_bool.push_back(0);
    }
  }
  if (padded_seqs > 0) {
    // A graph computes a logit row for every (padded) sequence; only the wanted ones are sampled.
    for (int64_t i = 0; i < padded_seqs; ++i)
      add_logit_row(h.qo_indptr[static_cast<size_t>(i) + 1] - 1,
                    i < static_cast<int64_t>(step.size()) && step[static_cast<size_t>(i)].needs_logits
                        ? step[static_cast<size_t>(i)].request
                        : nullptr);
  } else {
    for (size_t n = 0; n < step.size(); ++n) {
      const StepRequest& sr = step[order.empty() ? n : order[n]];
      if (sr.needs_logits) add_logit_row(h.qo_indptr[n + 1] - 1, sr.request);
    }
    if (h.logits_indices.empty()) add_logit_row(0, nullptr);  // a step of partial prefills: one unused row
  }
  h.num_fills = static_cast<int64_t>(h.fill_dst.size());
  h.fill_dst.resize(h.kv_last_page_len.size(), -1);
  h.fill_src.resize(h.kv_last_page_len.size(), -1);
  if (split_decodes) {
    // The leading single-token sequences are the decode part; the rest, rebased, the prefill part.
    const size_t B = h.kv_last_page_len.size();
    size_t D = 0;
    while (D < B && h.qo_indptr[D + 1] - h.qo_indptr[D] == 1) ++D;
    if (D > 0 && D < B) {
      h.num_decode_seqs = static_cast<int64_t>(D);
      for (size_t i = D; i <= B; ++i) {
        h.prefill_qo_indptr.push_back(h.qo_indptr[i] - h.qo_indptr[D]);
        h.prefill_kv_indptr.push_back(h.kv_indptr[i] - h.kv_indptr[D]);
      }
    }
  }
}

ForwardBatch ModelRunner::upload(bool decode_only) {
  const HostBatch& h = host_;
  const int64_t T = static_cast<int64_t>(h.input_ids.size()), B = static_cast<int64_t>(h.kv_last_page_len.size());
  FK_CHECK(T <= config_.max_tokens && B <= config_.max_seqs, "model runner: a step of ", T, " tokens and ", B,
           " requests exceeds the limits (", config_.max_tokens, " tokens, ", config_.max_seqs, " requests)");
  // The order of place() calls is the arena's layout: fixed, so that a padded decode batch
  // finds its arrays where its graph was captured. The page table goes last (variable length).
  StepViews& v = views_;
  arena_.begin();
  v.input_ids = arena_.place(h.input_ids, DType::i32);
  v.positions = arena_.place(h.positions, DType::i64);
  v.slot_mapping = arena_.place(h.slot_mapping, DType::i64);
  v.logits_indices = arena_.place(h.logits_indices, DType::i32);
  v.qo_indptr = arena_.place(h.qo_indptr, DType::i32);
  v.kv_indptr = arena_.place(h.kv_indptr, DType::i32);
  v.kv_last_page_len = arena_.place(h.kv_last_page_len, DType::i32);
  v.prefill_qo_indptr = arena_.place(h.prefill_qo_indptr, DType::i32);
  v.prefill_kv_indptr = arena_.place(h.prefill_kv_indptr, DType::i32);
  v.temperature = arena_.place(h.temperature, DType::f32);
  v.top_k = arena_.place(h.top_k, DType::i32);
  v.top_p = arena_.place(h.top_p, DType::f32);
  v.min_p = arena_.place(h.min_p, DType::f32);
  v.seed = arena_.place(h.seed, DType::i64);
  v.offset = arena_.place(h.offset, DType::i64);
  v.fill_dst = arena_.place(h.fill_dst, DType::i32);
  v.fill_src = arena_.place(h.fill_src, DType::i32);
  if (recurrent_) {
    FK_CHECK(static_cast<int64_t>(h.state_slots.size()) == B, "model runner: ", h.state_slots.size(),
             " state slots for ", B, " sequences (a padding sequence has slot -1)");
    v.state_slots = arena_.place(h.state_slots, DType::i32);
    v.has_initial_state = arena_.place(h.has_initial_state, DType::i32);
    v.has_initial_state_bool = arena_.place(h.has_initial_state_bool, DType::boolean);
    std::memcpy(state_slots_host_.data(), h.state_slots.data(), h.state_slots.size() * sizeof(int32_t));
  }
  v.kv_indices = arena_.place_last(h.kv_indices, DType::i32);
  arena_.upload(stream_);
  TensorView mrope;
  if (!h.mrope.empty()) {
    FK_CHECK(mrope_, "model runner: a step with M-RoPE positions for a model without M-RoPE");
    const int64_t cap = mrope_host_.size(1);
    auto* host = static_cast<int64_t*>(mrope_host_.data());
    for (int a = 0; a < 3; ++a)
      std::memcpy(host + a * cap, h.mrope.data() + a * T, static_cast<size_t>(T) * sizeof(int64_t));
    if (mrope_dev_.data() != mrope_host_.data())
      rt::memcpy_async(mrope_dev_.data(), mrope_dev_.device(), host, Device::cpu(),
                       static_cast<size_t>(3 * cap) * sizeof(int64_t), stream_);
    mrope = mrope_dev_.view();
    mrope.shape[1] = T;  // rows keep the buffer's stride
  }
  std::memcpy(qo_indptr_host_.data(), h.qo_indptr.data(), h.qo_indptr.size() * sizeof(int32_t));
  std::memcpy(kv_indptr_host_.data(), h.kv_indptr.data(), h.kv_indptr.size() * sizeof(int32_t));
  std::memcpy(kv_last_page_len_host_.data(), h.kv_last_page_len.data(), h.kv_last_page_len.size() * sizeof(int32_t));
  if (h.num_decode_seqs > 0) {
    std::memcpy(prefill_qo_indptr_host_.data(), h.prefill_qo_indptr.data(), h.prefill_qo_indptr.size() * sizeof(int32_t));
    std::memcpy(prefill_kv_indptr_host_.data(), h.prefill_kv_indptr.data(), h.prefill_kv_indptr.size() * sizeof(int32_t));
  }

  ForwardBatch b;
  b.num_tokens = T;
  b.num_seqs = B;
  b.num_logits = static_cast<int64_t>(h.logits_indices.size());
  b.decode_only = decode_only;
  b.mrope_positions = mrope;
  b.input_ids = v.input_ids;
  b.positions = v.positions;
  b.slot_mapping = v.slot_mapping;
  b.logits_indices = v.logits_indices;
  b.qo_indptr = v.qo_indptr;
  b.kv_indptr = v.kv_indptr;
  b.kv_indices = v.kv_indices;  // to the arena's end: a captured graph keeps its address and length
  b.kv_last_page_len = v.kv_last_page_len;
  b.qo_indptr_host = first_rows(qo_indptr_host_, B + 1);
  b.kv_indptr_host = first_rows(kv_indptr_host_, B + 1);
  b.kv_last_page_len_host = first_rows(kv_last_page_len_host_, B);
  if (recurrent_) {
    b.state_indices = v.state_slots;
    b.state_indices_host = first_rows(state_slots_host_, B);
    b.has_initial_state = v.has_initial_state;
    b.has_initial_state_bool = v.has_initial_state_bool;
  }
  if (h.num_decode_seqs > 0) {
    const int64_t D = h.num_decode_seqs, P = B - D;
    b.num_decode_seqs = D;
    b.prefill_qo_indptr = v.prefill_qo_indptr;
    b.prefill_kv_indptr = v.prefill_kv_indptr;
    b.prefill_kv_indices = row_range(v.kv_indices, h.kv_indptr[static_cast<size_t>(D)],
                                     v.kv_indices.shape[0] - h.kv_indptr[static_cast<size_t>(D)]);
    b.prefill_kv_last_page_len = row_range(v.kv_last_page_len, D, P);
    b.prefill_qo_indptr_host = first_rows(prefill_qo_indptr_host_, P + 1);
    b.prefill_kv_indptr_host = first_rows(prefill_kv_indptr_host_, P + 1);
    b.prefill_kv_last_page_len_host = row_range(kv_last_page_len_host_, D, P);
  }
  return b;
}

void ModelRunner::sample(const TensorView& logits, int slot) {
  const int64_t R = logits.shape[0];
  const StepViews& v = views_;
  call_op(ops::SampleArgs{first_rows(sampled_, R), logits, first_rows(v.temperature, R), first_rows(v.top_k, R),
                          first_rows(v.top_p, R), first_rows(v.min_p, R), first_rows(v.seed, R),
                          first_rows(v.offset, R)},
          backend_, stream_);
  rt::memcpy_async(sampled_host_[slot].data(), Device::cpu(), sampled_.data(), sampled_.device(),
                   static_cast<size_t>(R) * sizeof(int64_t), stream_);
  sampled_ready_[slot]->record(stream_);
}

void ModelRunner::fill_pending_inputs() {
  if (host_.num_fills == 0) return;
  fill_pending_tokens(views_.input_ids, sampled_, views_.fill_dst, views_.fill_src, stream_);
}

std::vector<int64_t> ModelRunner::execute(std::span<const StepRequest> step) { return collect(launch(step)); }

ModelRunner::Ticket ModelRunner::launch(std::span<const StepRequest> step) {
  FK_CHECK(!step.empty(), "model runner: an empty step");
  const bool decode_only = std::all_of(step.begin(), step.end(), [](const StepRequest& s) { return s.count == 1; });
  // One-token steps over an image prompt (a prefill squeezed to a token a step by the
  // budget) need M-RoPE positions and image features, which captured graphs do not take.
  const bool image_prompt = std::any_of(step.begin(), step.end(), [](const StepRequest& s) {
    return s.request->images && s.start < static_cast<int64_t>(s.request->prompt_tokens.size());
  });
  const int64_t graph = decode_only && !image_prompt ? graph_size_for(static_cast<int64_t>(step.size())) : 0;
  // A mixed step packs its single-token requests first, for the decode kernel.
  order_.clear();
  if (!decode_only) {
    for (size_t i = 0; i < step.size(); ++i)
      if (step[i].count == 1) order_.push_back(i);
    for (size_t i = 0; i < step.size(); ++i)
      if (step[i].count != 1) order_.push_back(i);
  }
  const auto t0 = std::chrono::steady_clock::now();
  pack(step, graph, order_, /*split_decodes=*/!decode_only);
  // The previous launch's uploads must have left the host buffers this one rewrites (it
  // ran ahead of them only when the step before it is still running).
  inputs_consumed_->wait();
  ForwardBatch batch = upload(decode_only);
  attach_images(batch, next_slot_);
  fill_pending_inputs();
  const int32_t grid = graph > 0 ? graph_grid_for_packed_batch() : 0;
  model_.plan(batch, kv_, grid, stream_);
  inputs_consumed_->record(stream_);
  const auto t1 = std::chrono::steady_clock::now();
  ++(decode_only ? counters_.decode_steps : batch.num_decode_seqs > 0 ? counters_.mixed_steps : counters_.prefill_steps);
  TensorView logits;
  if (graph > 0) {
    graphs_.at({graph, grid}).replay(stream_);
    ++graph_replays_;
    logits = first_rows(model_.logits_buffer(), graph);
  } else {
    logits = model_.forward(batch, kv_, stream_);
  }
  Ticket t;
  t.slot = next_slot_;
  next_slot_ ^= 1;
  sample(apply_logits_processors(step, logits, graph > 0), t.slot);
  counters_.prepare_s += std::chrono::duration<double>(t1 - t0).count();
  t.launched = t1;
  // Row k of the logits belongs to sequence k (graph: one row per padded sequence), or to
  // the k-th request that wanted one in packing order (eager).
  t.row_of.assign(step.size(), -1);
  last_rows_.clear();
  for (size_t n = 0, row = 0; n < step.size(); ++n) {
    const size_t i = order_.empty() ? n : order_[n];
    if (!step[i].needs_logits) continue;
    t.row_of[i] = static_cast<int64_t>(graph > 0 ? n : row++);
    last_rows_[step[i].request] = t.row_of[i];
  }
  t.logprobs = compute_logprobs(step, logits, t.row_of);
  return t;
}

std::vector<int64_t> ModelRunner::collect(const Ticket& t) {
  sampled_ready_[t.slot]->wait();
  counters_.run_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t.launched).count();
  const auto* drawn = static_cast<const int64_t*>(sampled_host_[t.slot].data());
  std::vector<int64_t> out;
  for (int64_t row : t.row_of)
    if (row >= 0) out.push_back(drawn[row]);
  return out;
}

std::vector<std::vector<float>> ModelRunner::prefill_logits(std::span<const StepRequest> requests,
                                                            std::span<const std::vector<int64_t>> positions) {
  FK_CHECK(!requests.empty() && requests.size() == positions.size(), "prefill_logits: ", requests.size(),
           " requests and ", positions.size(), " position lists");
  int64_t rows = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    FK_CHECK(!positions[i].empty(), "prefill_logits: request ", i, " asks for no position");
    for (size_t j = 0; j < positions[i].size(); ++j)
      FK_CHECK(positions[i][j] >= 0 && positions[i][j] < requests[i].count && (j == 0 || positions[i][j] > positions[i][j - 1]),
               "prefill_logits: the positions of request ", i, " must increase within its ", requests[i].count,
               " tokens, got ", positions[i][j], " at ", j);
    rows += static_cast<int64_t>(positions[i].size());
  }
  FK_CHECK(rows <= config_.max_seqs, "prefill_logits: ", rows, " logit rows; a step holds at most max_seqs ",
           config_.max_seqs);
  pack(requests, 0);
  // Replace the sampled rows by each request's asked rows (their sampling parameters are
  // unused).
  HostBatch& h = host_;
  h.logits_indices.clear();
  for (size_t i = 0; i < requests.size(); ++i)
    for (int64_t p : positions[i]) h.logits_indices.push_back(static_cast<int32_t>(h.qo_indptr[i] + p));
  // One token per request runs the decode path, as launch() runs such a step.
  const bool decode_only =
      std::all_of(requests.begin(), requests.end(), [](const StepRequest& s) { return s.count == 1; });
  ForwardBatch batch = upload(decode_only);
  attach_images(batch, next_slot_);
  model_.plan(batch, kv_, /*graph_grid=*/0, stream_);
  const TensorView logits = model_.forward(batch, kv_, stream_);
  std::vector<uint8_t> bytes(static_cast<size_t>(logits.nbytes()));
  rt::memcpy_async(bytes.data(), Device::cpu(), logits.data, logits.device, bytes.size(), stream_);
  wait();
  const int64_t V = logits.shape[1];
  const size_t es = dtype_size(logits.dtype);
  std::vector<std::vector<float>> out(requests.size());
  size_t e = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    out[i].resize(positions[i].size() * static_cast<size_t>(V));
    for (float& x : out[i]) x = static_cast<float>(load_element(bytes.data() + e++ * es, logits.dtype));
  }
  return out;
}

void ModelRunner::capture_graphs() {
  if (graph_sizes_.empty()) return;
  sm_count_ = device_sm_count(model_.device().index);
  // Largest first, as the scheduler's batches grow and shrink through them.
  for (auto it = graph_sizes_.rbegin(); it != graph_sizes_.rend(); ++it) {
    const int64_t b = *it;
    pack({}, b);  // all padding: writes nothing to the cache
    const ForwardBatch batch = upload(/*decode_only=*/true);
    const auto [first, last] = captured_grids();
    for (int32_t grid = first; grid <= last; ++grid) {
      model_.plan(batch, kv_, grid, stream_);
      // Warm-up: first-call setup (GEMM algorithms) outside the capture.
      if (grid == first) model_.forward(batch, kv_, stream_);
      rt::stream_synchronize(stream_);
      CudaGraph g;
      g.capture(stream_, [&] { model_.forward(batch, kv_, stream_); });
      graphs_[{b, grid}] = std::move(g);
    }
  }
  rt::stream_synchronize(stream_);
}

void ModelRunner::attach_images(ForwardBatch& batch, int slot) {
  step_images_[slot].reset();
  if (host_.image_spans.empty()) return;
  std::vector<StepImageSpan> spans;
  for (const HostBatch::ImageSpan& s : host_.image_spans) {
    RequestImages& im = *s.images;
    if (!im.features) im.features = image_encoder_->encode(im, stream_);
    spans.push_back({im.features, &im.feature_of, s.packed, s.start, s.count});
    // Its last image token is computed in this step: the request no longer needs them.
    if (s.start + s.count >= im.image_tokens_end) im.features.reset();
  }
  step_images_[slot] = make_step_image_features(spans, model_.device());
  batch.image_features = step_images_[slot].get();
}

}  // namespace fk::engine
