// expect: INCORRECT
// The honest CUDA gated delta rule of gdn_honest/ as Qwen3-Next's decode step (captured in
// the engine's CUDA graphs), never writing its final state back: every decode step starts
// again from the state the prompt left. Teacher forcing (prefills) never runs it; the
// divergence check of fk e2e eval fails it.
#define EXPORT_AS_RECURRENT 1
#define DROP_FINAL_STATE 1
#include "../gdn_honest/chunk_gated_delta_rule.cu"
