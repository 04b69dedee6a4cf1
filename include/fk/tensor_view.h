// TensorView: the non-owning tensor that crosses the candidate ABI.
//
// Standard layout and trivially copyable on purpose: a candidate compiled separately
// receives it by pointer inside an op's argument struct. Strides are in elements, not
// bytes (as in PyTorch). Layout changes require bumping FK_ABI_VERSION (fk/op.h).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "fk/dtype.h"

#if defined(__CUDACC__)
#define FK_HD __host__ __device__
#else
#define FK_HD
#endif

namespace fk {

enum class DeviceType : uint8_t { cpu = 0, cuda = 1 };

struct Device {
  DeviceType type = DeviceType::cpu;
  int8_t index = 0;
  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  static constexpr Device cuda(int i = 0) { return {DeviceType::cuda, static_cast<int8_t>(i)}; }
  constexpr bool is_cpu() const { return type == DeviceType::cpu; }
  constexpr bool is_cuda() const { return type == DeviceType::cuda; }
  friend constexpr bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
};

inline constexpr int kMaxRank = 8;

struct TensorView {
  void* data = nullptr;
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  // in elements
  int32_t rank = 0;
  DType dtype = DType::f32;
  Device device{};

  FK_HD int64_t size(int dim) const { return shape[dim < 0 ? dim + rank : dim]; }
  FK_HD int64_t stride(int dim) const { return strides[dim < 0 ? dim + rank : dim]; }
  FK_HD int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
  FK_HD bool is_contiguous() const {
    int64_t expected = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }
  FK_HD int64_t element_size() const { return static_cast<int64_t>(dtype_size(dtype)); }
  FK_HD int64_t nbytes() const { return numel() * element_size(); }
  // Byte span from the first to one past the last addressable element (for views with
  // non-negative strides); what a poison / fingerprint pass has to cover.
  FK_HD int64_t span_bytes() const {
    if (numel() == 0) return 0;
    int64_t last = 0;
    for (int i = 0; i < rank; ++i) last += (shape[i] - 1) * strides[i];
    return (last + 1) * element_size();
  }
  template <class T>
  FK_HD T* ptr() const { return static_cast<T*>(data); }
  // Element offset of a multi-index (rank entries).
  FK_HD int64_t offset_of(const int64_t* idx) const {
    int64_t o = 0;
    for (int i = 0; i < rank; ++i) o += idx[i] * strides[i];
    return o;
  }
  FK_HD void* element_ptr(int64_t element_offset) const {
    return static_cast<char*>(data) + element_offset * element_size();
  }
};

static_assert(std::is_standard_layout_v<TensorView>);
static_assert(std::is_trivially_copyable_v<TensorView>);
static_assert(sizeof(TensorView) == 8 + 8 * kMaxRank * 2 + 4 + 1 + 2 + 1, "ABI layout changed");

// A contiguous view over existing memory.
TensorView make_view(void* data, std::initializer_list<int64_t> shape, DType dtype, Device device);
TensorView make_view(void* data, const int64_t* shape, int rank, DType dtype, Device device);

}  // namespace fk
