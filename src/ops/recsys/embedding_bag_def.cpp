// embedding_bag: definition (workloads, case, cost, tolerance, capture) and the CPU reference,
// which is also the CPU implementation: per bag, its rows (times their weights) summed in
// double, divided by the bag's length for a mean, rounded once.
//
// Workload fields: rows (V), dim (D), dtype (bf16: table and out), index_dtype (i32: indices
// and offsets), mode ("sum" or "mean"; sum), weighted (false: per_sample_weights in [0, 2)),
// and the bags, either a list (bag_sizes) or a count and a length (batch + bag_size), with
// bag_size_min making them ragged: lengths spread over [bag_size_min, bag_size] by a fixed
// integer hash of the bag's index, so a workload is one shape whatever the seed. Optional
// unused_before / unused_after: indices before the first bag and after the last that no bag
// reads (a slice of a packed offsets array). Indices are uniform over the table (every row
// read comes from memory, the worst case; real categorical ids are skewed and hit caches).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "ops/recsys/embedding_bag_validate.h"

namespace fk::ops {
namespace {

using A = EmbeddingBagArgs;

void embedding_bag_reference(const A& a) {
  const int64_t bags = a.offsets.shape[0] - 1, rows = a.table.shape[0], dim = a.table.shape[1];
  // Every index a bag reads is checked before anything is written.
  for (int64_t b = 0; b < bags; ++b)
    for (int64_t i = get_index(a.offsets, b), end = get_index(a.offsets, b + 1); i < end; ++i) {
      const int64_t id = get_index(a.indices, i);
      FK_CHECK(id >= 0 && id < rows, A::kName, ": indices[", i, "] = ", id, " (bag ", b,
               ") is out of range for a table of ", rows, " rows");
    }
  const bool weighted = arg_present(a.per_sample_weights);
  std::vector<double> acc(static_cast<size_t>(dim));
  for (int64_t b = 0; b < bags; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const int64_t start = get_index(a.offsets, b), end = get_index(a.offsets, b + 1);
    for (int64_t i = start; i < end; ++i) {
      const int64_t id = get_index(a.indices, i);
      const double w = weighted ? get(a.per_sample_weights, i) : 1.0;
      for (int64_t k = 0; k < dim; ++k) acc[static_cast<size_t>(k)] += w * get(a.table, id, k);
    }
    const double count = static_cast<double>(end - start);
    const bool divide = a.mode == EmbeddingBagMode::mean && count > 0;
    for (int64_t k = 0; k < dim; ++k)
      set(a.out, divide ? acc[static_cast<size_t>(k)] / count : acc[static_cast<size_t>(k)], b, k);
  }
}

fk_status embedding_bag_cpu(const void* args, void*) {
  return op_guard([&] {
    const auto& a = *static_cast<const A*>(args);
    validate_embedding_bag(a, DeviceType::cpu);
    embedding_bag_reference(a);
  });
}

// A fixed hash of an index (splitmix64's finaliser): ragged lengths that do not depend on the
// case's seed.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The bags' lengths: the list, or batch bags of bag_size (spread down to bag_size_min).
std::vector<int64_t> bag_lengths(const Json& w) {
  if (w.contains("bag_sizes")) {
    std::vector<int64_t> lens = wl_int_list(w, "bag_sizes");
    for (size_t i = 0; i < lens.size(); ++i)
      FK_CHECK(lens[i] >= 0, A::kName, " workload: bag_sizes[", i, "] is negative (", lens[i], ")");
    FK_CHECK(!w.contains("batch") || wl_int(w, "batch") == static_cast<int64_t>(lens.size()), A::kName,
             " workload: batch and the length of bag_sizes disagree in ", w.dump());
    return lens;
  }
  const int64_t n = wl_int(w, "batch"), hi = wl_int(w, "bag_size"), lo = wl_int(w, "bag_size_min", hi);
  FK_CHECK(n >= 0 && lo >= 0 && lo <= hi, A::kName,
           " workload needs batch >= 0 and 0 <= bag_size_min <= bag_size, got ", w.dump());
  std::vector<int64_t> lens(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lens[static_cast<size_t>(i)] =
        lo + static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % static_cast<uint64_t>(hi - lo + 1));
  return lens;
}

EmbeddingBagMode wl_mode(const Json& w) {
  const std::string m = wl_string(w, "mode", "sum");
  if (m == "sum") return EmbeddingBagMode::sum;
  if (m == "mean") return EmbeddingBagMode::mean;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, A::kName, " workload mode must be \"sum\" or \"mean\", got \"", m, "\"");
}

// The indices the bags read: all of them but the unused ones around the bags.
int64_t indices_in_bags(const Json& w, int64_t num_indices) {
  return num_indices - wl_int(w, "unused_before", 0) - wl_int(w, "unused_after", 0);
}

std::vector<int64_t> host_offsets(const TensorView& offsets) {
  Tensor h = Tensor::empty({offsets.shape[0]}, offsets.dtype);
  rt::memcpy_sync(h.data(), Device::cpu(), offsets.data, offsets.device, h.nbytes());
  std::vector<int64_t> out(static_cast<size_t>(offsets.shape[0]));
  for (int64_t i = 0; i < offsets.shape[0]; ++i) out[static_cast<size_t>(i)] = get_index(h.view(), i);
  return out;
}

// The workload of a captured call (the offsets copied to the host: capture synchronises
// around every call anyway). Equal bag lengths are written as a count and a length.
Json workload_from_call(const void* args) {
  const auto& a = *static_cast<const A*>(args);
  const std::vector<int64_t> off = host_offsets(a.offsets);
  std::vector<int64_t> lens;
  for (size_t i = 0; i + 1 < off.size(); ++i) lens.push_back(off[i + 1] - off[i]);
  Json w{{"rows", a.table.shape[0]},
         {"dim", a.table.shape[1]},
         {"dtype", std::string(dtype_name(a.table.dtype))},
         {"index_dtype", std::string(dtype_name(a.indices.dtype))},
         {"mode", a.mode == EmbeddingBagMode::mean ? "mean" : "sum"},
         {"weighted", arg_present(a.per_sample_weights)}};
  const bool equal = !lens.empty() && std::all_of(lens.begin(), lens.end(), [&](int64_t l) { return l == lens[0]; });
  if (equal) {
    w["batch"] = static_cast<int64_t>(lens.size());
    w["bag_size"] = lens[0];
  } else {
    w["bag_sizes"] = lens;
  }
  if (off.front() > 0) w["unused_before"] = off.front();
  if (off.back() < a.indices.shape[0]) w["unused_after"] = a.indices.shape[0] - off.back();
  return w;
}

// Against the f64 oracle. The fp32 sum of a bag of n rows carries up to n roundings of
// partial sums whose size grows to about sqrt(n) times a term (random signs), a term at
// most max |table| * max |weight| (1 and 2 in these cases); sums that cancel to near zero
// get no help from rtol, so this goes into atol on top of the dtype's default (it only
// matters for f32 outputs: 16-bit roundings are far larger).
Tolerance embedding_bag_tolerance(const OpCase& c, DType out_dtype) {
  Tolerance tol = default_tolerance(out_dtype);
  const std::vector<int64_t> lens = bag_lengths(c.workload);
  const double longest = lens.empty() ? 0.0 : static_cast<double>(*std::max_element(lens.begin(), lens.end()));
  const double term = arg_present(c.as<A>().per_sample_weights) ? 2.0 : 1.0;
  tol.atol += 4 * std::ldexp(1.0, -24) * longest * std::sqrt(longest) * term;
  return tol;
}

Json bench(int64_t batch, int64_t bag_size, int64_t bag_size_min, int64_t rows, const char* dtype = "bf16") {
  Json w{{"batch", batch}, {"bag_size", bag_size}, {"rows", rows}, {"dim", 128}, {"dtype", dtype}};
  if (bag_size_min != bag_size) w["bag_size_min"] = bag_size_min;
  return w;
}

OpDef make_def() {
  OpDef d;
  d.name = A::kName;
  d.family = "recsys";
  d.level = "L1";
  d.summary =
      "out[b, :] = sum (or mean) of table rows at indices[offsets[b] .. offsets[b+1]), optionally weighted: "
      "PyTorch's nn.EmbeddingBag, DLRM's per-table lookup of a sample's categorical ids";
  d.args_size = sizeof(A);
  // The table may be a row slice of a wider store; out rows may land in a wider buffer (the
  // interaction's [B, F + 1, D] input, one table per slot).
  d.tensor_args = {{"out", ArgRole::out, offsetof(A, out), RowStride::any},
                   {"table", ArgRole::in, offsetof(A, table), RowStride::any},
                   {"indices", ArgRole::in, offsetof(A, indices)},
                   {"offsets", ArgRole::in, offsetof(A, offsets)},
                   {"per_sample_weights", ArgRole::in, offsetof(A, per_sample_weights)}};
  d.make_case = [layout = d.tensor_args](const Json& w, uint64_t seed) {
    const std::vector<int64_t> lens = bag_lengths(w);
    const int64_t rows = wl_int(w, "rows"), dim = wl_int(w, "dim");
    const int64_t before = wl_int(w, "unused_before", 0), after = wl_int(w, "unused_after", 0);
    const DType dt = wl_dtype(w), idt = wl_dtype(w, "index_dtype", DType::i32);
    FK_CHECK(rows > 0 && dim > 0 && before >= 0 && after >= 0, A::kName,
             " workload needs rows > 0, dim > 0 and unused_before, unused_after >= 0, got ", w.dump());
    FK_CHECK(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16, A::kName,
             " workload dtype must be f32, f16 or bf16, got ", w.dump());
    FK_CHECK(idt == DType::i32 || idt == DType::i64, A::kName, " workload index_dtype must be i32 or i64, got ",
             w.dump());
    const int64_t limit = idt == DType::i32 ? std::numeric_limits<int32_t>::max() : (int64_t{1} << 32);
    FK_CHECK(rows <= limit, A::kName, " workload: ", rows, " rows do not fit ", dtype_name(idt), " indices");
    int64_t total = before;
    for (int64_t l : lens) total += l;
    FK_CHECK(total + after <= limit, A::kName, " workload: ", total + after, " indices do not fit ", dtype_name(idt),
             " offsets");
    const auto bags = static_cast<int64_t>(lens.size());
    OpCase c = begin_case<A>(w, layout.size());
    c.tensors[0] = Tensor::empty({bags, dim}, dt);
    c.tensors[1] = random_tensor({rows, dim}, dt, seed, 1);
    c.tensors[2] = random_int_tensor({total + after}, idt, seed, 2, 0, rows);
    c.tensors[3] = Tensor::empty({bags + 1}, idt);
    int64_t at = before;
    store_element(c.tensors[3].view().element_ptr(0), idt, static_cast<double>(at));
    for (int64_t b = 0; b < bags; ++b) {
      at += lens[static_cast<size_t>(b)];
      store_element(c.tensors[3].view().element_ptr(b + 1), idt, static_cast<double>(at));
    }
    c.tensors[4] =
        wl_bool(w, "weighted", false) ? random_tensor({total + after}, dt, seed, 3, 0.f, 2.f) : absent_tensor(dt);
    c.as<A>().mode = wl_mode(w);
    c.bind(layout);
    return c;
  };
  d.cost = [](const OpCase& c) {
    const auto& a = c.as<A>();
    // Each row a bag reads, its index (and weight) once; the offsets; each out row written.
    // The table's other rows are not traffic.
    const double reads = static_cast<double>(indices_in_bags(c.workload, a.indices.shape[0]));
    const double per_read = static_cast<double>(a.table.shape[1] * a.table.element_size() + a.indices.element_size() +
                                                (arg_present(a.per_sample_weights) ? a.table.element_size() : 0));
    return OpCost{reads * per_read + static_cast<double>(a.offsets.nbytes() + a.out.nbytes()),
                  reads * static_cast<double>(a.table.shape[1]), DType::f32};
  };
  d.tolerance = [](const OpCase& c, const TensorArg&, DType dt) { return embedding_bag_tolerance(c, dt); };
  using J = Json;
  // Edge shapes: an empty bag among others; MLPerf's one-hot bags at D = 128; ragged bags
  // up to 100 with empty ones and i64 indices; mean (with empty bags) and weighted sums in
  // each dtype; widths that are not a multiple of the 16-byte word (element path); one
  // column; long rows over many words; a slice of a packed index array; no bags; only empty
  // bags; a two-row table read 150 times (every index repeats).
  d.test_workloads = {
      J{{"bag_sizes", {1, 0, 3, 2}}, {"rows", 10}, {"dim", 8}},
      J{{"batch", 16}, {"bag_size", 1}, {"rows", 1000}, {"dim", 128}},
      J{{"batch", 33}, {"bag_size", 100}, {"bag_size_min", 0}, {"rows", 5000}, {"dim", 128}, {"index_dtype", "i64"}},
      J{{"bag_sizes", {5, 0, 1, 7}}, {"rows", 50}, {"dim", 64}, {"mode", "mean"}, {"dtype", "f16"}},
      J{{"bag_sizes", {6, 0, 2, 5, 1}}, {"rows", 100}, {"dim", 128}, {"weighted", true}, {"dtype", "f32"}},
      J{{"batch", 7}, {"bag_size", 4}, {"rows", 30}, {"dim", 48}, {"weighted", true}, {"index_dtype", "i64"}},
      J{{"bag_sizes", {2, 3, 1}}, {"rows", 20}, {"dim", 13}},
      J{{"bag_sizes", {3, 0, 2}}, {"rows", 9}, {"dim", 20}, {"mode", "mean"}},
      J{{"bag_sizes", {4, 1}}, {"rows", 6}, {"dim", 1}, {"dtype", "f32"}},
      J{{"bag_sizes", {2, 0, 4}}, {"rows", 16}, {"dim", 4096}},
      J{{"bag_sizes", {3, 1}}, {"rows", 10}, {"dim", 1000}, {"dtype", "f32"}, {"mode", "mean"}},
      J{{"bag_sizes", {2, 3}}, {"rows", 30}, {"dim", 32}, {"unused_before", 5}, {"unused_after", 3}},
      J{{"bag_sizes", J::array()}, {"rows", 10}, {"dim", 8}},
      J{{"bag_sizes", {0, 0, 0}}, {"rows", 5}, {"dim", 16}, {"mode", "mean"}},
      J{{"batch", 3}, {"bag_size", 50}, {"rows", 2}, {"dim", 64}, {"dtype", "f16"}},
  };
  // DLRM at MLPerf's shapes (D = 128): batches of 1, 2048 and 16384 samples; MLPerf's
  // one-hot bags (DLRM on Criteo Terabyte) and the multi-hot bags of its DLRMv2 benchmark
  // (tables with 3, 27 and 100 ids a sample; ragged bags of 1 to 100); tables of 1e6 rows
  // and of 4e6 rows (0.95 GiB in bf16: the largest a bench case holds; MLPerf's hashed
  // tables reach 4e7 rows, 10 GB, but a gather of uniform rows from 1 GiB already misses the
  // 50 MB L2 on every row); the fp32 tables of MLPerf's reference.
  d.bench_workloads = {
      bench(16384, 1, 1, 1000000),  bench(16384, 100, 1, 4000000),        bench(16384, 100, 100, 4000000),
      bench(2048, 100, 1, 1000000), bench(16384, 27, 27, 1000000),        bench(16384, 3, 3, 4000000),
      bench(1, 100, 100, 1000000),  bench(16384, 100, 1, 1000000, "f32"),
  };
  d.workload_from_call = workload_from_call;
  d.architectures = {"dlrm"};
  return d;
}

FK_REGISTER_OP(make_def);
FK_REGISTER_IMPL("embedding_bag", cpu, embedding_bag_cpu);

}  // namespace
}  // namespace fk::ops
