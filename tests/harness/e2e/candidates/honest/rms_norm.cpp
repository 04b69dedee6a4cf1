// The honest CPU rms_norm of the adversarial set, unchanged: inside the engine it must agree
// with the baseline token for token.
#include "../../../../adversarial/cpu/honest_fast.cpp"
