// expect: INCORRECT
// The honest CUDA gated delta rule of gdn_honest/ with a state leak: a fresh sequence keeps
// the state the sequence before it in the call ended with (as a kernel that walks the
// packed sequences and misses a reset would). Prompts packed in one prefill then see each
// other's state, and the packed teacher forcing of fk e2e eval fails it.
#define LEAK_STATE_ACROSS_SEQUENCES 1
#include "../gdn_honest/chunk_gated_delta_rule.cu"
