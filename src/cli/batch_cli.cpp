#include "cli/batch_cli.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/time/timed_calls.h"

namespace fk::cli {

std::string batch_device(const std::string& device, const char* command) {
  if (device == "auto") return rt::cuda_available() ? "cuda" : "cpu";
  FK_CHECK(device == "cpu" || device == "cuda", command, ": --device must be cpu, cuda or auto, got ", device);
  return device;
}

DType batch_dtype16(const std::string& dtype, const char* command) {
  FK_CHECK(dtype == "f16" || dtype == "bf16", command, ": --dtype must be f16 or bf16, got ", dtype);
  return dtype == "f16" ? DType::f16 : DType::bf16;
}

int64_t image_batch(int64_t batch, const std::vector<std::string>& image_files, const char* command) {
  FK_CHECK(batch >= 1 || batch == -1, command, ": --batch must be positive, got ", batch);
  const int64_t files = static_cast<int64_t>(image_files.size());
  FK_CHECK(files == 0 || batch == -1 || batch == files, command, ": --batch ", batch, " disagrees with the ", files,
           " --image files");
  return files > 0 ? files : std::max<int64_t>(batch, 1);
}

double median_run_seconds(int64_t iters, const std::function<void()>& run) {
  std::vector<double> seconds = bench::time_calls(iters > 1 ? 1 : 0, iters, run);
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

void emit_json(const nlohmann::json& j, const std::string& json_out, const char* command, const std::string& done) {
  const std::string text = j.dump(1);
  if (json_out.empty()) {
    std::printf("%s\n", text.c_str());
    return;
  }
  std::ofstream f(json_out);
  FK_CHECK(f.good(), command, ": cannot write ", json_out);
  f << text << "\n";
  FK_CHECK(f.good(), command, ": cannot write ", json_out);
  std::printf("%s; JSON in %s\n", done.c_str(), json_out.c_str());
}

}  // namespace fk::cli
