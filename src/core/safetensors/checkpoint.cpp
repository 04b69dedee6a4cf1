// Checkpoints: a single safetensors file or shards listed by an index, opened lazily.
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/safetensors/strict_json.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::safetensors {

namespace fs = std::filesystem;

struct Checkpoint::State {
  fs::path path;  // the file or the index
  fs::path dir;   // shard names are relative to it
  bool sharded = false;
  std::string index_metadata_json = "{}";
  std::vector<std::string> shard_names;
  std::map<std::string, size_t, std::less<>> weight_map;  // tensor -> index into shard_names
  std::mutex mu;
  std::vector<std::optional<File>> shards;  // same order as shard_names; filled lazily
};

namespace {

constexpr uintmax_t kMaxIndexBytes = 100'000'000;

[[noreturn]] void fail(const fs::path& source, const std::string& msg) {
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, source.string(), ": ", msg);
}

std::string read_text(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(path, concat("cannot read: ", ec.message()));
  if (size > kMaxIndexBytes) fail(path, concat("index is ", size, " bytes, more than the ", kMaxIndexBytes, " allowed"));
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Shard names come from the index file: keep them inside the checkpoint's directory.
void check_shard_name(const std::string& shard, const std::string& tensor, const fs::path& index) {
  const fs::path p(shard);
  bool escapes = shard.empty() || p.is_absolute() || p.has_root_name();
  for (const auto& part : p) escapes |= part == "..";
  if (escapes)
    fail(index, concat("weight_map entry for tensor '", tensor, "' names shard '", shard,
                       "', which is not a relative path inside the checkpoint directory"));
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Checkpoint Checkpoint::from_file(File file) {
  auto s = std::make_shared<State>();
  s->path = file.source();
  s->dir = s->path.parent_path();
  s->shard_names = {s->path.filename().string()};
  for (const TensorInfo& t : file.tensors()) s->weight_map.emplace(t.name, 0);
  s->shards.emplace_back(std::move(file));
  return Checkpoint(std::move(s));
}

Checkpoint Checkpoint::open_file(const fs::path& path) { return from_file(File::open(path)); }

Checkpoint Checkpoint::open_index(const fs::path& index_path) {
  const nlohmann::json root = parse_strict_json(read_text(index_path), index_path.string(), "index");
  if (!root.is_object()) fail(index_path, concat("index must be a JSON object, got ", json_type_name(root)));
  if (!root.contains("weight_map")) fail(index_path, "index has no 'weight_map'");
  const nlohmann::json& map = root.at("weight_map");
  if (!map.is_object()) fail(index_path, concat("'weight_map' must be an object, got ", json_type_name(map)));

  auto s = std::make_shared<State>();
  s->path = index_path;
  s->dir = index_path.parent_path();
  s->sharded = true;
  if (root.contains("metadata")) {
    if (!root.at("metadata").is_object() && !root.at("metadata").is_null())
      fail(index_path, concat("'metadata' must be an object, got ", json_type_name(root.at("metadata"))));
    s->index_metadata_json = root.at("metadata").is_null() ? "{}" : root.at("metadata").dump();
  }
  // Shards are numbered in name order (model-00001-of-00004 first).
  std::map<std::string, size_t> shard_ids;
  for (const auto& [tensor, shard] : map.items()) {
    if (!shard.is_string())
      fail(index_path, concat("weight_map entry for tensor '", tensor, "' must be a file name, got ",
                              json_type_name(shard)));
    check_shard_name(shard.get_ref<const std::string&>(), tensor, index_path);
    shard_ids.emplace(shard.get<std::string>(), 0);
  }
  for (auto& [name, id] : shard_ids) {
    id = s->shard_names.size();
    s->shard_names.push_back(name);
  }
  for (const auto& [tensor, shard] : map.items())
    s->weight_map.emplace(tensor, shard_ids.at(shard.get<std::string>()));
  s->shards.resize(s->shard_names.size());
  return Checkpoint(std::move(s));
}

Checkpoint Checkpoint::open(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) FK_FAIL(FK_ERR_INVALID_ARGUMENT, path.string(), ": no such file or directory");
  if (!fs::is_directory(path, ec)) {
    return ends_with(path.filename().string(), ".json") ? open_index(path) : open_file(path);
  }
  if (fs::is_regular_file(path / "model.safetensors", ec)) return open_file(path / "model.safetensors");
  if (fs::is_regular_file(path / "model.safetensors.index.json", ec))
    return open_index(path / "model.safetensors.index.json");
  // Other model kinds name their weights differently (diffusion_pytorch_model.safetensors):
  // accept the only index, else the only file.
  std::vector<fs::path> indexes, files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const std::string name = entry.path().filename().string();
    if (ends_with(name, ".safetensors.index.json")) indexes.push_back(entry.path());
    if (ends_with(name, ".safetensors")) files.push_back(entry.path());
  }
  if (indexes.size() == 1) return open_index(indexes[0]);
  if (indexes.empty() && files.size() == 1) return open_file(files[0]);
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, path.string(),
          ": no checkpoint found: expected model.safetensors or model.safetensors.index.json (or a single "
          "*.safetensors.index.json or *.safetensors file); found ",
          indexes.size(), " index files and ", files.size(), " .safetensors files");
}

