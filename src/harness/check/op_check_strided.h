// Checking an implementation on row-strided views: the arguments whose TensorArg declares
// a row stride (fk/op_registry.h, RowStride) are handed over as views whose rows are
// followed by padding, as the engine hands them (slices of a packed qkv buffer, the first
// rows of a persistent buffer). Kernels pick vector or scalar paths from strides and
// alignment, and a kernel that assumes packed rows reads the wrong elements or writes past
// a row's end: the padding is poisoned, and must still hold the poison afterwards.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/check/op_check.h"

namespace fk::bench {

// How the padded rows are laid out. Every row is followed by padding, the last one too.
enum class RowLayout : uint8_t {
  aligned,     // row stride: the packed row rounded up to 16 bytes, plus 16 bytes; data 16-byte aligned
  odd_stride,  // row stride: the packed row rounded up to 16 bytes, plus one element; data 16-byte aligned
  odd_start,   // the aligned layout's row stride, data one element past a 16-byte boundary
};
std::string_view row_layout_name(RowLayout layout);  // "aligned", "odd_stride", "odd_start"

// The layouts an op is checked with: none when no argument accepts strided rows; `aligned`
// when some do; the two misaligned ones as well when some accept any row stride (there,
// arguments that need 16-byte aligned rows keep the aligned layout).
std::vector<RowLayout> row_layouts(const OpDef& def);

// A tensor's elements as a row-strided view over a buffer of its own: dim 0 further apart
// than packed (per `layout`), the other dims packed; every byte of the buffer outside the
// view holds poison_byte(dtype).
struct RowStridedTensor {
  Tensor storage;  // 1-D, of the view's dtype and device: the view and its padding
  TensorView view;
};
// From a contiguous host tensor of rank >= 1 (its values copied into the view).
RowStridedTensor make_row_strided(const Tensor& t, RowLayout layout);
// The same bytes and geometry on another device.
RowStridedTensor row_strided_to(const RowStridedTensor& s, Device device);
// The view's elements as a contiguous host tensor.
Tensor contiguous_copy(const RowStridedTensor& s);
// What was written outside the view ("" when every byte there still holds the poison):
// how many bytes, and where the first one lies.
std::string padding_damage(const RowStridedTensor& s);

// check_op on row-strided views, once per layout (row_layouts(def) when `layouts` is
// empty): every argument that accepts strided rows (and has rank >= 2) is re-laid out, all
// at once; the implementation runs on them, out/inout values are checked against the f64
// oracle (which runs on the contiguous case) as check_op does, the padding of every
// out/inout argument must be untouched, and inputs, padding included, unchanged. When a
// layout fails with several arguments re-laid out, each is tried alone and the message
// names the ones that fail by themselves.
CheckResult check_op_strided(const OpDef& def, const Json& workload, uint64_t seed, DeviceType backend,
                             fk_op_fn impl = nullptr, const std::vector<RowLayout>& layouts = {});

}  // namespace fk::bench
