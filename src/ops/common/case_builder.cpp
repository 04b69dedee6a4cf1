#include "ops/common/case_builder.h"

namespace fk::ops {

namespace {
const Json& field(const Json& w, const char* key) {
  FK_CHECK(w.is_object(), "workload must be a JSON object, got ", w.dump());
  auto it = w.find(key);
  FK_CHECK(it != w.end(), "workload ", w.dump(), " has no field '", key, "'");
  return *it;
}
}  // namespace

int64_t wl_int(const Json& w, const char* key) {
  const Json& v = field(w, key);
  FK_CHECK(v.is_number_integer(), "workload field '", key, "' must be an integer, got ", v.dump());
  return v.get<int64_t>();
}

int64_t wl_int(const Json& w, const char* key, int64_t fallback) {
  return w.contains(key) ? wl_int(w, key) : fallback;
}

double wl_float(const Json& w, const char* key, double fallback) {
  if (!w.contains(key)) return fallback;
  const Json& v = w.at(key);
  FK_CHECK(v.is_number(), "workload field '", key, "' must be a number, got ", v.dump());
  return v.get<double>();
}

bool wl_bool(const Json& w, const char* key, bool fallback) {
  if (!w.contains(key)) return fallback;
  const Json& v = w.at(key);
  FK_CHECK(v.is_boolean(), "workload field '", key, "' must be true or false, got ", v.dump());
  return v.get<bool>();
}

std::string wl_string(const Json& w, const char* key, const std::string& fallback) {
  if (!w.contains(key)) return fallback;
  const Json& v = w.at(key);
  FK_CHECK(v.is_string(), "workload field '", key, "' must be a string, got ", v.dump());
  return v.get<std::string>();
}

DType wl_dtype(const Json& w, const char* key, DType fallback) {
  if (!w.contains(key)) return fallback;
  const Json& v = w.at(key);
  FK_CHECK(v.is_string(), "workload field '", key, "' must be a dtype name, got ", v.dump());
  auto t = dtype_from_name(v.get<std::string>());
  FK_CHECK(t.has_value(), "workload field '", key, "': unknown dtype '", v.get<std::string>(), "'");
  return *t;
}

std::vector<int64_t> wl_int_list(const Json& w, const char* key) {
  const Json& v = field(w, key);
  FK_CHECK(v.is_array(), "workload field '", key, "' must be a list of integers, got ", v.dump());
  std::vector<int64_t> out;
  for (const auto& e : v) {
    FK_CHECK(e.is_number_integer(), "workload field '", key, "' must hold integers, got ", e.dump());
    out.push_back(e.get<int64_t>());
  }
  return out;
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream_id, float lo, float hi) {
  Tensor t = Tensor::empty(shape, dtype);
  fill_uniform(t.view(), seed, stream_id, lo, hi);
  return t;
}

Tensor random_int_tensor(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream_id, int64_t lo,
                         int64_t hi) {
  Tensor t = Tensor::empty(shape, dtype);
  fill_int(t.view(), seed, stream_id, lo, hi);
  return t;
}

}  // namespace fk::ops
