// expect: COMPILE_ERROR
// Built against another ABI version: refused at load time.
#include "common.h"

extern "C" __attribute__((visibility("default"))) int fk_abi_version(void) { return 999; }
extern "C" __attribute__((visibility("default"))) fk_status fk_op_rms_norm(const void* raw, void*) {
  adv::honest(*static_cast<const fk::ops::RmsNormArgs*>(raw));
  return FK_OK;
}
