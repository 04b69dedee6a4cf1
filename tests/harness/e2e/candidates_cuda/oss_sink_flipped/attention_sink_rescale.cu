// expect: INCORRECT
// The honest CUDA sink rescale of oss_honest/ with the sink logit's sign flipped.
#define FLIP_SINK_SIGN
#include "../oss_honest/attention_sink_rescale.cu"
