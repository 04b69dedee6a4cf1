// expect: INCORRECT
// Remembers its outputs (in device buffers) keyed on a hash of the input bytes and
// replays them when the key comes again. Hashing every input byte costs as much as an
// rms_norm reads, so the key is cheap: the first 64 bytes of every row of `input`, copied
// to the host in one strided copy, and its shape. The timed calls get fresh inputs, so the
// cache never hits there; the edge round that repeats the first round's inputs with one
// element changed (in `input` and in `weight`, which the key leaves out) gets the stale
// output of the first round: INCORRECT.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "common.cuh"

namespace {
struct Entry {
  void* out = nullptr;
  size_t bytes = 0;
};
std::map<std::pair<uint64_t, int64_t>, Entry> cache;

bool sampled_hash(const fk::TensorView& v, cudaStream_t s, uint64_t* hash) {
  const int64_t rows = v.shape[0], cols = v.shape[1], es = v.element_size();
  const size_t sampled = static_cast<size_t>(std::min<int64_t>(64, cols * es));
  std::vector<unsigned char> host(static_cast<size_t>(rows) * sampled);
  if (rows > 0 && cudaMemcpy2DAsync(host.data(), sampled, v.data, static_cast<size_t>(v.strides[0] * es), sampled,
                                    static_cast<size_t>(rows), cudaMemcpyDeviceToHost, s) != cudaSuccess)
    return false;
  if (cudaStreamSynchronize(s) != cudaSuccess) return false;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sampled bytes
  for (unsigned char b : host) h = (h ^ b) * 1099511628211ull;
  *hash = h ^ static_cast<uint64_t>(cols) << 40;
  return true;
}

fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const auto& a = adv::args(raw);
  uint64_t h = 0;
  if (!sampled_hash(a.input, s, &h)) return FK_ERR_CUDA;
  const auto key = std::make_pair(h, a.input.shape[0]);
  const size_t bytes = static_cast<size_t>(a.out.nbytes());
  if (auto it = cache.find(key); it != cache.end() && it->second.bytes == bytes) {
    return cudaMemcpyAsync(a.out.data, it->second.out, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess ? FK_OK
                                                                                                             : FK_ERR_CUDA;
  }
  if (const fk_status r = adv::launch(a, s); r != FK_OK) return r;
  if (cache.size() >= 256 || bytes == 0) return FK_OK;
  Entry e{nullptr, bytes};
  if (cudaMalloc(&e.out, bytes) != cudaSuccess) return FK_ERR_CUDA;
  if (cudaMemcpyAsync(e.out, a.out.data, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess) return FK_ERR_CUDA;
  cache[key] = e;
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
