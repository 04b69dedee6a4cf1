// Helpers shared by the norm, activation and embedding op tests: row-strided and
// misaligned views over a flat buffer (the generic oracle tests cover padded rows of the
// test workloads, harness/check/op_check_strided.h; these reach other geometries, e.g. long rows
// over many blocks), calling an implementation directly and checking its error, comparing
// views, and checking a big device case against the oracle on a sample of its rows.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/random.h"
#include "fk/runtime.h"

namespace fk::test {

// A [rows, cols] view with row stride `stride`, starting `offset` elements into a flat
// buffer (filled with uniform values in [lo, hi) everywhere, padding included).
struct StridedBuffer {
  Tensor storage;  // 1-D
  TensorView view;
};

inline StridedBuffer make_strided(int64_t rows, int64_t cols, int64_t stride, int64_t offset, DType dt,
                                  uint64_t seed, uint64_t stream, float lo, float hi) {
  StridedBuffer b;
  const int64_t n = offset + (rows > 0 ? (rows - 1) * stride + cols : 0) + 8;
  b.storage = Tensor::empty({n}, dt);
  fill_uniform(b.storage.view(), seed, stream, lo, hi);
  b.view = b.storage.view();
  b.view.data = b.storage.view().element_ptr(offset);
  b.view.rank = 2;
  b.view.shape[0] = rows;
  b.view.shape[1] = cols;
  b.view.strides[0] = stride;
  b.view.strides[1] = 1;
  return b;
}

// The same bytes and view geometry on another device.
inline StridedBuffer strided_to(const StridedBuffer& b, Device device) {
  StridedBuffer r;
  r.storage = b.storage.to(device);
  r.view = b.view;
  r.view.device = device;
  r.view.data = static_cast<char*>(r.storage.data()) +
                (static_cast<const char*>(b.view.data) - static_cast<const char*>(b.storage.data()));
  return r;
}

// A contiguous [rows, cols] host copy of a host view's elements.
inline Tensor contiguous_copy(const TensorView& v) {
  Tensor t = Tensor::empty({v.shape[0], v.shape[1]}, v.dtype);
  for (int64_t i = 0; i < v.shape[0]; ++i)
    for (int64_t j = 0; j < v.shape[1]; ++j) set(t.view(), get(v, i, j), i, j);
  return t;
}

// Host views compared element by element: |a - b| <= atol + rtol * |b| (exact when zero).
inline void expect_views_near(const TensorView& actual, const TensorView& expected, Tolerance tol,
                              const std::string& what) {
  ASSERT_EQ(actual.shape[0], expected.shape[0]) << what;
  ASSERT_EQ(actual.shape[1], expected.shape[1]) << what;
  int64_t bad = 0;
  for (int64_t i = 0; i < actual.shape[0]; ++i)
    for (int64_t j = 0; j < actual.shape[1]; ++j) {
      const double a = get(actual, i, j), e = get(expected, i, j);
      const bool ok = std::isnan(e) ? std::isnan(a) : std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
      if (!ok && bad++ < 5) ADD_FAILURE() << what << ": [" << i << ", " << j << "] = " << a << ", expected " << e;
    }
  EXPECT_EQ(bad, 0) << what;
}

// Element count of a flat buffer that differs from a reference buffer (padding checks).
inline int64_t count_changed_bytes(const Tensor& a, const Tensor& b) {
  Tensor ha = a.device().is_cpu() ? a : a.to(Device::cpu());
  Tensor hb = b.device().is_cpu() ? b : b.to(Device::cpu());
  const auto* pa = static_cast<const unsigned char*>(ha.data());
  const auto* pb = static_cast<const unsigned char*>(hb.data());
  int64_t n = 0;
  for (size_t i = 0; i < ha.nbytes(); ++i) n += pa[i] != pb[i];
  return n;
}

// A strided buffer after a device implementation ran, against the same buffer after the
// CPU implementation ran: elements inside the view within `tol`, every element outside the
// view (row padding, the bytes before an offset view) bit-identical, i.e. never written.
inline void expect_strided_near(const StridedBuffer& device_result, const StridedBuffer& cpu_result, Tolerance tol,
                                const std::string& what) {
  const Tensor got = device_result.storage.to(Device::cpu());
  const TensorView& v = cpu_result.view;
  const int64_t es = v.element_size();
  const int64_t offset = (static_cast<const char*>(v.data) - static_cast<const char*>(cpu_result.storage.data())) / es;
  int64_t bad_inside = 0, bad_outside = 0;
  for (int64_t e = 0; e < got.numel(); ++e) {
    const int64_t rel = e - offset;
    const bool inside = rel >= 0 && rel / v.strides[0] < v.shape[0] && rel % v.strides[0] < v.shape[1];
    const void* a = got.view().element_ptr(e);
    const void* b = cpu_result.storage.view().element_ptr(e);
    if (inside) {
      const double x = load_element(a, v.dtype), r = load_element(b, v.dtype);
      if (!(std::fabs(x - r) <= tol.atol + tol.rtol * std::fabs(r)) && bad_inside++ < 5)
        ADD_FAILURE() << what << ": element [" << rel / v.strides[0] << ", " << rel % v.strides[0] << "] = " << x
                      << ", expected " << r;
    } else if (std::memcmp(a, b, static_cast<size_t>(es)) != 0 && bad_outside++ < 5) {
      ADD_FAILURE() << what << ": element " << e << " outside the view was written";
    }
  }
  EXPECT_EQ(bad_inside, 0) << what;
  EXPECT_EQ(bad_outside, 0) << what;
}

// Calls the registered baseline of A's op on `backend` directly.
template <class A>
fk_status call_baseline(DeviceType backend, const A& args, void* stream = nullptr) {
  fk_op_fn fn = OpRegistry::global().baseline(A::kName, backend);
  if (fn == nullptr) {
    ADD_FAILURE() << A::kName << " has no baseline for this backend";
    return FK_ERR_UNSUPPORTED;
  }
  return fn(&args, stream);
}

// The call must fail with FK_ERR_INVALID_ARGUMENT and a message containing `needle`.
template <class A>
void expect_invalid(DeviceType backend, const A& args, const std::string& needle) {
  const fk_status s = call_baseline(backend, args);
  EXPECT_EQ(s, FK_ERR_INVALID_ARGUMENT) << A::kName << ": expected an error containing '" << needle << "'";
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find(needle), std::string::npos) << A::kName << ": error message '" << msg << "' lacks '" << needle
                                                 << "'";
}

