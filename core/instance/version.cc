#include "tracepipe/core/instance/version.h"

namespace tracepipe {
const char* version() noexcept { return "0.1.0"; }
}  // namespace tracepipe
