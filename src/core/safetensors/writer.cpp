// Writing safetensors files.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "fk/runtime.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::safetensors {

namespace {

void check_writable(const NamedViews& tensors) {
  std::set<std::string_view> seen;
  for (const auto& [name, v] : tensors) {
    FK_CHECK(name != "__metadata__", "safetensors: '__metadata__' is reserved and cannot name a tensor");
    FK_CHECK(seen.insert(name).second, "safetensors: tensor '", name, "' is given twice");
    FK_CHECK(dtype_is_valid(v.dtype), "safetensors: tensor '", name, "' has an invalid dtype");
    FK_CHECK(v.rank >= 0 && v.rank <= kMaxRank, "safetensors: tensor '", name, "' has rank ", v.rank);
    for (int i = 0; i < v.rank; ++i)
      FK_CHECK(v.shape[i] >= 0, "safetensors: tensor '", name, "' has a negative dimension");
    FK_CHECK(v.is_contiguous(), "safetensors: tensor '", name, "' (", describe(v),
             ") is not contiguous; make a contiguous copy first");
    FK_CHECK(v.numel() == 0 || v.data != nullptr, "safetensors: tensor '", name, "' has no data");
  }
}

}  // namespace

std::vector<uint8_t> serialize(const NamedViews& tensors, const Metadata& metadata) {
  check_writable(tensors);
  // Data order: larger elements first, then by name. Every size is a power of two <= 8
  // and the data buffer starts 8-aligned, so each tensor lands aligned to its element.
  std::vector<const std::pair<std::string, TensorView>*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    const size_t sa = dtype_size(a->second.dtype), sb = dtype_size(b->second.dtype);
    return sa != sb ? sa > sb : a->first < b->first;
  });

  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) {
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto* t : order) {
    const TensorView& v = t->second;
    const uint64_t n = static_cast<uint64_t>(v.nbytes());
    header[t->first] = {{"dtype", dtype_safetensors_name(v.dtype)},
                        {"shape", Shape(v.shape, v.shape + v.rank)},
                        {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // names or metadata that are not UTF-8
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "safetensors: cannot write the header: ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data buffer starts 8-aligned

  std::vector<uint8_t> out(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));  // little-endian
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* data = out.data() + 8 + text.size();
  for (const auto* t : order) {
    const TensorView& v = t->second;
    const size_t bytes = static_cast<size_t>(v.nbytes());
    if (bytes) rt::memcpy_sync(data, Device::cpu(), v.data, v.device, bytes);
    data += bytes;
  }
  return out;
}

void save(const std::filesystem::path& path, const NamedViews& tensors, const Metadata& metadata) {
  const std::vector<uint8_t> bytes = serialize(tensors, metadata);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) FK_FAIL(FK_ERR_INVALID_ARGUMENT, tmp.string(), ": cannot open for writing");
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) FK_FAIL(FK_ERR_INTERNAL, tmp.string(), ": write of ", bytes.size(), " bytes failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    FK_FAIL(FK_ERR_INTERNAL, path.string(), ": cannot move the written file into place: ", ec.message());
  }
}

}  // namespace fk::safetensors
