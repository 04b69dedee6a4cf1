// The safetensors checkpoint format: reading (memory-mapped, validated, zero-copy views),
// writing, and sharded checkpoints (`model.safetensors.index.json`).
//
// A file is: 8 bytes little-endian N, N bytes of JSON header, then the data buffer. The
// header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} with
// offsets relative to the data buffer, plus an optional "__metadata__" string map.
//
// Validation follows the reference implementation and is strict: a file that opens here
// is fully described by its header. In particular the tensors must cover the data buffer
// exactly, without overlaps and without holes (unreferenced bytes are rejected, as the
// reference implementation does), duplicate keys in the JSON are rejected (a plain JSON
// parser would silently keep one of them), and every size computation is checked for
// overflow. Every problem is an fk::Error (FK_ERR_INVALID_ARGUMENT for a malformed file)
// naming the file and, where there is one, the tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fk/status.h"
#include "fk/tensor.h"

namespace fk::safetensors {

// Headers larger than this are rejected before anything is allocated for them (the same
// limit as the reference implementation).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A dtype as the format names it. Some safetensors dtypes (I16, U32, F8_E8M0, F4, ...)
// have no fastkernels DType: such files still open and validate, their tensors can be
// listed and read as bytes, but not viewed or loaded as typed tensors.
struct FormatDType {
  std::string_view name;       // "BF16"
  uint32_t bits = 0;           // bits per element (4 and 6 for the packed sub-byte types)
  std::optional<DType> dtype;  // the fastkernels type, when there is one
};
// nullopt for names the format does not define.
std::optional<FormatDType> format_dtype(std::string_view name);
// Every dtype name the format defines, for error messages.
std::string format_dtype_names();

struct TensorInfo {
  std::string name;
  std::string dtype_name;      // as written in the header: "BF16"
  std::optional<DType> dtype;  // nullopt: a format dtype without a fastkernels type
  uint32_t bits = 0;           // bits per element
  Shape shape;
  uint64_t data_begin = 0;     // byte offsets relative to the data buffer
  uint64_t data_end = 0;

  uint64_t nbytes() const { return data_end - data_begin; }
  int64_t numel() const;
};

using Metadata = std::map<std::string, std::string>;

// A validated header.
struct Header {
  std::vector<TensorInfo> tensors;  // in data-offset order
  Metadata metadata;                // "__metadata__", empty when absent
  uint64_t header_bytes = 0;        // N: the JSON header's length, padding included
  uint64_t data_bytes = 0;          // length of the data buffer
  uint64_t data_start() const { return 8 + header_bytes; }
};

// Parses and validates a whole file held in memory. `source` names the file in errors.
// Reads nothing outside `file`; every malformation is an fk::Error.
Header parse_header(std::span<const uint8_t> file, std::string_view source);

// 64-bit content hash of a byte range: XXH64 with seed 0, so that `xxhsum -H64` over a
// tensor's bytes gives the same value. What `fk tensors` reports per tensor.
uint64_t content_hash64(const void* data, size_t bytes, uint64_t seed = 0);
std::string hash_hex(uint64_t hash);  // 16 lower-case hex digits

// One safetensors file: the bytes (memory-mapped, or owned in memory) and its validated
// header. Copies are cheap and share the bytes; views returned by view() and bytes() stay
// valid as long as any copy of the File lives (keep_alive() hands out that ownership).
class File {
 public:
  // Maps `path` read-only and validates it. The file must not be modified while mapped.
  static File open(const std::filesystem::path& path);
  // Takes a whole file's bytes (tests, fuzzing, files received over a network).
  static File from_bytes(std::vector<uint8_t> bytes, std::string source = "<memory>");

  const std::string& source() const;
  const Header& header() const;
  const Metadata& metadata() const { return header().metadata; }
  const std::vector<TensorInfo>& tensors() const { return header().tensors; }
  size_t size() const { return tensors().size(); }
  std::vector<std::string> names() const;  // sorted

