// safetensors::File: a validated file's bytes and header, with lookups by name.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "core/safetensors/mapped_file.h"
#include "fk/runtime.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::safetensors {

struct File::State {
  std::string source;
  std::shared_ptr<const void> owner;  // the mapping or the owned vector
  const uint8_t* base = nullptr;
  size_t size = 0;
  Header header;
  std::unordered_map<std::string_view, size_t> by_name;  // keys point into header.tensors

  void index() {
    by_name.reserve(header.tensors.size());
    for (size_t i = 0; i < header.tensors.size(); ++i) by_name.emplace(header.tensors[i].name, i);
  }
};

File File::open(const std::filesystem::path& path) {
  auto mapping = MappedFile::open(path);
  auto s = std::make_shared<State>();
  s->source = path.string();
  s->base = mapping->data();
  s->size = mapping->size();
  s->owner = std::move(mapping);
  s->header = parse_header({s->base, s->size}, s->source);
  s->index();
  return File(std::move(s));
}

File File::from_bytes(std::vector<uint8_t> bytes, std::string source) {
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  auto s = std::make_shared<State>();
  s->source = std::move(source);
  s->base = owned->data();
  s->size = owned->size();
  s->owner = std::move(owned);
  s->header = parse_header({s->base, s->size}, s->source);
  s->index();
  return File(std::move(s));
}

const File::State& File::state() const {
  FK_CHECK(state_ != nullptr, "use of a safetensors::File that was moved from");
  return *state_;
}

const std::string& File::source() const { return state().source; }
const Header& File::header() const { return state().header; }
std::shared_ptr<const void> File::keep_alive() const { return state().owner; }

std::vector<std::string> File::names() const {
  std::vector<std::string> out;
  out.reserve(tensors().size());
  for (const TensorInfo& t : tensors()) out.push_back(t.name);
  std::sort(out.begin(), out.end());
  return out;
}

bool File::contains(std::string_view name) const { return state().by_name.count(name) != 0; }

const TensorInfo& File::info(std::string_view name) const {
  const State& s = state();
  auto it = s.by_name.find(name);
  if (it == s.by_name.end())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, s.source, ": no tensor '", name, "' (the file has ", s.header.tensors.size(),
            " tensors)");
  return s.header.tensors[it->second];
}

std::span<const uint8_t> File::bytes(std::string_view name) const {
  const TensorInfo& t = info(name);
  const State& s = state();
  // parse_header guaranteed data_start + data_end <= size.
  return {s.base + s.header.data_start() + t.data_begin, static_cast<size_t>(t.nbytes())};
}

namespace {
// What a typed tensor needs that the format does not guarantee.
DType typed_dtype(const TensorInfo& t, const std::string& source) {
  if (!t.dtype)
    FK_FAIL(FK_ERR_UNSUPPORTED, source, ": tensor '", t.name, "' has dtype ", t.dtype_name,
            ", which fastkernels has no type for (its bytes are readable with bytes())");
  if (t.shape.size() > static_cast<size_t>(kMaxRank))
    FK_FAIL(FK_ERR_UNSUPPORTED, source, ": tensor '", t.name, "' has rank ", t.shape.size(),
            ", more than the ", kMaxRank, " a TensorView holds");
  // Strides are products of trailing dimensions: a zero-element tensor whose other
  // dimensions multiply past int64 has a valid header but no representable strides.
  int64_t nonzero_product = 1;
  for (int64_t d : t.shape) {
    if (d != 0 && __builtin_mul_overflow(nonzero_product, d, &nonzero_product))
      FK_FAIL(FK_ERR_UNSUPPORTED, source, ": tensor '", t.name, "' has shape ",
              shape_to_string(t.shape.data(), static_cast<int>(t.shape.size())),
              " whose strides do not fit 64 bits");
  }
  return *t.dtype;
}
}  // namespace

TensorView File::view(std::string_view name) const {
  const TensorInfo& t = info(name);
  const DType dtype = typed_dtype(t, source());
  const uint8_t* p = bytes(name).data();
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(dtype) != 0)
    FK_FAIL(FK_ERR_UNSUPPORTED, source(), ": tensor '", t.name, "' (", t.dtype_name, ") starts at data offset ",
            t.data_begin, ", not aligned to its element size: a zero-copy view is impossible, use upload()");
  // Views are mutable by type (TensorView is the ABI type); the mapping is read-only, so
  // callers must treat these views as inputs.
  return make_view(const_cast<uint8_t*>(p), t.shape.data(), static_cast<int>(t.shape.size()), dtype,
                   Device::cpu());
}

Tensor File::upload(std::string_view name, Device device, void* stream) const {
  const TensorInfo& t = info(name);
  const DType dtype = typed_dtype(t, source());
  const std::span<const uint8_t> src = bytes(name);
  Tensor out = Tensor::empty(t.shape, dtype, device, stream);
  if (src.empty()) return out;
  if (device.is_cpu()) {
    std::memcpy(out.data(), src.data(), src.size());  // no device runtime involved
  } else {
    rt::memcpy_async(out.data(), device, src.data(), Device::cpu(), src.size(), stream);
    // The source is pageable (mapped) memory and the caller may drop the File right away:
    // finish the copy before returning.
    rt::stream_synchronize(stream);
  }
  return out;
}

uint64_t File::checksum(std::string_view name) const {
  const std::span<const uint8_t> b = bytes(name);
  return content_hash64(b.data(), b.size());
}

}  // namespace fk::safetensors
