// Parsing and validating a safetensors header: everything that decides whether a file is
// well formed. Nothing here reads outside the given bytes, and every size is computed
// with overflow checks, so that hostile files produce errors, never crashes.
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/safetensors/strict_json.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::safetensors {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated not to overflow when parsed
  return n;
}

namespace {

using nlohmann::json;

[[noreturn]] void fail(std::string_view source, const std::string& msg) {
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": ", msg);
}

std::string tensor_ref(std::string_view name) { return concat("tensor '", printable(name), "'"); }

// A JSON number that is a non-negative integer fitting `max`; `what` names it in errors.
uint64_t non_negative_integer(const json& j, std::string_view source, const std::string& what, uint64_t max) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > max) fail(source, concat(what, " is ", v, ", larger than ", max));
    return v;
  }
  if (j.is_number_integer()) fail(source, concat(what, " is negative (", j.get<int64_t>(), ")"));
  fail(source, concat(what, " must be a non-negative integer, got ", json_type_name(j),
                      j.is_number_float() ? concat(" ", j.dump()) : ""));
}

Metadata parse_metadata(const json& j, std::string_view source) {
  Metadata m;
  if (j.is_null()) return m;
  if (!j.is_object()) fail(source, concat("'__metadata__' must be an object of strings, got ", json_type_name(j)));
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string())
      fail(source, concat("'__metadata__' entry '", printable(key), "' must be a string, got ", json_type_name(value)));
    m.emplace(key, value.get<std::string>());
  }
  return m;
}

TensorInfo parse_entry(const std::string& name, const json& j, uint64_t data_bytes, std::string_view source) {
  const std::string who = tensor_ref(name);
  if (!j.is_object()) fail(source, concat(who, ": entry must be an object, got ", json_type_name(j)));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!j.contains(key)) fail(source, concat(who, ": missing '", key, "'"));

  TensorInfo t;
  t.name = name;

  const json& dtype = j.at("dtype");
  if (!dtype.is_string()) fail(source, concat(who, ": 'dtype' must be a string, got ", json_type_name(dtype)));
  t.dtype_name = dtype.get<std::string>();
  const auto fmt = format_dtype(t.dtype_name);
  if (!fmt) fail(source, concat(who, ": unknown dtype '", t.dtype_name, "' (the format defines ", format_dtype_names(), ")"));
  t.dtype = fmt->dtype;
  t.bits = fmt->bits;

  const json& shape = j.at("shape");
  if (!shape.is_array()) fail(source, concat(who, ": 'shape' must be an array, got ", json_type_name(shape)));
  // Element count and size in bits, checked for overflow at every step: a hostile shape
  // must not wrap around to the byte length it claims.
  constexpr uint64_t kMaxDim = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const uint64_t d = non_negative_integer(shape[i], source, concat(who, ": shape[", i, "]"), kMaxDim);
    uint64_t next;
    if (__builtin_mul_overflow(numel, d, &next) || next > kMaxDim)
      fail(source, concat(who, ": shape ", shape.dump(), " overflows: its element count does not fit 63 bits"));
    numel = next;
    t.shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t bits;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(t.bits), &bits))
    fail(source, concat(who, ": shape ", shape.dump(), " overflows: its size in bits does not fit 64 bits"));
  if (bits % 8 != 0)
    fail(source, concat(who, ": shape ", shape.dump(), " x ", t.dtype_name, " (", t.bits,
                        " bits) is not a whole number of bytes"));
  const uint64_t expected_bytes = bits / 8;

  const json& offsets = j.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2)
    fail(source, concat(who, ": 'data_offsets' must be an array [begin, end], got ", offsets.dump()));
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  t.data_begin = non_negative_integer(offsets[0], source, concat(who, ": data_offsets begin"), kMax);
  t.data_end = non_negative_integer(offsets[1], source, concat(who, ": data_offsets end"), kMax);
  if (t.data_end < t.data_begin)
    fail(source, concat(who, ": data_offsets [", t.data_begin, ", ", t.data_end, "] end before they begin"));
  if (t.data_end > data_bytes)
    fail(source, concat(who, ": data_offsets [", t.data_begin, ", ", t.data_end,
                        "] out of range: the data buffer has ", data_bytes, " bytes"));
  if (t.nbytes() != expected_bytes)
    fail(source, concat(who, ": shape ", shape.dump(), " x ", t.dtype_name, " is ", expected_bytes,
                        " bytes but data_offsets [", t.data_begin, ", ", t.data_end, "] span ", t.nbytes()));
  return t;
}

// The tensors must tile the data buffer: sorted by offsets, each begins where the
// previous one ended and the last ends at the end of the buffer.
void check_coverage(const std::vector<TensorInfo>& tensors, uint64_t data_bytes, std::string_view source) {
  uint64_t covered = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : tensors) {
    if (t.data_begin < covered)
      fail(source, concat(tensor_ref(t.name), " (bytes [", t.data_begin, ", ", t.data_end, ")) overlaps ",
                          tensor_ref(prev->name), " (bytes [", prev->data_begin, ", ", prev->data_end, "))"));
    if (t.data_begin > covered)
      fail(source, concat("hole of ", t.data_begin - covered, " unreferenced bytes at data offset ", covered,
                          ", before ", tensor_ref(t.name),
                          ": the format requires tensors to cover the data buffer without gaps"));
    covered = t.data_end;
    prev = &t;
  }
  if (covered != data_bytes)
    fail(source, concat("hole of ", data_bytes - covered, " unreferenced bytes at the end of the data buffer (offset ",
                        covered, "): the format requires tensors to cover the data buffer without gaps"));
}

}  // namespace

Header parse_header(std::span<const uint8_t> file, std::string_view source) {
  if (file.size() < 8)
    fail(source, concat("file is truncated: ", file.size(), " bytes, too short for the 8-byte header length"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[static_cast<size_t>(i)];  // little-endian
  if (n > kMaxHeaderBytes)
    fail(source, concat("header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes"));
  if (n > file.size() - 8)
    fail(source, concat("header length ", n, " runs past the end of the file (", file.size(),
                        " bytes, so at most ", file.size() - 8, " bytes of header)"));

  Header h;
  h.header_bytes = n;
  h.data_bytes = file.size() - 8 - n;
  const std::string_view text(reinterpret_cast<const char*>(file.data() + 8), n);
  if (text.empty() || text.front() != '{')
    fail(source, "header must be a JSON object and start with '{'");
  const json root = parse_strict_json(text, source, "header");
  if (!root.is_object()) fail(source, concat("header must be a JSON object, got ", json_type_name(root)));

  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      h.metadata = parse_metadata(entry, source);
      continue;
    }
    h.tensors.push_back(parse_entry(name, entry, h.data_bytes, source));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.data_begin, a.data_end, a.name) < std::tie(b.data_begin, b.data_end, b.name);
  });
  check_coverage(h.tensors, h.data_bytes, source);
  return h;
}

}  // namespace fk::safetensors
