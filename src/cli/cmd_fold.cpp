// `fk fold --model M --tokens N`: OpenFold3's Pairformer stack (the Batch pattern) on random
// single and pair representations of a fixed seed, or on s, z and a token mask read from a
// safetensors file (--input), printing the output norms and the time of the stack. Padding:
// --real-tokens L < N masks out the last N - L tokens of every structure (norms are over
// the real tokens). The embedders, MSA module and diffusion module are not in the engine yet.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/batch_cli.h"
#include "cli/command.h"
#include "cli/model_lookup.h"
#include "cli/variant_option.h"
#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/science/openfold3/openfold3_model.h"

namespace fk::cli {
namespace {

using nlohmann::json;

struct FoldCli {
  std::string model = "tiny-openfold3";
  std::string device = "auto";
  std::string dtype = "bf16";
  uint64_t seed = 0;
  int64_t batch = 1;
  int64_t tokens = 16;
  int64_t real_tokens = -1;  // -1: every token is real
  int64_t iters = 1;
  std::string input;
  std::string out;
  bool json_only = false;
  std::vector<std::string> variants;
};

// A host tensor of `dtype` from a safetensors tensor of any float dtype.
Tensor host_as(const safetensors::File& f, const std::string& name, DType dtype) {
  const TensorView v = f.view(name);
  FK_CHECK(dtype_is_float(v.dtype), "fold: input tensor '", name, "' must be a float tensor, got ", describe(v));
  Tensor t = Tensor::empty(Shape(v.shape, v.shape + v.rank), dtype);
  for (int64_t i = 0; i < t.numel(); ++i)
    store_element(static_cast<char*>(t.data()) + i * t.view().element_size(), dtype,
                  load_element(static_cast<const char*>(v.data) + i * v.element_size(), v.dtype));
  return t;
}

// The 2-norm of the real tokens' rows (and pairs) of the host copies of s and z.
std::pair<double, double> norms(const Tensor& s, const Tensor& z, const Tensor& mask, int64_t* non_finite) {
  const TensorView sv = s.view(), zv = z.view(), mv = mask.view();
  const int64_t B = sv.shape[0], N = sv.shape[1], Cs = sv.shape[2], Cz = zv.shape[3];
  double ss = 0, zz = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) {
      if (get(mv, b, i) == 0) continue;
      for (int64_t c = 0; c < Cs; ++c) {
        const double x = get(sv, b, i, c);
        *non_finite += std::isfinite(x) ? 0 : 1;
        ss += x * x;
      }
      for (int64_t j = 0; j < N; ++j) {
        if (get(mv, b, j) == 0) continue;
        for (int64_t c = 0; c < Cz; ++c) {
          const double x = get(zv, b, i, j, c);
          *non_finite += std::isfinite(x) ? 0 : 1;
          zz += x * x;
        }
      }
    }
  return {std::sqrt(ss), std::sqrt(zz)};
}

void run(const FoldCli& o) {
  select_variants(o.variants);
  std::string device = o.device;
  if (device == "auto") device = rt::cuda_available() ? "cuda" : "cpu";
  FK_CHECK(device == "cpu" || device == "cuda", "fold: --device must be cpu, cuda or auto, got ", o.device);
  FK_CHECK(o.dtype == "bf16" || o.dtype == "f16" || o.dtype == "f32", "fold: --dtype must be bf16, f16 or f32, got ",
           o.dtype);
  FK_CHECK(o.iters >= 1, "fold: --iters must be positive, got ", o.iters);
  const models::ModelSource src = lookup_model(o.model, models::RunPattern::batch, device, "fk fold");
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::science::OpenFold3Model*>(m.get());
  FK_CHECK(model != nullptr, "fold: model '", o.model, "' (architecture '", src.registration->architecture,
           "') is not a structure model this command runs");
  const models::science::OpenFold3Config& c = model->config();
  const DType dt = o.dtype == "bf16" ? DType::bf16 : o.dtype == "f16" ? DType::f16 : DType::f32;
  const Device dev = device == "cuda" ? Device::cuda() : Device::cpu();

  // Host inputs: s, z and the token mask.
  Tensor s, z, mask;
  if (!o.input.empty()) {
    const safetensors::File f = safetensors::File::open(o.input);
    for (const char* name : {"s", "z"})
      FK_CHECK(f.contains(name), "fold: ", o.input, " has no tensor '", name, "' (it needs s, z and optionally mask)");
    s = host_as(f, "s", dt);
    z = host_as(f, "z", dt);
    if (s.view().rank == 2) s = s.reshape({1, s.shape()[0], s.shape()[1]});
    if (z.view().rank == 3) z = z.reshape({1, z.shape()[0], z.shape()[1], z.shape()[2]});
    FK_CHECK(s.view().rank == 3, "fold: input s must be [N, c_s] or [B, N, c_s], got ", s.describe());
    const int64_t B = s.shape()[0], N = s.shape()[1];
    if (f.contains("mask")) {
      mask = host_as(f, "mask", dt);
      if (mask.view().rank == 1) mask = mask.reshape({1, mask.shape()[0]});
      FK_CHECK(mask.shape() == Shape({B, N}), "fold: input mask must be [", B, ", ", N, "] like s, got ",
               mask.describe());
    } else {
      mask = Tensor::empty({B, N}, dt);
      for (int64_t i = 0; i < B * N; ++i) set(mask.view(), 1.0, i / N, i % N);
    }
  } else {
    FK_CHECK(o.batch >= 1 && o.tokens >= 1, "fold: --batch and --tokens must be positive");
    const int64_t real = o.real_tokens < 0 ? o.tokens : o.real_tokens;
    FK_CHECK(real >= 1 && real <= o.tokens, "fold: --real-tokens must be in [1, --tokens], got ", o.real_tokens);
    s = Tensor::empty({o.batch, o.tokens, c.c_s}, dt);
    z = Tensor::empty({o.batch, o.tokens, o.tokens, c.c_z}, dt);
    fill_uniform(s, o.seed + 1, 0, -1.0f, 1.0f);
    fill_uniform(z, o.seed + 1, 1, -1.0f, 1.0f);
    mask = Tensor::empty({o.batch, o.tokens}, dt);
    for (int64_t b = 0; b < o.batch; ++b)
      for (int64_t i = 0; i < o.tokens; ++i) set(mask.view(), i < real ? 1.0 : 0.0, b, i);
  }
  const int64_t B = s.shape()[0], N = s.shape()[1];
  json real_tokens = json::array();  // per structure
  for (int64_t b = 0; b < B; ++b) {
    int64_t real = 0;
    for (int64_t i = 0; i < N; ++i) real += get(mask.view(), b, i) != 0;
    real_tokens.push_back(real);
  }
  FK_CHECK(N <= c.max_tokens, "fold: ", N, " tokens exceed the crop of model '", o.model, "' (", c.max_tokens,
           " tokens: its config's max_tokens)");
  Tensor pair_mask = Tensor::empty({B, N, N}, dt);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) set(pair_mask.view(), get(mask.view(), b, i) * get(mask.view(), b, j), b, i, j);

