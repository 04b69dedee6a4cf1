#include "ops/activation/activation_defs.h"

namespace fk::ops {

ActShape act_shape(const Json& w, const char* op, const char* cols_key) {
  ActShape s{wl_int(w, "tokens"), wl_int(w, cols_key), wl_dtype(w)};
  FK_CHECK(s.tokens >= 0 && s.cols > 0, op, " workload needs tokens >= 0 and ", cols_key, " > 0, got ", w.dump());
  FK_CHECK(s.dtype == DType::f32 || s.dtype == DType::f16 || s.dtype == DType::bf16, op,
           " workload dtype must be f32, f16 or bf16, got ", w.dump());
  return s;
}

GeluApprox wl_gelu_approx(const Json& w, const char* op) {
  const std::string a = wl_string(w, "approximate", "none");
  if (a == "none") return GeluApprox::none;
  if (a == "tanh") return GeluApprox::tanh;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, op, " workload: approximate must be \"none\" or \"tanh\", got \"", a, "\"");
}

std::vector<Json> activation_test_workloads(const char* cols_key) {
  const std::string c = cols_key;
  return {
      {{"tokens", 1}, {c, 8}},                        // one 16-byte vector
      {{"tokens", 3}, {c, 14336}},                    // the production row, several blocks per row
      {{"tokens", 100}, {c, 14336}},                  // a decode batch between the two launch shapes
      {{"tokens", 5}, {c, 1000}},                     // ragged last block
      {{"tokens", 1}, {c, 100000}},                   // one long row over many blocks
      {{"tokens", 33}, {c, 2048}, {"dtype", "f16"}},  // f16
      {{"tokens", 4}, {c, 1536}, {"dtype", "f32"}},   // f32 (precise math path)
      {{"tokens", 2}, {c, 3}},                        // not a multiple of the vector: scalar
      {{"tokens", 2}, {c, 12}},                       // even but not a multiple of 8: scalar
      {{"tokens", 7}, {c, 4099}, {"dtype", "f16"}},   // scalar, long row
      {{"tokens", 0}, {c, 128}},                      // nothing to do
  };
}

}  // namespace fk::ops
