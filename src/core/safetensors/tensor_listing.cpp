#include "core/safetensors/tensor_listing.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "fk/status.h"

namespace fk::safetensors {

TensorListing list_tensors(const std::filesystem::path& path, bool with_checksums) {
  const Checkpoint ckpt = Checkpoint::open(path);
  ckpt.validate_all();
  TensorListing out;
  out.path = ckpt.path().string();
  out.sharded = ckpt.sharded();
  out.index_metadata_json = ckpt.index_metadata_json();
  std::map<std::string, size_t> shard_pos;
  for (const std::string& s : ckpt.shard_names()) {
    shard_pos.emplace(s, out.shards.size());
    out.shards.push_back({s, 0, 0, {}});
  }
  for (const std::string& name : ckpt.names()) {
    const File& file = ckpt.file_for(name);
    const TensorInfo& t = file.info(name);
    TensorRow row;
    row.name = name;
    row.dtype = t.dtype_name;
    row.shape = t.shape;
    row.bytes = t.nbytes();
    if (with_checksums) row.checksum = file.checksum(name);
    row.shard = ckpt.shard_name(name);
    ShardSummary& shard = out.shards[shard_pos.at(row.shard)];
    if (shard.tensors++ == 0) shard.metadata = file.metadata();
    shard.bytes += row.bytes;
    out.total_bytes += row.bytes;
    out.total_elements += static_cast<uint64_t>(t.numel());
    out.tensors.push_back(std::move(row));
  }
  return out;
}

namespace {
std::string shape_text(const Shape& shape) { return shape_to_string(shape.data(), static_cast<int>(shape.size())); }

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}
}  // namespace

std::string format_listing_text(const TensorListing& l) {
  size_t name_w = 4, dtype_w = 5, shape_w = 5, shard_w = 5;
  for (const TensorRow& r : l.tensors) {
    name_w = std::max(name_w, r.name.size());
    dtype_w = std::max(dtype_w, r.dtype.size());
    shape_w = std::max(shape_w, shape_text(r.shape).size());
    shard_w = std::max(shard_w, r.shard.size());
  }
  std::string out = concat(l.path, ": ", l.sharded ? concat("sharded checkpoint, ", l.shards.size(), " shards")
                                                    : std::string("safetensors file"), "\n");
  for (const ShardSummary& s : l.shards)
    for (const auto& [k, v] : s.metadata) out += concat("  metadata", l.sharded ? concat(" [", s.file, "]") : "", " ", k, " = ", v, "\n");

  char line[64];
  auto row = [&](const std::string& name, const std::string& dtype, const std::string& shape, const std::string& bytes,
                 const std::string& checksum, const std::string& shard) {
    std::string s = name;
    s.append(name_w - name.size() + 2, ' ');
    s += dtype;
    s.append(dtype_w - dtype.size() + 2, ' ');
    s += shape;
    s.append(shape_w - shape.size() + 2, ' ');
    std::snprintf(line, sizeof line, "%14s  ", bytes.c_str());
    s += line;
    s += checksum;
    if (l.sharded) s += concat(checksum.empty() ? "" : "  ", shard);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  const bool with_checksums = !l.tensors.empty() && l.tensors.front().checksum.has_value();
  out += row("name", "dtype", "shape", "bytes", with_checksums ? "xxh64           " : "", "shard");
  for (const TensorRow& r : l.tensors)
    out += row(r.name, r.dtype, shape_text(r.shape), std::to_string(r.bytes),
               r.checksum ? hash_hex(*r.checksum) : "", r.shard);
  out += concat(l.tensors.size(), " tensors, ", l.total_elements, " elements, ", l.total_bytes, " bytes (",
                human_bytes(l.total_bytes), ") in ", l.shards.size(), l.shards.size() == 1 ? " file" : " files", "\n");
  return out;
}

nlohmann::json listing_to_json(const TensorListing& l) {
  nlohmann::json j;
  j["path"] = l.path;
  j["sharded"] = l.sharded;
  j["index_metadata"] = nlohmann::json::parse(l.index_metadata_json);
  j["shards"] = nlohmann::json::array();
  for (const ShardSummary& s : l.shards)
    j["shards"].push_back({{"file", s.file}, {"tensors", s.tensors}, {"bytes", s.bytes}, {"metadata", s.metadata}});
  j["tensors"] = nlohmann::json::array();
  for (const TensorRow& r : l.tensors) {
    nlohmann::json t = {{"name", r.name}, {"dtype", r.dtype}, {"shape", r.shape}, {"bytes", r.bytes}, {"shard", r.shard}};
    if (r.checksum) t["xxh64"] = hash_hex(*r.checksum);
    j["tensors"].push_back(std::move(t));
  }
  j["num_tensors"] = l.tensors.size();
  j["total_elements"] = l.total_elements;
  j["total_bytes"] = l.total_bytes;
  return j;
}

}  // namespace fk::safetensors
