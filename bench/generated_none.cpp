// No emitted predictors linked in (see generated_hook.h for how to add them).
#include "generated_hook.h"

namespace tunecast::bench {

const GeneratedPredictor* generated_predictors(int* count) {
  *count = 0;
  return nullptr;
}

}  // namespace tunecast::bench
