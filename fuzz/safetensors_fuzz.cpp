// libFuzzer target for the safetensors reader: any byte string must either parse or fail
// with an fk::Error. Anything else (another exception, a crash, a sanitizer report) is a
// bug. A file that parses must also behave: every accessor stays inside the buffer, and
// writing its tensors back and re-reading gives the same tensors.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace {

using namespace fk::safetensors;

// Bugs abort so that libFuzzer records the input.
void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "safetensors_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
}

void exercise(const File& f) {
  const Header& h = f.header();
  uint64_t covered = 0;
  NamedViews views;
  std::vector<fk::Tensor> copies;  // what `views` point into
  bool round_trip = true;
  for (const TensorInfo& t : f.tensors()) {
    require(f.contains(t.name), "contains() of a listed tensor");
    const auto bytes = f.bytes(t.name);
    require(bytes.size() == t.nbytes(), "bytes() size");
    require(t.data_begin == covered, "tensors tile the data buffer");
    covered = t.data_end;
    (void)f.checksum(t.name);
    if (!t.dtype || t.shape.size() > static_cast<size_t>(fk::kMaxRank)) {
      round_trip = false;  // the writer takes typed views only
      continue;
    }
    fk::Tensor copy;
    try {
      copy = f.upload(t.name);
    } catch (const fk::Error& e) {
      // Only a shape whose strides overflow may be refused.
      require(e.code() == FK_ERR_UNSUPPORTED && t.numel() == 0, "upload() refuses only unindexable empty tensors");
      round_trip = false;
      continue;
    }
    require(copy.nbytes() == bytes.size(), "upload() size");
    require(bytes.empty() || std::memcmp(copy.data(), bytes.data(), bytes.size()) == 0, "upload() contents");
    copies.push_back(copy);
    views.emplace_back(t.name, copy.view());
    try {
      (void)f.view(t.name);  // may refuse misaligned data, cleanly
    } catch (const fk::Error&) {
    }
  }
  require(covered == h.data_bytes, "tensors cover the data buffer");
  if (!round_trip) return;
  const File again = File::from_bytes(serialize(views, f.metadata()), "round trip");
  require(again.size() == f.size(), "round trip keeps every tensor");
  require(again.metadata() == f.metadata(), "round trip keeps the metadata");
  for (const TensorInfo& t : f.tensors()) {
    const TensorInfo& u = again.info(t.name);
    require(u.dtype_name == t.dtype_name && u.shape == t.shape, "round trip keeps dtype and shape");
    require(again.checksum(t.name) == f.checksum(t.name), "round trip keeps the bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<File> file;
  try {
    file = File::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz");
  } catch (const fk::Error&) {
    return 0;  // a clean rejection
  }
  exercise(*file);
  return 0;
}
