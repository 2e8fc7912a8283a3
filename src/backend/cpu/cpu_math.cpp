// The clamp bounds of exp_fast (cpu_math.h), defined here rather than in the header so
// that the compiler cannot constant-fold them into the kernels' loops (see the header).
#include "backend/cpu/cpu_math.h"

namespace depbloom::ops::cpu {

const float kExpFastLowest = -87.0f;
const float kExpFastHighest = 88.0f;

}  // namespace depbloom::ops::cpu
