// What differs between the kinds of model `fk e2e eval` judges, in one place: which kind a
// model is, its workload's description, folding a side's repeated runs and comparing the
// two sides. Generate models (e2e_run.h) and text encoders (e2e_batch_run.h) keep their
// own fold and comparison (repeat_runs.h, e2e_compare.h); FLUX.1 (e2e_denoise_run.h), the
// detectors (e2e_detect_run.h), DLRM (e2e_recommend_run.h) and the image classifiers
// (e2e_classify_run.h) time one fixed piece of work per run and compare their outputs with
// the baseline run's.
#pragma once
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/tensor.h"
#include "harness/sandbox/candidate.h"

namespace fk::e2e {

enum class E2eKind { generate, text_encoder, denoise, detect, recommend, classify };

// From the model's registration (and, for a Batch model, whether it is a detector, a
// recommendation model or an image classifier).
E2eKind e2e_kind(const std::string& model);

// The workload as the report records it; throws naming a workload the model's kind does
// not take.
nlohmann::json e2e_workload_json(const std::string& model, const std::string& workload);

// Loads each op=library candidate and installs it in the op registry for `backend`; the
// libraries stay loaded while the result lives.
std::vector<std::unique_ptr<bench::LoadedCandidate>> install_candidates(
    const std::vector<std::pair<std::string, std::filesystem::path>>& installs, DeviceType backend);

// The two sides' folded runs (repeat_runs.h) compared: e2e_compare.h's compare_runs, or the
// Batch, Denoise and detector patterns' own comparison.
nlohmann::json compare_pattern_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

// Output agreement of two equally long float vectors: ||a - b|| / ||a||, the cosine and
// the largest |a - b|. NaN or Inf anywhere gives a NaN relative error (no bound passes it).
struct Agreement {
  double rel_l2 = 0, cosine = 1, max_abs = 0;
};
Agreement agreement(const std::vector<float>& baseline, const std::vector<float>& candidate);

// A contiguous tensor view (any float dtype, host or device) as floats on the host.
std::vector<float> host_floats(const TensorView& v);
// `values` as an f32 host tensor of `shape` (what a run writes for the other side to read).
Tensor host_f32(const std::vector<float>& values, const Shape& shape);

// Whether `value` is within `bound` (false for NaN).
inline bool within(double value, double bound) { return value <= bound; }

}  // namespace fk::e2e