template <class A>
void expect_ok(DeviceType backend, const A& args) {
  const fk_status s = call_baseline(backend, args);
  EXPECT_EQ(s, FK_OK) << A::kName << ": " << (s == FK_OK ? "" : last_error_message());
}

// ---- big device cases, checked on a sample of rows ---------------------------------------

inline Tensor device_uniform(const Shape& shape, DType dt, uint64_t seed, uint64_t stream, float lo, float hi) {
  Tensor t = Tensor::empty(shape, dt, Device::cuda());
  fill_uniform(t.view(), seed, stream, lo, hi);
  rt::device_synchronize();
  return t;
}
inline Tensor device_ints(const Shape& shape, DType dt, uint64_t seed, uint64_t stream, int64_t lo, int64_t hi) {
  Tensor t = Tensor::empty(shape, dt, Device::cuda());
  fill_int(t.view(), seed, stream, lo, hi);
  rt::device_synchronize();
  return t;
}

// First, last, and a spread of rows in between (plus the rows around a few block-sized
// boundaries), sorted and unique.
inline std::vector<int64_t> sample_rows(int64_t rows, int count = 24) {
  std::vector<int64_t> r;
  if (rows == 0) return r;
  for (int i = 0; i < count; ++i) r.push_back(rows * i / count + (i * 7919) % std::max<int64_t>(1, rows / count));
  for (int64_t b : {int64_t{3}, int64_t{4}, int64_t{7}, int64_t{8}, int64_t{127}, int64_t{128}, rows - 2})
    if (b >= 0 && b < rows) r.push_back(b);
  r.push_back(rows - 1);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  while (!r.empty() && r.back() >= rows) r.pop_back();
  return r;
}

