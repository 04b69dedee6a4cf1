#include "models/science/openfold3/openfold3_model.h"

#include <string>

#include "fk/op_registry.h"
#include "fk/ops/pairformer_block.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::models::science {
namespace {

// The first n structures of a [max, ...] buffer as a packed [n, dims...] view.
TensorView leading(const Tensor& t, std::initializer_list<int64_t> shape) {
  return make_view(t.view().data, shape, t.dtype(), t.device());
}

ops::PairformerBlockDims dims(const OpenFold3Config& c, int64_t batch, int64_t tokens) {
  ops::PairformerBlockDims d;
  d.batch = batch, d.tokens = tokens, d.c_s = c.c_s, d.c_z = c.c_z, d.c_mul = c.c_hidden_mul;
  d.tri_heads = c.no_heads_pair, d.tri_head_dim = c.c_hidden_pair_att;
  d.single_heads = c.no_heads_pair_bias, d.single_head_dim = c.c_hidden_pair_bias;
  d.pair_hidden = c.transition_n * c.c_z, d.single_hidden = c.transition_n * c.c_s;
  return d;
}

}  // namespace

OpenFold3Model::OpenFold3Model(OpenFold3Config config) : config_(std::move(config)) {}

std::unique_ptr<Model> OpenFold3Model::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<OpenFold3Model>(parse_openfold3_config(config_json, source));
}

std::vector<TensorDecl> OpenFold3Model::weights() const { return openfold3_weight_decls(config_); }

std::vector<TensorDecl> OpenFold3Model::inputs() const {
  const int64_t n = kPerCall;
  return {{"single", {kPerCall, n, config_.c_s}, options_.dtype, "s: the single representation"},
          {"pair", {kPerCall, n, n, config_.c_z}, options_.dtype, "z: the pair representation"},
          {"single_mask", {kPerCall, n}, options_.dtype, "1 for a real token, 0 for padding (optional)"},
          {"pair_mask", {kPerCall, n, n}, options_.dtype, "1 for a pair of real tokens, 0 otherwise (optional)"}};
}

std::vector<TensorDecl> OpenFold3Model::outputs() const {
  const int64_t n = kPerCall;
  return {{"pair", {kPerCall, n, n, config_.c_z}, options_.dtype, "z after the Pairformer stack"},
          {"single", {kPerCall, n, config_.c_s}, options_.dtype, "s after the Pairformer stack"}};
}

void OpenFold3Model::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::f32 || o.dtype == DType::bf16 || o.dtype == DType::f16,
           "openfold3: the model dtype must be f32, bf16 or f16, got ", dtype_name(o.dtype));
  FK_CHECK(o.max_seqs > 0, "openfold3: max_seqs (the structures of a batch) must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_openfold3_weights(config_, o.seed, o.dtype, o.device)
                                  : load_openfold3_weights(config_, o.checkpoint, o.dtype, o.device);
  const int64_t b = o.max_seqs, n = config_.max_tokens;
  single_ = Tensor::empty({b, n, config_.c_s}, o.dtype, o.device, o.stream);
  pair_ = Tensor::empty({b, n, n, config_.c_z}, o.dtype, o.device, o.stream);
  workspace_ = Tensor::empty({ops::pairformer_block_workspace_elements(dims(config_, b, n))}, o.dtype, o.device,
                             o.stream);
  loaded_ = true;
}

