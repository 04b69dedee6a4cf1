#include "harness/capture/capture.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <optional>

#include "core/status_line.h"
#include "harness/capture/call_gpu_time.h"
#include "harness/e2e/model_identity.h"
#include "fk/op_registry.h"
#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

std::optional<json> workload_of_call(const OpDef& def, const void* args) {
  if (!def.workload_from_call) return std::nullopt;
  return def.workload_from_call(args);
}

namespace {

// One observed call. A layer op's parts are calls of their own, nested in it: the kernel
// trace gives each call the kernels that ran while it was the innermost open call, so an
// op's time is its own kernels plus its nested calls' time (wall clock already includes them).
struct CallNode {
  CapturedOp* op;
  const std::string* key;  // the call's workload in op->seconds (map keys are stable)
  int64_t parent = -1;
  double own_seconds = 0;  // kernel time while innermost (traced), or wall time
};

}  // namespace

CaptureResult capture_calls(const std::function<void()>& run, bool on_gpu, std::string category) {
  std::map<std::string, CapturedOp> by_op;
  std::vector<CallNode> nodes;
  // Calls reported but whose enclosing call (if any) is not yet: per depth, since the
  // observer hears of a call after it returns, a call's parts come before it.
  std::vector<std::vector<int64_t>> waiting_parent;
  std::optional<CallGpuTimer> gpu;  // after what its sinks write to: it goes first
  if (on_gpu) gpu.emplace();
  const bool traced = gpu && gpu->available();
  OpRegistry::global().set_call_observer([&](const OpDef& def, DeviceType, const void* args, double seconds) {
    CapturedOp& c = by_op[def.name];
    c.op = def.name;
    c.level = def.level;
    c.calls++;
    const auto w = workload_of_call(def, args);
    const json shape = w ? *w : json{{"untranslated", true}};
    auto [it, fresh] = c.workloads.try_emplace(shape.dump(), shape, 0);
    const std::string& key = it->first;
    it->second.second++;
    c.wall_seconds[key] += seconds;
    c.total_wall_seconds += seconds;
    c.seconds.try_emplace(key, 0.0);

    const auto index = static_cast<int64_t>(nodes.size());
    nodes.push_back({&c, &key, -1, traced ? 0.0 : seconds});
    const auto depth = static_cast<size_t>(OpRegistry::observed_call_depth());
    if (waiting_parent.size() < depth + 2) waiting_parent.resize(depth + 2);
    for (int64_t child : waiting_parent[depth + 1]) nodes[static_cast<size_t>(child)].parent = index;
    waiting_parent[depth + 1].clear();
    if (depth > 0) waiting_parent[depth].push_back(index);
    if (traced) gpu->call_ended([&nodes, index](double kernel_seconds) {
      nodes[static_cast<size_t>(index)].own_seconds += kernel_seconds;
    });
  });
  struct Reset {
    ~Reset() { OpRegistry::global().set_call_observer(nullptr); }
  } reset;
  run();
  if (traced) gpu->flush();

  CaptureResult out;
  // Parts come before the call that encloses them, so one pass in call order carries each
  // call's whole time up to its parent before the parent's is read.
  std::vector<double> inclusive(nodes.size(), 0.0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const CallNode& n = nodes[i];
    inclusive[i] += n.own_seconds;
    if (traced && n.parent >= 0) inclusive[static_cast<size_t>(n.parent)] += inclusive[i];
    n.op->seconds[*n.key] += inclusive[i];
    n.op->total_seconds += inclusive[i];
    if (n.parent < 0) {
      n.op->top_level_seconds += inclusive[i];
      out.total_seconds += inclusive[i];
    }
  }
  out.time_source = traced ? "kernel trace" : "wall clock";
  out.category = std::move(category);
  for (auto& [name, c] : by_op) out.ops.push_back(std::move(c));
  std::sort(out.ops.begin(), out.ops.end(),
            [](const CapturedOp& a, const CapturedOp& b) { return a.total_seconds > b.total_seconds; });
  return out;
}

CaptureResult capture_workload(engine::EngineConfig config, const WorkloadSpec& workload) {
  config.cuda_graphs = false;  // a replayed graph calls no op: nothing could be observed
  engine::Engine e(config);
  return capture_calls(
      [&] {
        engine::SamplingParams sp;
        sp.temperature = 0;
        sp.ignore_eos = true;
        const auto requests = make_requests(workload, e.spec().config.vocab_size, e.max_model_len());
        for (const WorkloadRequest& r : requests) {
          sp.max_tokens = r.max_tokens;
          e.add_request(r.prompt, sp);
        }
        StatusLine status;  // a long workload's progress on a terminal
        size_t done = 0;
        while (e.has_unfinished()) {
          done += e.step().size();
          status.show(concat("[fk] capture ", workload.name, ": ", done, "/", requests.size(), " requests done"));
        }
      },
      config.backend == DeviceType::cuda, model_category(e.spec().config));
}

json CaptureResult::to_json() const {
  json ops_json = json::array();
  for (const CapturedOp& c : ops) {
    json ws = json::array();
    for (const auto& [key, wc] : c.workloads)
      ws.push_back({{"shape", wc.first},
                    {"calls", wc.second},
                    {"seconds", c.seconds.at(key)},
                    {"wall_seconds", c.wall_seconds.at(key)}});
    ops_json.push_back({{"op", c.op},
                        {"calls", c.calls},
                        {"seconds", c.total_seconds},
                        {"wall_seconds", c.total_wall_seconds},
                        {"time_share", total_seconds > 0 ? c.total_seconds / total_seconds : 0.0},
                        {"workloads", ws}});
  }
  return {{"total_op_seconds", total_seconds}, {"time_source", time_source}, {"ops", ops_json}};
}

std::vector<std::filesystem::path> write_task_files(const CaptureResult& r, const std::string& model,
                                                    const std::string& workload, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> written;
  for (const CapturedOp& c : r.ops) {
    json workloads = json::array();
    // Most time first: the shapes that matter most lead the task.
    std::vector<std::pair<double, std::string>> keys;
    for (const auto& [key, s] : c.seconds) keys.push_back({s, key});
    std::sort(keys.rbegin(), keys.rend());
    for (const auto& [seconds, key] : keys) {
      const auto& [shape, calls] = c.workloads.at(key);
      if (shape.contains("untranslated")) continue;
      workloads.push_back({{"shape", shape},
                           {"calls", calls},
                           {"label", concat(model, " ", workload, ": ", calls, " calls, ",
                                            r.total_seconds > 0 ? 100.0 * seconds / r.total_seconds : 0.0,
                                            "% of op time")}});
    }
    if (workloads.empty()) continue;
    const json task = {{"id", c.op},
                       {"op", c.op},
                       {"level", c.level},
                       {"category", r.category},
                       {"architectures", {model}},
                       {"description", concat("Captured by fk capture from ", model, " on workload ", workload, ".")},
                       {"workloads", workloads}};
    const std::filesystem::path p = dir / (c.op + ".json");
    std::ofstream(p) << task.dump(2) << "\n";
    written.push_back(p);
  }
  return written;
}

int64_t workload_count(std::string_view text, const std::string& refusal) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  FK_CHECK(ec == std::errc() && end == text.data() + text.size() && v > 0, refusal);
  return v;
}

}  // namespace fk::e2e
