// Reads a state dict of tensors written by torch.save (the zip format of PyTorch 1.6 and
// later): what BGE-M3 ships its sparse and ColBERT heads in (sparse_linear.pt,
// colbert_linear.pt). The archive holds <name>/data.pkl, a pickle of an OrderedDict from
// names to tensors whose storages are the entries <name>/data/<key>, raw little-endian
// elements. Only what such a file needs is understood: uncompressed ("stored") zip entries,
// pickle protocol 2 opcodes, collections.OrderedDict and torch._utils._rebuild_tensor_v2
// over Float/Half/BFloat16/Double storages. Nothing is executed: any other callable in the
// pickle, a compressed entry, the legacy (pre-zip) format or a big-endian file is a named
// error.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace fk::models::encoder {

class TorchStateDict {
 public:
  static TorchStateDict open(const std::filesystem::path& path);
  static TorchStateDict from_bytes(std::vector<uint8_t> bytes, std::string source);

  const std::string& source() const { return source_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  Shape shape(const std::string& name) const;
  // The tensor as a contiguous host tensor of its stored dtype (strides applied).
  Tensor load(const std::string& name) const;

 private:
  struct Entry {
    uint64_t offset = 0, size = 0;  // the data of a stored zip entry
  };
  struct TensorRef {
    DType dtype = DType::f32;
    std::string storage_key;
    int64_t storage_offset = 0;
    Shape shape;
    std::vector<int64_t> stride;
  };
  std::vector<uint8_t> bytes_;
  std::string source_;
  std::string prefix_;  // "<name>/" of the archive's entries
  std::map<std::string, Entry> entries_;
  std::map<std::string, TensorRef> tensors_;

  void read_zip();
  void unpickle(const Entry& pkl);
};

}  // namespace fk::models::encoder