  models::LoadOptions lo;
  lo.device = dev;
  lo.dtype = dt;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_seqs = B;
  model->load(lo);
  auto on_device = [&](const Tensor& t) { return dev.is_cpu() ? t : t.to(dev); };
  const Tensor ds = on_device(s), dz = on_device(z), dm = on_device(mask), dpm = on_device(pair_mask);
  models::StepInputs in;
  in.tensors = {{"single", ds.view()}, {"pair", dz.view()}, {"single_mask", dm.view()}, {"pair_mask", dpm.view()}};
  auto fold_once = [&] {
    model->plan(in, nullptr);
    model->forward(in, nullptr);
    rt::stream_synchronize(nullptr);
  };
  const double seconds = median_run_seconds(o.iters, fold_once);

  Tensor hs = Tensor::empty({B, N, c.c_s}, dt), hz = Tensor::empty({B, N, N, c.c_z}, dt);
  const TensorView so = model->single_output(), zo = model->pair_output();
  rt::memcpy_sync(hs.data(), Device::cpu(), so.data, so.device, static_cast<size_t>(so.span_bytes()));
  rt::memcpy_sync(hz.data(), Device::cpu(), zo.data, zo.device, static_cast<size_t>(zo.span_bytes()));
  int64_t non_finite = 0;
  const auto [single_norm, pair_norm] = norms(hs, hz, mask, &non_finite);
  if (!o.out.empty())
    safetensors::save(o.out, {{"s", hs.view()}, {"z", hz.view()}, {"mask", mask.view()}});

  json j{{"model", o.model},
         {"architecture", src.registration->architecture},
         {"weights", src.preset ? "dummy" : "checkpoint"},
         {"inputs", o.input.empty() ? "random" : o.input},
         {"device", device},
         {"dtype", o.dtype},
         {"structures", B},
         {"tokens", N},
         {"real_tokens", real_tokens},
         {"blocks", c.no_blocks},
         {"seconds", seconds},  // the median run's (--iters)
         {"iters", o.iters},
         {"single_norm", single_norm},
         {"pair_norm", pair_norm},
         {"non_finite", non_finite},
         {"command", invoked_command()}};
  if (o.json_only) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("folded %lld x %lld tokens with %s on %s (%s): %lld Pairformer blocks in %.6f s; |s| %.6g, |z| %.6g%s\n",
              static_cast<long long>(B), static_cast<long long>(N), o.model.c_str(), device.c_str(), o.dtype.c_str(),
              static_cast<long long>(c.no_blocks), seconds, single_norm, pair_norm,
              non_finite ? " (NON-FINITE VALUES)" : "");
  FK_CHECK(non_finite == 0, "fold: ", non_finite, " output values are not finite");
}

void setup(CLI::App& app) {
  static FoldCli o;
  auto* cmd = app.add_subcommand("fold", "OpenFold3's Pairformer stack on random (or given) single and pair "
                                         "representations: output norms and time");
  cmd->add_option("--model", o.model, kModelHelp)->capture_default_str();
  cmd->add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
  cmd->add_option("--dtype", o.dtype, "Model dtype: bf16, f16 or f32")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of dummy weights and random inputs")->capture_default_str();
  cmd->add_option("--batch", o.batch, "Structures in the batch (random inputs)")->capture_default_str();
  cmd->add_option("--tokens", o.tokens, "Tokens per structure (random inputs)")->capture_default_str();
  cmd->add_option("--real-tokens", o.real_tokens, "Real tokens per structure; the rest are padding (masked)");
  cmd->add_option("--iters", o.iters, "Timed runs after a warm-up (seconds: their median); 1: one run, no warm-up")
      ->capture_default_str();
  cmd->add_option("--input", o.input, "A safetensors file of s [B, N, c_s], z [B, N, N, c_z], mask [B, N] (optional)");
  cmd->add_option("--out", o.out, "Write the outputs s and z (and the mask) to this safetensors file");
  cmd->add_flag("--json", o.json_only, "Print the summary as JSON");
  add_variant_option(cmd, o.variants);
  cmd->callback([] { run(o); });
}
FK_CLI_COMMAND(setup);

}  // namespace
}  // namespace fk::cli