// The sampled rows of a contiguous tensor (any device) as a contiguous host tensor.
inline Tensor gather_rows(const Tensor& t, const std::vector<int64_t>& rows) {
  Shape shape = t.shape();
  const int64_t row_bytes = shape[0] > 0 ? static_cast<int64_t>(t.nbytes()) / shape[0] : 0;
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::empty(shape, t.dtype());
  for (size_t i = 0; i < rows.size(); ++i)
    rt::memcpy_sync(static_cast<char*>(out.data()) + i * row_bytes, Device::cpu(),
                    static_cast<const char*>(t.data()) + rows[i] * row_bytes, t.device(), row_bytes);
  return out;
}

inline int64_t count_nonfinite(const Tensor& t) {
  Tensor h = t.device().is_cpu() ? t : t.to(Device::cpu());
  int64_t n = 0;
  const int64_t count = h.numel();
  for (int64_t i = 0; i < count; ++i) n += !std::isfinite(load_element(h.view().element_ptr(i), h.dtype()));
  return n;
}

// Checks the baseline of `def` for `backend` on a case whose tensors live there: `row_tensor[i]` marks the
// tensors whose first dimension is the token dimension (the others are used whole). The
// oracle runs on the sampled rows only, from inputs copied before the call (so inout
// tensors work); every written tensor must be finite everywhere (outputs are poisoned).
inline void check_sampled_rows(const OpDef& def, OpCase& device_case, const std::vector<bool>& row_tensor,
                               const std::vector<int64_t>& rows, DeviceType backend = DeviceType::cuda) {
  OpCase host = device_case;
  for (size_t i = 0; i < host.tensors.size(); ++i) {
    const Tensor& t = device_case.tensors[i];
    if (!t.defined()) continue;
    host.tensors[i] = row_tensor[i] ? gather_rows(t, rows) : t.to(Device::cpu());
  }
  host.bind(def.tensor_args);
  OpCase oracle = bench::make_oracle_case(def, host);
  bench::run_oracle(def, oracle);

  bench::poison_outputs(def, device_case);
  fk_op_fn fn = OpRegistry::global().baseline(def.name, backend);
  ASSERT_NE(fn, nullptr) << def.name;
  const fk_status s = fn(device_case.args_ptr(), nullptr);
  ASSERT_EQ(s, FK_OK) << def.name << ": " << last_error_message();
  if (backend == DeviceType::cuda) rt::device_synchronize();

  for (size_t i = 0; i < def.tensor_args.size(); ++i) {
    const TensorArg& arg = def.tensor_args[i];
    if (arg.role != ArgRole::out && arg.role != ArgRole::inout) continue;
    const Tensor& t = device_case.tensors[i];
    EXPECT_EQ(count_nonfinite(t), 0) << def.name << " " << arg.name << ": unwritten (poisoned) or non-finite elements";
    const Tensor actual = row_tensor[i] ? gather_rows(t, rows) : t.to(Device::cpu());
    const Tolerance tol = def.tolerance ? def.tolerance(host, arg, t.dtype()) : default_tolerance(t.dtype());
    const bench::OutputError e = bench::compare_output(arg.name, actual, oracle.tensors[i], tol);
    EXPECT_EQ(e.num_bad, 0) << def.name << " " << device_case.workload.dump() << " output " << arg.name << ": "
                            << e.num_bad << " of " << e.numel << " sampled elements outside tolerance; worst at "
                            << e.worst_index << ": " << e.worst_value << " vs " << e.worst_ref;
  }
}

// Mean time of `iters` back-to-back calls of the baseline (after one warm-up), printed with
// the bandwidth the op's cost model implies. Informational: not an assertion.
inline double report_time(const OpDef& def, const OpCase& device_case, int iters = 20) {
  fk_op_fn fn = OpRegistry::global().baseline(def.name, DeviceType::cuda);
  if (fn(device_case.args_ptr(), nullptr) != FK_OK) return 0;
  rt::device_synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) fn(device_case.args_ptr(), nullptr);
  rt::device_synchronize();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  const double bytes = def.cost ? def.cost(device_case).bytes : 0;
  std::printf("[ perf ] %-26s %-60s %9.1f us  %7.1f GB/s  (%.0f%% of 3.0 TB/s)\n", def.name.c_str(),
              device_case.workload.dump().c_str(), us, bytes / us * 1e-3, bytes / us * 1e-3 / 3000.0 * 100.0);
  return us;
}

}  // namespace fk::test
