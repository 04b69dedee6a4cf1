// What `fk tensors` prints: a validated checkpoint's tensors with sizes and checksums.
// In the library (not the CLI) so that tests check the listing itself.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/safetensors/safetensors.h"

namespace fk::safetensors {

struct TensorRow {
  std::string name;
  std::string dtype;  // the format's name: "BF16"
  Shape shape;
  uint64_t bytes = 0;
  std::optional<uint64_t> checksum;  // content_hash64, when asked for
  std::string shard;                 // file name of the shard holding it
};

struct ShardSummary {
  std::string file;
  size_t tensors = 0;
  uint64_t bytes = 0;  // data bytes
  Metadata metadata;
};

struct TensorListing {
  std::string path;
  bool sharded = false;
  std::string index_metadata_json = "{}";
  std::vector<ShardSummary> shards;
  std::vector<TensorRow> tensors;  // sorted by name
  uint64_t total_bytes = 0;
  uint64_t total_elements = 0;
};

// Opens `path` (file, index or directory), validates every shard against the index, and
// lists the tensors. Throws the validation error for a malformed checkpoint.
TensorListing list_tensors(const std::filesystem::path& path, bool with_checksums = true);

std::string format_listing_text(const TensorListing& listing);
nlohmann::json listing_to_json(const TensorListing& listing);

}  // namespace fk::safetensors