const fs::path& Checkpoint::path() const { return state_->path; }
bool Checkpoint::sharded() const { return state_->sharded; }
std::vector<std::string> Checkpoint::shard_names() const { return state_->shard_names; }
const std::string& Checkpoint::index_metadata_json() const { return state_->index_metadata_json; }

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(state_->weight_map.size());
  for (const auto& [name, shard] : state_->weight_map) out.push_back(name);
  return out;
}

bool Checkpoint::contains(std::string_view name) const { return state_->weight_map.count(name) != 0; }

namespace {
std::map<std::string, size_t, std::less<>>::const_iterator find_tensor(const Checkpoint::State& s,
                                                                       std::string_view name) {
  auto it = s.weight_map.find(name);
  if (it == s.weight_map.end())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, s.path.string(), ": no tensor '", name, "' in the checkpoint (",
            s.weight_map.size(), " tensors)");
  return it;
}
}  // namespace

const std::string& Checkpoint::shard_name(std::string_view name) const {
  return state_->shard_names[find_tensor(*state_, name)->second];
}

const File& Checkpoint::file_for(std::string_view name) const {
  State& s = *state_;
  auto it = find_tensor(s, name);
  std::lock_guard<std::mutex> lock(s.mu);
  std::optional<File>& shard = s.shards[it->second];
  if (!shard) shard = File::open(s.dir / s.shard_names[it->second]);
  if (!shard->contains(name))
    fail(s.path, concat("the index puts tensor '", name, "' in shard '", s.shard_names[it->second],
                        "', which does not contain it"));
  return *shard;
}

void Checkpoint::validate_all() const {
  State& s = *state_;
  for (const auto& [name, shard] : s.weight_map) file_for(name);
  std::lock_guard<std::mutex> lock(s.mu);
  for (size_t i = 0; i < s.shards.size(); ++i) {
    if (!s.shards[i]) s.shards[i] = File::open(s.dir / s.shard_names[i]);
    for (const TensorInfo& t : s.shards[i]->tensors()) {
      auto it = s.weight_map.find(t.name);
      if (it == s.weight_map.end())
        fail(s.path, concat("shard '", s.shard_names[i], "' holds tensor '", t.name, "', which the index does not list"));
      if (it->second != i)
        fail(s.path, concat("tensor '", t.name, "' is in shard '", s.shard_names[i], "' but the index puts it in '",
                            s.shard_names[it->second], "'"));
    }
  }
}

}  // namespace fk::safetensors
