// expect: INCORRECT
// The honest gated delta rule of gdn_honest/ with a state leak: a fresh sequence (its
// has_initial_state 0) carries on from the state the sequence packed before it in the
// batch ended with, as a kernel that ignores the sequence boundaries would. Qwen3-Next's
// prompts that share a prefill step then see each other's state and its outputs move.
#define LEAK_STATE_INTO_FRESH_SEQUENCES 1
#include "../gdn_honest/chunk_gated_delta_rule.cpp"