void OpenFold3Model::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded_, "openfold3: plan before load");
  TensorView single{}, pair{}, single_mask{}, pair_mask{};
  for (const auto& [name, v] : in.tensors) {
    if (name == "single") single = v;
    else if (name == "pair") pair = v;
    else if (name == "single_mask") single_mask = v;
    else if (name == "pair_mask") pair_mask = v;
    else FK_FAIL(FK_ERR_INVALID_ARGUMENT, "openfold3: unknown step input '", name,
                 "' (single, pair, single_mask, pair_mask)");
  }
  FK_CHECK(single.data != nullptr && pair.data != nullptr, "openfold3: step inputs 'single' and 'pair' are required");
  const DType dt = options_.dtype;
  FK_CHECK(single.rank == 3 && single.shape[2] == config_.c_s && single.dtype == dt && single.is_contiguous(),
           "openfold3: 'single' must be a contiguous ", dtype_name(dt), "[B, N, ", config_.c_s, "], got ",
           describe(single));
  const int64_t b = single.shape[0], n = single.shape[1];
  FK_CHECK(b >= 1 && b <= options_.max_seqs, "openfold3: ", b, " structures; the model was loaded for 1 to ",
           options_.max_seqs, " (max_seqs)");
  FK_CHECK(n >= 1 && n <= config_.max_tokens, "openfold3: a structure of ", n,
           " tokens is longer than the model's crop of ", config_.max_tokens, " tokens (max_tokens)");
  FK_CHECK(pair.rank == 4 && pair.shape[0] == b && pair.shape[1] == n && pair.shape[2] == n &&
               pair.shape[3] == config_.c_z && pair.dtype == dt && pair.is_contiguous(),
           "openfold3: 'pair' must be a contiguous ", dtype_name(dt), "[", b, ", ", n, ", ", n, ", ", config_.c_z,
           "] (the single's B and N), got ", describe(pair));
  if (single_mask.data != nullptr)
    FK_CHECK(single_mask.rank == 2 && single_mask.shape[0] == b && single_mask.shape[1] == n &&
                 single_mask.dtype == dt && single_mask.is_contiguous(),
             "openfold3: 'single_mask' must be a contiguous ", dtype_name(dt), "[", b, ", ", n, "], got ",
             describe(single_mask));
  if (pair_mask.data != nullptr)
    FK_CHECK(pair_mask.rank == 3 && pair_mask.shape[0] == b && pair_mask.shape[1] == n && pair_mask.shape[2] == n &&
                 pair_mask.dtype == dt && pair_mask.is_contiguous(),
             "openfold3: 'pair_mask' must be a contiguous ", dtype_name(dt), "[", b, ", ", n, ", ", n, "], got ",
             describe(pair_mask));
  for (const TensorView* v : {&single, &pair, &single_mask, &pair_mask})
    FK_CHECK(v->data == nullptr || v->device == options_.device, "openfold3: step inputs must be on the model's device");
  batch_ = b, tokens_ = n;
  in_single_ = single, in_pair_ = pair, single_mask_ = single_mask, pair_mask_ = pair_mask;
}

TensorView OpenFold3Model::single_output() const { return leading(single_, {batch_, tokens_, config_.c_s}); }

TensorView OpenFold3Model::pair_output() const {
  return leading(pair_, {batch_, tokens_, tokens_, config_.c_z});
}

TensorView OpenFold3Model::forward(const StepInputs&, void* stream) {
  FK_CHECK(loaded_ && batch_ > 0, "openfold3: forward before load and plan");
  const TensorView s = single_output(), z = pair_output();
  rt::memcpy_async(s.data, s.device, in_single_.data, in_single_.device, static_cast<size_t>(s.span_bytes()), stream);
  rt::memcpy_async(z.data, z.device, in_pair_.data, in_pair_.device, static_cast<size_t>(z.span_bytes()), stream);
  for (const OpenFold3Block& block : weights_.blocks) {
    ops::PairformerBlockArgs a{};
    a.single = s;
    a.pair = z;
    a.single_mask = single_mask_;
    a.pair_mask = pair_mask_;
    a.w = block.ops;
    a.workspace = workspace_.view();
    a.tri_heads = static_cast<int32_t>(config_.no_heads_pair);
    a.single_heads = static_cast<int32_t>(config_.no_heads_pair_bias);
    call_op(a, options_.device.type, stream);
  }
  return z;
}

}  // namespace fk::models::science
