#include "harness/check/op_check_strided.h"

#include <algorithm>
#include <cstring>

#include "fk/runtime.h"

namespace fk::bench {

namespace {


int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Geometry of a re-laid-out tensor, in elements.
struct RowGeometry {
  int64_t rows = 0;
  int64_t row_elems = 0;  // elements of one row (the product of the dims after the first)
  int64_t stride = 0;
  int64_t start = 0;  // offset of the view's first element in its buffer
  int64_t total = 0;  // buffer size
};

RowGeometry row_geometry(const TensorView& v, RowLayout layout) {
  const int64_t es = v.element_size();
  RowGeometry g;
  g.rows = v.shape[0];
  g.row_elems = 1;
  for (int d = 1; d < v.rank; ++d) g.row_elems *= v.shape[d];
  // Element sizes (1, 2, 4, 8) divide 16, so every offset here is a whole element.
  const int64_t aligned_row = round_up(g.row_elems * es, 16);
  g.stride = (layout == RowLayout::odd_stride ? aligned_row + es : aligned_row + 16) / es;
  g.start = layout == RowLayout::odd_start ? 1 : 0;
  g.total = g.start + std::max<int64_t>(g.rows, 1) * g.stride;
  return g;
}

int64_t row_elems_of(const TensorView& v) {
  int64_t n = 1;
  for (int d = 1; d < v.rank; ++d) n *= v.shape[d];
  return n;
}

int64_t view_start_bytes(const RowStridedTensor& s) {
  return static_cast<const char*>(s.view.data) - static_cast<const char*>(s.storage.data());
}

RowStridedTensor on_host(const RowStridedTensor& s) {
  return s.storage.device().is_cpu() ? s : row_strided_to(s, Device::cpu());
}

// Layout of one argument: arguments that need aligned rows keep the aligned one.
RowLayout layout_for(const TensorArg& arg, RowLayout layout) {
  return arg.row_stride == RowStride::aligned16 ? RowLayout::aligned : layout;
}

std::string_view layout_meaning(RowLayout layout) {
  switch (layout) {
    case RowLayout::aligned: return "rows padded, 16-byte aligned";
    case RowLayout::odd_stride: return "row stride not a multiple of 16 bytes";
    case RowLayout::odd_start: return "rows padded, data not 16-byte aligned";
  }
  return "?";
}

// One run of `impl` on a copy of `host` with the arguments marked in `relaid` re-laid out
// in `layout` (aligned16 arguments: aligned), checked against the oracle.
CheckResult run_relaid(const OpDef& def, const OpCase& host, const OpCase& oracle, DeviceType backend,
                       fk_op_fn impl, RowLayout layout, const std::vector<bool>& relaid) {
  CheckResult res;
  const Device dev = backend == DeviceType::cpu ? Device::cpu() : Device::cuda(0);
  const size_t n = def.tensor_args.size();
  OpCase test = case_to_device(def, host, dev);
  std::vector<RowStridedTensor> strided(n);
  for (size_t i = 0; i < n; ++i) {
    if (!relaid[i]) continue;
    strided[i] = make_row_strided(host.tensors[i], layout_for(def.tensor_args[i], layout));
    if (dev.is_cuda()) strided[i] = row_strided_to(strided[i], dev);
    test.tensors[i] = strided[i].storage;  // what poison_outputs and fingerprint cover
  }
  // The strided views replace the packed ones in the argument struct (bind writes the
  // storage tensors' 1-D views, which the loop overwrites).
  test.bind(def.tensor_args);
  for (size_t i = 0; i < n; ++i)
    if (relaid[i]) std::memcpy(test.args.data() + def.tensor_args[i].offset, &strided[i].view, sizeof(TensorView));

  std::vector<uint64_t> before(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (def.tensor_args[i].role == ArgRole::in) before[i] = fingerprint(test.tensors[i]);
  poison_outputs(def, test);  // before the plan: a plan may fill workspace tensors
  OpRegistry::global().plan(def.name, backend, test.args_ptr(), nullptr);
  const fk_status s = impl(test.args_ptr(), nullptr);
  if (s != FK_OK) {
    res.message = concat(status_name(s), ": ", last_error_message(), "; ");
    return res;
  }
  if (dev.is_cuda()) rt::device_synchronize(0);

  std::string why;
  OpCase actual = host;  // the outputs as contiguous host tensors (for check_outputs)
  for (size_t i = 0; i < n; ++i) {
    const TensorArg& arg = def.tensor_args[i];
    if (arg.role == ArgRole::in && fingerprint(test.tensors[i]) != before[i]) {
      res.inputs_unchanged = false;
      why += concat("input '", arg.name, "' was modified", relaid[i] ? " (its row padding included)" : "", "; ");
    }
    if (!is_written(arg.role)) continue;
    if (relaid[i]) {
      const std::string damage = padding_damage(strided[i]);
      if (!damage.empty()) why += concat("output '", arg.name, "': ", damage, "; ");
    }
    const Tensor got = relaid[i] ? contiguous_copy(strided[i]) : test.tensors[i];
    if (def.check_outputs) {
      actual.tensors[i] = got.device().is_cpu() ? got : got.to(Device::cpu());
      continue;
    }
    const DType dt = got.dtype();
    const Tolerance tol = def.tolerance ? def.tolerance(host, arg, dt) : default_tolerance(dt);
    OutputError e = compare_output(arg.name, got, oracle.tensors[i], tol);
    if (e.num_bad > 0) why += describe_output_error(e);
    res.outputs.push_back(std::move(e));
  }
  if (def.check_outputs) {
    actual.bind(def.tensor_args);
    why += def.check_outputs(host, oracle, actual);
  }
  res.passed = why.empty();
  res.message = why;
  return res;
}

}  // namespace

std::string_view row_layout_name(RowLayout layout) {
  switch (layout) {
    case RowLayout::aligned: return "aligned";
    case RowLayout::odd_stride: return "odd_stride";
    case RowLayout::odd_start: return "odd_start";
  }
  return "?";
}

std::vector<RowLayout> row_layouts(const OpDef& def) {
  bool some = false, any = false;
  for (const TensorArg& a : def.tensor_args) {
    some = some || a.row_stride != RowStride::packed;
    any = any || a.row_stride == RowStride::any;
  }
  if (any) return {RowLayout::aligned, RowLayout::odd_stride, RowLayout::odd_start};
  if (some) return {RowLayout::aligned};
  return {};
}

RowStridedTensor make_row_strided(const Tensor& t, RowLayout layout) {
  FK_CHECK(t.defined() && t.device().is_cpu() && t.view().is_contiguous() && t.rank() >= 1,
           "make_row_strided needs a contiguous host tensor of rank >= 1, got ",
           t.defined() ? t.describe() : std::string("an undefined tensor"));
  const RowGeometry g = row_geometry(t.view(), layout);
  RowStridedTensor s;
  s.storage = Tensor::empty({g.total}, t.dtype());
  FK_CHECK(aligned16(s.storage.data()), "make_row_strided: the buffer is not 16-byte aligned");
  std::memset(s.storage.data(), poison_byte(t.dtype()), s.storage.nbytes());
  s.view = t.view();
  s.view.data = s.storage.view().element_ptr(g.start);
  s.view.strides[0] = g.stride;
  const size_t row_bytes = static_cast<size_t>(g.row_elems * t.view().element_size());
  for (int64_t r = 0; r < g.rows; ++r)
    std::memcpy(s.view.element_ptr(r * g.stride), t.view().element_ptr(r * g.row_elems), row_bytes);
  return s;
}

RowStridedTensor row_strided_to(const RowStridedTensor& s, Device device) {
  RowStridedTensor r;
  r.storage = s.storage.to(device);
  // The layout's alignment is relative to the buffer: it must start 16-byte aligned.
  FK_CHECK(aligned16(r.storage.data()), "row_strided_to: the buffer on the device is not 16-byte aligned");
  r.view = s.view;
  r.view.device = device;
  r.view.data = static_cast<char*>(r.storage.data()) + view_start_bytes(s);
  return r;
}

Tensor contiguous_copy(const RowStridedTensor& s) {
  const RowStridedTensor h = on_host(s);
  Tensor out = Tensor::empty(Shape(h.view.shape, h.view.shape + h.view.rank), h.view.dtype);
  const int64_t row_elems = row_elems_of(h.view);
  const size_t row_bytes = static_cast<size_t>(row_elems * h.view.element_size());
  for (int64_t r = 0; r < h.view.shape[0]; ++r)
    std::memcpy(out.view().element_ptr(r * row_elems), h.view.element_ptr(r * h.view.strides[0]), row_bytes);
  return out;
}

std::string padding_damage(const RowStridedTensor& s) {
  const RowStridedTensor h = on_host(s);
  const auto* bytes = static_cast<const uint8_t*>(h.storage.data());
  const uint8_t poison = poison_byte(h.view.dtype);
  const int64_t es = h.view.element_size();
  const int64_t start = view_start_bytes(h), stride = h.view.strides[0] * es;
  const int64_t row_bytes = row_elems_of(h.view) * es, rows = h.view.shape[0];
  const int64_t total = static_cast<int64_t>(h.storage.nbytes());
  int64_t changed = 0, first = -1;
  auto scan = [&](int64_t from, int64_t to) {
    for (int64_t b = std::max<int64_t>(from, 0); b < std::min(to, total); ++b) {
      if (bytes[b] == poison) continue;
      if (changed++ == 0) first = b;
    }
  };
  scan(0, start);
  for (int64_t r = 0; r < rows; ++r) scan(start + r * stride + row_bytes, start + (r + 1) * stride);
  scan(start + rows * stride, total);
  if (changed == 0) return "";
  std::string where;
  if (first < start) {
    where = concat("byte ", first, " of the ", start, " before the first row");
  } else {
    const int64_t row = std::min((first - start) / stride, std::max<int64_t>(rows - 1, 0));
    where = concat("byte ", first - start - row * stride - row_bytes, " past the end of row ", row);
  }
  return concat(changed, " bytes of row padding were written (first: ", where, "; ", rows, " rows of ", row_bytes,
                " bytes, row stride ", stride, " bytes)");
}

CheckResult check_op_strided(const OpDef& def, const Json& workload, uint64_t seed, DeviceType backend,
                             fk_op_fn impl, const std::vector<RowLayout>& layouts_in) {
  CheckResult res;
  if (!impl) impl = OpRegistry::global().active(def.name, backend);
  FK_CHECK(impl != nullptr, "op ", def.name, " has no implementation for this backend");
  const std::vector<RowLayout> layouts = layouts_in.empty() ? row_layouts(def) : layouts_in;

  OpCase host = def.make_case(workload, seed);
  OpCase oracle = make_oracle_case(def, host);
  run_oracle(def, oracle);

  const size_t n = def.tensor_args.size();
  std::vector<bool> relaid(n, false);
  std::string names;
  for (size_t i = 0; i < n; ++i) {
    const TensorArg& arg = def.tensor_args[i];
    relaid[i] = arg.row_stride != RowStride::packed && !arg.host_only && host.tensors[i].defined() &&
                host.tensors[i].rank() >= 2;
    if (relaid[i]) names += concat(names.empty() ? "" : ", ", "'", arg.name, "'");
  }
  const auto count = std::count(relaid.begin(), relaid.end(), true);

  std::string why;
  for (RowLayout layout : layouts) {
    if (count == 0) break;
    CheckResult r = run_relaid(def, host, oracle, backend, impl, layout, relaid);
    res.inputs_unchanged = res.inputs_unchanged && r.inputs_unchanged;
    for (OutputError& e : r.outputs) res.outputs.push_back(std::move(e));
    if (r.passed) continue;
    // Which arguments break it by themselves (when there is more than one to blame).
    std::string alone;
    for (size_t i = 0; count > 1 && i < n; ++i) {
      if (!relaid[i]) continue;
      std::vector<bool> one(n, false);
      one[i] = true;
      if (!run_relaid(def, host, oracle, backend, impl, layout, one).passed)
        alone += concat(alone.empty() ? "" : ", ", "'", def.tensor_args[i].name, "'");
    }
    why += concat("[row-strided ", names, ", layout ", row_layout_name(layout), ": ", layout_meaning(layout), "] ",
                  r.message);
    if (count > 1)
      why += alone.empty() ? std::string("(no argument fails when it alone is row-strided); ")
                           : concat("(fails with only ", alone, " row-strided); ");
  }
  res.passed = why.empty();
  res.message = why;
  return res;
}

}  // namespace fk::bench
