#include "models/encoder/colbert_encode.h"

#include <algorithm>

#include "fk/op_registry.h"
#include "fk/ops/maxsim.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/encoder/embed_batch.h"

namespace fk::models::encoder {
namespace {

const ColbertSettings& settings_of(const XlmRobertaModel& model) {
  FK_CHECK(model.config().colbert.has_value() && model.has_colbert_projection(), "colbert: the model ",
           model.architecture(), " has no ColBERT projection (a config whose architectures name HF_ColBERT)");
  return *model.config().colbert;
}

// Packs rows of every item into one [rows, dim] f32 tensor on `device` with its offsets.
struct Packed {
  Tensor rows, cu;
  int32_t longest = 0;
};

Packed pack(const std::vector<ColbertVectors>& items, int64_t dim, Device device) {
  int64_t total = 0;
  for (const ColbertVectors& v : items) total += static_cast<int64_t>(v.rows.size());
  Tensor host = Tensor::empty({total, dim}, DType::f32), cu = Tensor::empty({static_cast<int64_t>(items.size()) + 1},
                                                                            DType::i32);
  Packed p;
  int32_t at = 0;
  cu.data_as<int32_t>()[0] = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::copy(items[i].vectors.begin(), items[i].vectors.end(), host.data_as<float>() + static_cast<int64_t>(at) * dim);
    const auto n = static_cast<int32_t>(items[i].rows.size());
    at += n;
    p.longest = std::max(p.longest, n);
    cu.data_as<int32_t>()[i + 1] = at;
  }
  p.rows = device.is_cpu() ? host : host.to(device);
  p.cu = device.is_cpu() ? cu : cu.to(device);
  return p;
}

}  // namespace

ColbertInput colbert_format(const std::vector<int32_t>& text_ids, ColbertSide side, const ColbertSettings& s) {
  const bool query = side == ColbertSide::query;
  const int64_t maxlen = query ? s.query_maxlen : s.doc_maxlen;
  const size_t room = static_cast<size_t>(maxlen - 3);  // [CLS], the marker, [SEP]
  ColbertInput in;
  in.ids = {s.cls_token_id, query ? s.query_marker_id : s.doc_marker_id};
  in.ids.insert(in.ids.end(), text_ids.begin(), text_ids.begin() + static_cast<std::ptrdiff_t>(std::min(room, text_ids.size())));
  in.ids.push_back(s.sep_token_id);
  in.keys = static_cast<int32_t>(in.ids.size());
  if (query) {
    in.ids.resize(static_cast<size_t>(maxlen), s.mask_token_id);
    if (s.attend_to_mask_tokens) in.keys = static_cast<int32_t>(maxlen);
  }
  return in;
}

std::vector<ColbertVectors> colbert_encode(XlmRobertaModel& model, const std::vector<std::vector<int32_t>>& texts,
                                           ColbertSide side) {
  const ColbertSettings& s = settings_of(model);
  std::vector<std::vector<int32_t>> sequences;
  EmbedOptions options;
  for (size_t t = 0; t < texts.size(); ++t) {
    for (size_t i = 0; i < texts[t].size(); ++i)
      FK_CHECK(texts[t][i] >= 0 && texts[t][i] < model.config().vocab_size, "colbert: text ", t, " token ", i,
               " has id ", texts[t][i], ", outside the vocabulary of ", model.config().vocab_size);
    ColbertInput in = colbert_format(texts[t], side, s);
    sequences.push_back(std::move(in.ids));
    options.key_lens.push_back(in.keys);
  }
  const std::vector<EncoderOutput> outs = embed_batch(model, sequences, options);
  std::vector<ColbertVectors> result(texts.size());
  for (size_t t = 0; t < texts.size(); ++t) {
    ColbertVectors& v = result[t];
    v.ids = sequences[t];
    for (size_t i = 0; i < v.ids.size(); ++i) {
      const int32_t id = v.ids[i];
      const bool dropped = side == ColbertSide::document &&
                           (id == s.pad_token_id || std::find(s.skiplist.begin(), s.skiplist.end(), id) != s.skiplist.end());
      if (dropped) continue;
      v.rows.push_back(static_cast<int32_t>(i));
      const auto row = outs[t].colbert.begin() + static_cast<std::ptrdiff_t>(i * s.dim);
      v.vectors.insert(v.vectors.end(), row, row + s.dim);
    }
  }
  return result;
}

std::vector<float> maxsim_scores(const std::vector<ColbertVectors>& queries,
                                 const std::vector<ColbertVectors>& documents, int64_t dim, Device device,
                                 void* stream) {
  if (queries.empty() || documents.empty()) return {};
  const Packed q = pack(queries, dim, device), d = pack(documents, dim, device);
  const auto bq = static_cast<int64_t>(queries.size()), bd = static_cast<int64_t>(documents.size());
  Tensor scores = Tensor::empty({bq, bd}, DType::f32, device, stream);
  call_op(ops::MaxSimArgs{scores, q.rows, d.rows, q.cu, d.cu, q.longest, d.longest}, device.type, stream);
  rt::stream_synchronize(stream);
  std::vector<float> out(static_cast<size_t>(bq * bd));
  rt::memcpy_sync(out.data(), Device::cpu(), scores.data(), device, out.size() * sizeof(float));
  return out;
}

std::vector<float> colbert_scores(XlmRobertaModel& model, const std::vector<ColbertVectors>& queries,
                                  const std::vector<ColbertVectors>& documents) {
  const ColbertSettings& s = settings_of(model);
  return maxsim_scores(queries, documents, s.dim, model.load_options().device, model.load_options().stream);
}

}  // namespace fk::models::encoder
