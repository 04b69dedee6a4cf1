#include "runtime/state/state_spec.h"

namespace fk::runtime {

std::string_view state_kind_name(StateKind kind) {
  switch (kind) {
    case StateKind::none: return "none";
    case StateKind::paged_kv: return "paged_kv";
    case StateKind::recurrent_slot: return "recurrent_slot";
    case StateKind::cross_attention: return "cross_attention";
  }
  return "unknown";
}

}  // namespace fk::runtime
