// mode.h — the switches that change how the engine behaves.
//
//   grad mode   on by default; off inside a NoGradGuard scope, where ops
//               record nothing (evaluation, optimizer updates, gradcheck's
//               finite differences).
//   anomaly     off by default; when on, the first op whose forward output or
//               backward gradient holds NaN/Inf throws an Error naming the op
//               and its input shapes. Turn on with set_anomaly_enabled(true)
//               or the environment variable NORMCORE_ANOMALY=1.
//   trace       off by default; when on, backward() prints every node it
//               visits to stderr. set_trace_enabled(true) or NORMCORE_TRACE=1.
//
// They are per thread, like PyTorch's grad mode.
#pragma once

namespace nc {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// RAII: grad mode set to `enabled` for the guard's lifetime, restored afterwards.
class GradModeGuard {
public:
    explicit GradModeGuard(bool enabled) : previous_(is_grad_enabled()) { set_grad_enabled(enabled); }
    ~GradModeGuard() { set_grad_enabled(previous_); }
    GradModeGuard(const GradModeGuard&) = delete;
    GradModeGuard& operator=(const GradModeGuard&) = delete;

private:
    bool previous_;
};

// The usual case: grad mode off (evaluation, optimizer updates).
class NoGradGuard : public GradModeGuard {
public:
    NoGradGuard() : GradModeGuard(false) {}
};

bool is_anomaly_enabled();
void set_anomaly_enabled(bool enabled);
bool is_trace_enabled();
void set_trace_enabled(bool enabled);

}  // namespace nc
