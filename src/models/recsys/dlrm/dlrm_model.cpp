#include "models/recsys/dlrm/dlrm_model.h"

#include <algorithm>

#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/linear.h"
#include "fk/ops/recsys.h"
#include "fk/status.h"
#include "models/step_io.h"

namespace fk::models::recsys {
namespace {

constexpr const char* kModel = "dlrm";

// The first `rows` rows and `cols` columns of a [*, >= cols] buffer, its row stride kept.
TensorView leading_block(const Tensor& t, int64_t rows, int64_t cols) {
  TensorView v = t.view();
  v.shape[0] = rows;
  v.shape[1] = cols;
  return v;
}

}  // namespace

DlrmModel::DlrmModel(DlrmConfig config) : config_(std::move(config)) {}

std::unique_ptr<Model> DlrmModel::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<DlrmModel>(parse_dlrm_config(config_json, source));
}

std::vector<TensorDecl> DlrmModel::weights() const { return dlrm_weight_decls(config_, options_.dtype); }

std::vector<TensorDecl> DlrmModel::inputs() const {
  return {{"dense_features",
           {kPerCall, config_.dense_features},
           options_.dtype,
           "the dense (integer) features, log(1 + x) as MLPerf preprocesses them; row stride free"},
          {"indices",
           {kPerCall},
           DType::i32,
           "every table's categorical ids (i32 or i64), table after table, each table's bags in sample order"},
          {"offsets",
           {kPerCall},
           DType::i32,
           "[tables x samples + 1], the dtype of indices: bag (t, b) is indices[offsets[t B + b] .. offsets[t B + b + "
           "1])"}};
}

std::vector<TensorDecl> DlrmModel::outputs() const {
  return {{"logits", {kPerCall, 1}, options_.dtype, "the click logit per sample (its sigmoid is the probability)"}};
}

void DlrmModel::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, kModel,
           ": the model dtype must be bf16 or f16 (the linear op's), got ", dtype_name(o.dtype));
  FK_CHECK(o.max_tokens > 0, kModel, ": max_tokens (the samples a batch may hold) must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_dlrm_weights(config_, o.dtype, o.device, o.seed, o.stream)
                                  : load_dlrm_weights(config_, o.checkpoint, o.dtype, o.device);
  int64_t widest = 0;
  for (int64_t w : config_.bottom_mlp) widest = std::max(widest, w);
  for (int64_t w : config_.top_mlp) widest = std::max(widest, w);
  const int64_t m = o.max_tokens;
  auto buffer = [&](const Shape& s) { return Tensor::empty(s, o.dtype, o.device, o.stream); };
  features_ = buffer({m, config_.num_tables() + 1, config_.embedding_dim});
  interaction_ = buffer({m, dlrm_padded(config_.interaction_features())});
  pre_ = buffer({m, dlrm_padded(widest)});
  post_ = buffer({m, dlrm_padded(widest)});
  logits_ = buffer({m, 1});
  loaded_ = true;
}

void DlrmModel::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded_, kModel, ": plan before load");
  const TensorView dense = step_input(in, "dense_features", true, kModel);
  FK_CHECK(dense.rank == 2 && dense.shape[1] == config_.dense_features, kModel, ": dense_features must be [B, ",
           config_.dense_features, "], got ", describe(dense));
  FK_CHECK(dense.shape[0] <= options_.max_tokens, kModel, ": ", dense.shape[0], " samples, more than the ",
           options_.max_tokens, " the model was loaded for (max_tokens)");
  batch_ = dense.shape[0];
}

TensorView DlrmModel::slot(int64_t vector) const {
  const int64_t d = config_.embedding_dim;
  TensorView v = features_.view();
  v.rank = 2;
  v.shape[0] = batch_;
  v.shape[1] = d;
  v.strides[0] = (config_.num_tables() + 1) * d;
  v.strides[1] = 1;
  v.data = v.element_ptr(vector * d);
  return v;
}

TensorView DlrmModel::interaction_output() const {
  return leading_block(interaction_, batch_, config_.interaction_features());
}

void DlrmModel::mlp(const std::vector<DlrmLinear>& layers, TensorView x, const TensorView& last_out, bool relu_last,
                    void* stream) {
  const DeviceType be = options_.device.type;
  const TensorView none{};
  for (size_t l = 0; l < layers.size(); ++l) {
    const DlrmLinear& layer = layers[l];
    const int64_t out = layer.weight.size(0);
    const bool last = l + 1 == layers.size();
    // The linear reads x (post_ after the first layer) and writes pre_; the relu reads pre_
    // and writes post_ (or the MLP's output): no call writes what it reads.
    const TensorView pre = last && !relu_last ? last_out : leading_block(pre_, batch_, out);
    call_op(ops::LinearArgs{pre, x, layer.weight_view(), layer.bias, none, none}, be, stream);
    if (last && !relu_last) return;
    const TensorView act = last ? last_out : leading_block(post_, batch_, out);
    call_op(ops::ReluArgs{act, pre}, be, stream);
    x = act;
  }
}

TensorView DlrmModel::forward(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_, kModel, ": forward before load");
  const TensorView dense = step_input(in, "dense_features", true, kModel);
  const TensorView indices = step_input(in, "indices", true, kModel);
  const TensorView offsets = step_input(in, "offsets", true, kModel);
  const int64_t b = batch_, tables = config_.num_tables(), d = config_.embedding_dim;
  FK_CHECK(dense.rank == 2 && dense.shape[0] == b && dense.shape[1] == config_.dense_features, kModel,
           ": dense_features must be [", b, ", ", config_.dense_features, "] as planned, got ", describe(dense));
  FK_CHECK(dense.dtype == options_.dtype, kModel, ": dense_features must be ", dtype_name(options_.dtype),
           " (the model dtype), got ", describe(dense));
  FK_CHECK(offsets.rank == 1 && offsets.shape[0] == tables * b + 1, kModel, ": offsets must be [", tables * b + 1,
           "] (a bag for each of the ", tables, " tables and ", b, " samples, then the end), got ", describe(offsets));
  const DeviceType be = options_.device.type;
  mlp(weights_.bottom, dense, slot(0), /*relu_last=*/true, stream);
  for (int64_t t = 0; t < tables; ++t) {
    TensorView bags = offsets;
    bags.data = bags.element_ptr(t * b);
    bags.shape[0] = b + 1;
    call_op(ops::EmbeddingBagArgs{slot(t + 1), weights_.tables[static_cast<size_t>(t)], indices, bags, TensorView{},
                                  ops::EmbeddingBagMode::sum},
            be, stream);
  }
  // The T pooled vectors of each sample: vectors 1..T of the feature buffer.
  TensorView sparse = features_.view();
  sparse.shape[0] = b;
  sparse.shape[1] = tables;
  sparse.data = sparse.element_ptr(d);
  // The interaction and the top MLP: one L3 op (its parts are the ops called above).
  ops::DlrmTopArgs top{};
  top.logits = leading_block(logits_, b, 1);
  top.dense = slot(0);
  top.sparse = sparse;
  for (size_t l = 0; l < weights_.top.size(); ++l) {
    top.weight[l] = weights_.top[l].weight;
    top.bias[l] = weights_.top[l].bias;
  }
  top.interaction = interaction_;
  top.pre = pre_;
  top.post = post_;
  top.layers = static_cast<int32_t>(weights_.top.size());
  call_op(top, be, stream);
  return top.logits;
}

}  // namespace fk::models::recsys
