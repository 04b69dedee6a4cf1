// expect: COMPILE_ERROR
// Does not compile: the compiler's message must come back verbatim.
#include "common.h"

fk_status run(const void* raw, void*) { return this_is_not_declared(raw); }

FK_EXPORT_CANDIDATE(rms_norm, run)
