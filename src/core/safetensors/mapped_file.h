// A read-only memory mapping of a whole file, unmapped when the last owner lets go.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

namespace fk::safetensors {

class MappedFile {
 public:
  // Throws an fk::Error naming the path when it cannot be opened or mapped.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;  // nullptr for an empty file (mmap refuses length 0)
  size_t size_ = 0;
};

}  // namespace fk::safetensors
