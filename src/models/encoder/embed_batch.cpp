#include "models/encoder/embed_batch.h"

#include <algorithm>
#include <cmath>

#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::models::encoder {
namespace {

Tensor i32_tensor(const std::vector<int32_t>& values, Device device) {
  Tensor host = Tensor::empty({static_cast<int64_t>(values.size())}, DType::i32);
  std::copy(values.begin(), values.end(), host.data_as<int32_t>());
  return device.is_cpu() ? host : host.to(device);
}

// A [rows, cols] device view as host floats.
std::vector<float> to_host_floats(const TensorView& v) {
  Tensor host = Tensor::empty({v.shape[0], v.rank > 1 ? v.shape[1] : 1}, v.dtype);
  if (host.numel() > 0) rt::memcpy_sync(host.data(), Device::cpu(), v.data, v.device, host.nbytes());
  std::vector<float> out(static_cast<size_t>(host.numel()));
  const size_t es = host.view().element_size();
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(load_element(static_cast<const char*>(host.data()) + i * es, host.dtype()));
  return out;
}

// rows [first, first + count) of a row-major [*, width] matrix, each divided by
// max(its L2 norm, 1e-12), in double.
std::vector<float> normalized_rows(const std::vector<float>& m, int64_t width, int64_t first, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count * width));
  for (int64_t r = 0; r < count; ++r) {
    const float* row = m.data() + (first + r) * width;
    double ss = 0;
    for (int64_t j = 0; j < width; ++j) ss += static_cast<double>(row[j]) * row[j];
    const double inv = 1.0 / std::max(std::sqrt(ss), 1e-12);
    for (int64_t j = 0; j < width; ++j) out[static_cast<size_t>(r * width + j)] = static_cast<float>(row[j] * inv);
  }
  return out;
}

}  // namespace

std::vector<int32_t> roberta_position_ids(const std::vector<int32_t>& ids, int64_t pad_token_id) {
  std::vector<int32_t> pos(ids.size());
  int32_t count = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    pos[i] = ids[i] == pad_token_id ? static_cast<int32_t>(pad_token_id)
                                    : static_cast<int32_t>(pad_token_id + 1 + count++);
  return pos;
}

std::vector<int32_t> encoder_position_ids(const std::vector<int32_t>& ids, const XlmRobertaConfig& config) {
  if (config.family == EncoderFamily::xlm_roberta) return roberta_position_ids(ids, config.pad_token_id);
  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) pos[i] = static_cast<int32_t>(i);
  return pos;
}

std::vector<EncoderOutput> embed_batch(XlmRobertaModel& model, const std::vector<std::vector<int32_t>>& sequences,
                                       const EmbedOptions& options) {
  FK_CHECK(model.loaded(), "embed: the model is not loaded");
  const XlmRobertaConfig& c = model.config();
  const Device device = model.load_options().device;
  void* stream = model.load_options().stream;
  std::vector<int32_t> ids, positions, cu = {0};
  for (size_t s = 0; s < sequences.size(); ++s) {
    const auto& seq = sequences[s];
    FK_CHECK(!seq.empty(), "embed: sequence ", s, " has no tokens");
    for (size_t i = 0; i < seq.size(); ++i)
      FK_CHECK(seq[i] >= 0 && seq[i] < c.vocab_size, "embed: sequence ", s, " token ", i, " has id ", seq[i],
               ", outside the vocabulary of ", c.vocab_size);
    const auto pos = encoder_position_ids(seq, c);
    ids.insert(ids.end(), seq.begin(), seq.end());
    positions.insert(positions.end(), pos.begin(), pos.end());
    cu.push_back(static_cast<int32_t>(ids.size()));
  }
  if (sequences.empty()) return {};
  const Tensor ids_t = i32_tensor(ids, device), pos_t = i32_tensor(positions, device);
  const Tensor cu_t = i32_tensor(cu, device), cu_host = i32_tensor(cu, Device::cpu());
  StepInputs in;
  in.tensors = {{"input_ids", ids_t}, {"position_ids", pos_t}, {"cu_seqlens", cu_t}, {"cu_seqlens_host", cu_host}};
  Tensor used_t;
  if (!options.key_lens.empty()) {
    FK_CHECK(options.key_lens.size() == sequences.size(), "embed: ", options.key_lens.size(), " key counts for ",
             sequences.size(), " sequences");
    for (size_t s = 0; s < sequences.size(); ++s)
      FK_CHECK(options.key_lens[s] >= 1 && options.key_lens[s] <= static_cast<int32_t>(sequences[s].size()),
               "embed: sequence ", s, " has ", sequences[s].size(), " tokens and ", options.key_lens[s],
               " attention keys; it needs between 1 and its tokens");
    used_t = i32_tensor(options.key_lens, device);
    in.tensors.push_back({"seqused_k", used_t});
  }
  model.plan(in, stream);
  const TensorView hidden_v = model.forward(in, stream);
  rt::stream_synchronize(stream);

  const int64_t h = c.hidden_size;
  const std::vector<float> hidden = to_host_floats(hidden_v);
  std::vector<float> colbert, sparse;
  if (model.has_heads()) {
    colbert = to_host_floats(model.colbert_output());
    sparse = to_host_floats(model.sparse_output());
  }
  const bool projection = model.has_colbert_projection();
  const int64_t dim = projection ? c.colbert->dim : h;
  if (projection) colbert = to_host_floats(model.colbert_output());
  const int64_t unk = 3;  // XLM-R's <unk>; BGE-M3 leaves it out of the lexical weights
  std::vector<EncoderOutput> out(sequences.size());
  for (size_t s = 0; s < sequences.size(); ++s) {
    const int64_t first = cu[s], n = cu[s + 1] - cu[s];
    EncoderOutput& o = out[s];
    o.tokens = n;
    if (options.hidden_states)
      o.last_hidden_state.assign(hidden.begin() + first * h, hidden.begin() + (first + n) * h);
    o.dense = normalized_rows(hidden, h, first, 1);
    if (projection) o.colbert = normalized_rows(colbert, dim, first, n);
    if (!model.has_heads()) continue;
    o.colbert = normalized_rows(colbert, h, first + 1, n - 1);
    for (int64_t i = 0; i < n; ++i) {
      const float w = std::max(sparse[static_cast<size_t>(first + i)], 0.f);
      o.sparse.push_back(w);
      const int64_t id = sequences[s][static_cast<size_t>(i)];
      if (id == c.bos_token_id || id == c.eos_token_id || id == c.pad_token_id || id == unk || w <= 0) continue;
      auto [it, inserted] = o.lexical_weights.emplace(id, w);
      if (!inserted) it->second = std::max(it->second, w);
    }
  }
  return out;
}

}  // namespace fk::models::encoder
