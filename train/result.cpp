// result.cpp — a run's TrainResult as RUN_DIR/result.json (train/train.h).
//
// JSON has no NaN: a number that is not finite (no validation, a diverged
// loss) is written as null and read back as NaN.
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tensor/error.h"
#include "train/train.h"

namespace nc {
namespace app {

using nlohmann::json;

const char* to_string(StopReason reason) { return reason == StopReason::Finished ? "finished" : "non-finite"; }

StopReason parse_stop_reason(const std::string& name) {
    if (name == "finished") return StopReason::Finished;
    if (name == "non-finite") return StopReason::NonFinite;
    throw Error("result: unknown stop reason '" + name + "' (finished or non-finite)");
}

static json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }
static double number_of(const json& j) { return j.is_null() ? NAN : j.get<double>(); }

void write_result(const TrainResult& r, const std::string& path) {
    json losses = json::array();
    for (double x : r.losses) losses.push_back(number(x));
    json j = {{"stop", to_string(r.stop)},
              {"message", r.message},
              {"steps", r.steps},
              {"train_loss", number(r.train_loss)},
              {"val_loss", number(r.val_loss)},
              {"ms_per_step", number(r.ms_per_step)},
              {"tok_per_s", number(r.tok_per_s)},
              {"mfu", number(r.mfu)},
              {"skipped_steps", r.skipped_steps},
              {"overflow_skipped_steps", r.overflow_skipped_steps},
              {"loss_scale", number(r.loss_scale)},
              {"peak_mib", number(r.peak_mib)},
              {"parameters_mib", number(r.parameters_mib)},
              {"gradients_mib", number(r.gradients_mib)},
              {"optimizer_mib", number(r.optimizer_mib)},
              {"activations_mib", number(r.activations_mib)},
              {"gradients_and_workspace_mib", number(r.gradients_and_workspace_mib)},
              {"run_dir", r.run_dir},
              {"files", r.files},
              {"losses", losses}};
    // Written whole, then renamed: a killed run leaves no half a result.
    {
        std::ofstream out(path + ".tmp");
        out << j.dump(1) << "\n";
        if (!out) throw Error("cannot write '" + path + ".tmp' (disk full, or the run directory is not writable)");
    }
    if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) throw Error("cannot rename '" + path + ".tmp' to '" + path + "'");
}

TrainResult read_result(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot read '" + path + "' (did the run end?)");
    try {
        json j = json::parse(in);
        TrainResult r;
        r.stop = parse_stop_reason(j.at("stop").get<std::string>());
        r.message = j.at("message").get<std::string>();
        r.steps = j.at("steps").get<int64_t>();
        r.train_loss = number_of(j.at("train_loss"));
        r.val_loss = number_of(j.at("val_loss"));
        r.ms_per_step = number_of(j.at("ms_per_step"));
        r.tok_per_s = number_of(j.at("tok_per_s"));
        r.mfu = number_of(j.at("mfu"));
        r.skipped_steps = j.at("skipped_steps").get<int64_t>();
        // Results written before mixed precision have neither field.
        r.overflow_skipped_steps = j.value("overflow_skipped_steps", (int64_t)0);
        r.loss_scale = j.contains("loss_scale") ? number_of(j.at("loss_scale")) : NAN;
        r.peak_mib = number_of(j.at("peak_mib"));
        r.parameters_mib = number_of(j.at("parameters_mib"));
        r.gradients_mib = number_of(j.at("gradients_mib"));
        r.optimizer_mib = number_of(j.at("optimizer_mib"));
        r.activations_mib = number_of(j.at("activations_mib"));
        r.gradients_and_workspace_mib =
            j.contains("gradients_and_workspace_mib") ? number_of(j.at("gradients_and_workspace_mib")) : NAN;
        r.run_dir = j.at("run_dir").get<std::string>();
        r.files = j.at("files").get<std::vector<std::string>>();
        for (const json& x : j.at("losses")) r.losses.push_back(number_of(x));
        return r;
    } catch (const json::exception& e) {
        throw Error("'" + path + "' is not a run's result.json: " + e.what());
    }
}

}  // namespace app
}  // namespace nc
