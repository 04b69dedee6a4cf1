#include "models/recsys/dlrm/dlrm_predict.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::models::recsys {
namespace {

constexpr const char* kRunner = "dlrm predict";

void check_sample(const DlrmConfig& c, const DlrmSample& s, size_t index) {
  FK_CHECK(static_cast<int64_t>(s.dense.size()) == c.dense_features, kRunner, ": sample ", index, " has ",
           s.dense.size(), " dense features; the model takes ", c.dense_features);
  FK_CHECK(static_cast<int64_t>(s.sparse.size()) == c.num_tables(), kRunner, ": sample ", index, " has ids for ",
           s.sparse.size(), " tables; the model has ", c.num_tables());
  for (size_t t = 0; t < s.sparse.size(); ++t) {
    const int64_t rows = c.table_sizes[t];
    for (size_t i = 0; i < s.sparse[t].size(); ++i) {
      const int64_t id = s.sparse[t][i];
      FK_CHECK(id >= 0 && id < rows, kRunner, ": sample ", index, ", table ", t, ", id ", i, " is ", id,
               ", outside the table's ", rows, " rows");
    }
  }
}

// indices and offsets of the model's packed form (dlrm_model.h), in `dtype`.
void pack_ids(const std::vector<DlrmSample>& samples, int64_t tables, DType dtype, Tensor& indices, Tensor& offsets) {
  const auto b = static_cast<int64_t>(samples.size());
  int64_t total = 0;
  for (const DlrmSample& s : samples)
    for (const auto& bag : s.sparse) total += static_cast<int64_t>(bag.size());
  indices = Tensor::empty({total}, dtype);
  offsets = Tensor::empty({tables * b + 1}, dtype);
  int64_t at = 0;
  store_element(offsets.view().element_ptr(0), dtype, 0.0);
  for (int64_t t = 0; t < tables; ++t)
    for (int64_t s = 0; s < b; ++s) {
      for (int64_t id : samples[static_cast<size_t>(s)].sparse[static_cast<size_t>(t)])
        store_element(indices.view().element_ptr(at++), dtype, static_cast<double>(id));
      store_element(offsets.view().element_ptr(t * b + s + 1), dtype, static_cast<double>(at));
    }
}

Tensor to_model_device(const Tensor& host, Device device) { return device.is_cpu() ? host : host.to(device); }

}  // namespace

DlrmBatch dlrm_pack(const DlrmModel& model, const std::vector<DlrmSample>& samples) {
  FK_CHECK(model.loaded(), kRunner, ": the model is not loaded");
  const DlrmConfig& c = model.config();
  const LoadOptions& o = model.load_options();
  for (size_t s = 0; s < samples.size(); ++s) check_sample(c, samples[s], s);
  FK_CHECK(static_cast<int64_t>(samples.size()) <= o.max_tokens, kRunner, ": ", samples.size(),
           " samples, more than the ", o.max_tokens, " the model was loaded for (max_tokens)");
  DlrmBatch batch;
  batch.samples = static_cast<int64_t>(samples.size());
  if (samples.empty()) return batch;
  const int64_t b = batch.samples;

  // Dense features in the model dtype, rows padded to 8 elements (zeros; never read).
  const int64_t width = c.dense_features, padded = dlrm_padded(width);
  Tensor dense_host = Tensor::zeros({b, padded}, o.dtype);
  for (int64_t s = 0; s < b; ++s)
    for (int64_t k = 0; k < width; ++k)
      set(dense_host.view(), samples[static_cast<size_t>(s)].dense[static_cast<size_t>(k)], s, k);
  // i32 ids and offsets when every table's rows and the total count fit, as MLPerf's do.
  int64_t total = 0;
  for (const DlrmSample& s : samples)
    for (const auto& bag : s.sparse) total += static_cast<int64_t>(bag.size());
  int64_t largest = 0;
  for (int64_t rows : c.table_sizes) largest = std::max(largest, rows);
  const int64_t i32_max = std::numeric_limits<int32_t>::max();
  const DType id_dtype = total <= i32_max && largest <= i32_max ? DType::i32 : DType::i64;
  Tensor indices_host, offsets_host;
  pack_ids(samples, c.num_tables(), id_dtype, indices_host, offsets_host);

  batch.dense = to_model_device(dense_host, o.device);
  batch.indices = to_model_device(indices_host, o.device);
  batch.offsets = to_model_device(offsets_host, o.device);
  TensorView dense_view = batch.dense.view();
  dense_view.shape[1] = width;  // the padded rows' first `width` elements
  batch.inputs.tensors = {{"dense_features", dense_view}, {"indices", batch.indices.view()},
                          {"offsets", batch.offsets.view()}};
  return batch;
}

std::vector<DlrmPrediction> dlrm_run(DlrmModel& model, const DlrmBatch& batch) {
  if (batch.samples == 0) return {};
  const LoadOptions& o = model.load_options();
  model.plan(batch.inputs, o.stream);
  const TensorView logits = model.forward(batch.inputs, o.stream);
  rt::stream_synchronize(o.stream);
  const int64_t b = batch.samples;
  Tensor logits_host = Tensor::empty({b, 1}, logits.dtype);
  rt::memcpy_sync(logits_host.data(), Device::cpu(), logits.data, logits.device, logits_host.nbytes());
  std::vector<DlrmPrediction> out(static_cast<size_t>(b));
  for (int64_t s = 0; s < b; ++s) {
    const double x = get(logits_host.view(), s, 0);
    out[static_cast<size_t>(s)].logit = static_cast<float>(x);
    out[static_cast<size_t>(s)].probability = static_cast<float>(1.0 / (1.0 + std::exp(-x)));
  }
  return out;
}

std::vector<DlrmPrediction> dlrm_predict(DlrmModel& model, const std::vector<DlrmSample>& samples) {
  return dlrm_run(model, dlrm_pack(model, samples));
}

}  // namespace fk::models::recsys
