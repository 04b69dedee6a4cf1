// The (op, workload) pairs every backend is tested on: each registered op's test workloads.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "fk/op_registry.h"

namespace fk::test {

struct OpWorkload {
  std::string op;
  size_t index;
  Json workload;
};

inline std::vector<OpWorkload> all_op_workloads() {
  std::vector<OpWorkload> out;
  for (const OpDef* d : OpRegistry::global().defs())
    for (size_t i = 0; i < d->test_workloads.size(); ++i) out.push_back({d->name, i, d->test_workloads[i]});
  return out;
}

// The workloads of the ops with an argument that accepts row-strided views
// (TensorArg::row_stride): what the row-strided oracle tests run on.
inline std::vector<OpWorkload> strided_op_workloads() {
  std::vector<OpWorkload> out;
  for (OpWorkload& w : all_op_workloads()) {
    const OpDef& d = OpRegistry::global().def(w.op);
    for (const TensorArg& a : d.tensor_args)
      if (a.row_stride != RowStride::packed) {
        out.push_back(std::move(w));
        break;
      }
  }
  return out;
}

inline void PrintTo(const OpWorkload& w, std::ostream* os) { *os << w.op << " " << w.workload.dump(); }

inline std::string op_workload_name(const OpWorkload& w) { return w.op + "_" + std::to_string(w.index); }

}  // namespace fk::test
