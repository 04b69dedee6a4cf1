// expect: INCORRECT
// The honest gated delta rule of gdn_honest/ as Qwen3-Next's decode step, which never
// writes its final state back: every decode step starts again from the state the prompt
// left. Teacher forcing (prefills) never runs it; the greedy tokens leave the baseline's
// where its token clearly led, and the divergence check fails it.
#define EXPORT_AS_RECURRENT 1
#define DROP_FINAL_STATE 1
#include "../gdn_honest/chunk_gated_delta_rule.cpp"
