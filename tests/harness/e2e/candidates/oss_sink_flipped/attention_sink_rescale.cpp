// expect: INCORRECT
// The honest sink rescale with the sink logit's sign flipped (see oss_honest/).
#define FLIP_SINK_SIGN
#include "../oss_honest/attention_sink_rescale.cpp"
