#include "autograd/mode.h"

#include <cstdlib>
#include <cstring>

namespace nc {

// An environment variable counts as "on" when set to anything but "" or "0".
static bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
}

static thread_local bool grad_enabled = true;
static thread_local bool anomaly_enabled = env_flag("NORMCORE_ANOMALY");
static thread_local bool trace_enabled = env_flag("NORMCORE_TRACE");

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }
bool is_anomaly_enabled() { return anomaly_enabled; }
void set_anomaly_enabled(bool enabled) { anomaly_enabled = enabled; }
bool is_trace_enabled() { return trace_enabled; }
void set_trace_enabled(bool enabled) { trace_enabled = enabled; }

}  // namespace nc