  bool contains(std::string_view name) const;
  // Throws an fk::Error naming the file when there is no tensor `name`.
  const TensorInfo& info(std::string_view name) const;
  // The tensor's raw bytes, for any dtype.
  std::span<const uint8_t> bytes(std::string_view name) const;
  // Zero-copy CPU view into the file. Needs a fastkernels dtype, rank <= kMaxRank, and
  // data aligned to the element size (files written by the reference writer or save()
  // always are); otherwise use upload(), which copies.
  TensorView view(std::string_view name) const;
  // An owning copy on `device` (CPU or CUDA). The copy is issued on `stream` and has
  // completed when this returns.
  Tensor upload(std::string_view name, Device device = Device::cpu(), void* stream = nullptr) const;
  Tensor load_tensor(std::string_view name) const { return upload(name, Device::cpu()); }
  uint64_t checksum(std::string_view name) const;  // content_hash64 of bytes(name)

  // Shared ownership of the underlying bytes: hold it to keep views valid.
  std::shared_ptr<const void> keep_alive() const;

 private:
  struct State;
  explicit File(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  const State& state() const;
  std::shared_ptr<const State> state_;
};

// Tensors to write, in any order; names must be unique and not "__metadata__". Views
// must be contiguous; CUDA views are copied to the host first.
using NamedViews = std::vector<std::pair<std::string, TensorView>>;

// The bytes of a safetensors file holding `tensors`. The header is padded with spaces to
// a multiple of 8 bytes and the data is laid out by decreasing element size, then name,
// so that every tensor is aligned to its element size (what zero-copy readers need).
std::vector<uint8_t> serialize(const NamedViews& tensors, const Metadata& metadata = {});
// Writes serialize(...) to `path` through a temporary file renamed into place, so a
// reader never sees a partial file.
void save(const std::filesystem::path& path, const NamedViews& tensors, const Metadata& metadata = {});

// A checkpoint: one safetensors file, or several shards listed by an index
// (`model.safetensors.index.json`: {"metadata": {...}, "weight_map": {name: shard}}).
// Shards are opened lazily on first use (thread-safe); copies share the opened shards.
class Checkpoint {
 public:
  // `path` is a .safetensors file, an index .json, or a directory holding
  // model.safetensors or model.safetensors.index.json (else the only *.safetensors.index.json
  // or the only *.safetensors in it).
  static Checkpoint open(const std::filesystem::path& path);
  static Checkpoint open_file(const std::filesystem::path& path);
  static Checkpoint open_index(const std::filesystem::path& index_path);
  static Checkpoint from_file(File file);

  const std::filesystem::path& path() const;  // the file or index opened
  bool sharded() const;
  // Shard file names relative to the index's directory (one entry, the file, when single).
  std::vector<std::string> shard_names() const;
  // The index's "metadata" object as JSON text ("{}" when single or absent).
  const std::string& index_metadata_json() const;

  std::vector<std::string> names() const;  // sorted
  bool contains(std::string_view name) const;
  // The shard file (as shard_names() spells it) that holds `name`, without opening it.
  const std::string& shard_name(std::string_view name) const;
  // The shard holding `name` (opened and validated on first use). Throws when the index
  // lists a tensor that its shard does not contain.
  const File& file_for(std::string_view name) const;
  const TensorInfo& info(std::string_view name) const { return file_for(name).info(name); }
  TensorView view(std::string_view name) const { return file_for(name).view(name); }
  Tensor upload(std::string_view name, Device device = Device::cpu(), void* stream = nullptr) const {
    return file_for(name).upload(name, device, stream);
  }
  uint64_t checksum(std::string_view name) const { return file_for(name).checksum(name); }

  // Opens every shard and cross-checks the index against them: each listed tensor is in
  // its shard, and no shard holds a tensor the index does not list for it.
  void validate_all() const;

  struct State;  // opaque; defined by the implementation

 private:
  explicit Checkpoint(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace fk::safetensors
