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

inline void PrintTo(const OpWorkload& w, std::ostream* os) { *os << w.op << " " << w.workload.dump(); }

inline std::string op_workload_name(const OpWorkload& w) { return w.op + "_" + std::to_string(w.index); }

}  // namespace fk::test
