// experiment.cpp — `normcore experiment <name>`: a study run with one
// command, writing CSV logs, a markdown table and plots to a results
// directory and printing the table at the end (studies/study.h; the studies
// are listed in studies/study.cpp).
//
//   norms      GPT-2 or Llama with every residual placement and GeoNorm decay,
//              each tuned and run with 3 seeds under the protocol (studies/protocol.h).
//   dyt        LayerNorm/RMSNorm against Dynamic Tanh across training-set
//              sizes, for GPT-2, Llama and ViT, with differential attention
//              as the contrast and the saturation screening rule.
//   isometry   deep MLPs at initialization: the Gram matrix's isometry gap
//              against depth, per activation and norm.
//
// Scales: --smoke (seconds, for the test suite), --quick (the default,
// minutes on 2 CPU cores), --full (larger, meant for a GPU).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "studies/study.h"
#include "train/lm.h"

namespace nc {
namespace app {

namespace fs = std::filesystem;

// ---- the command -----------------------------------------------------------------------

int experiment_command(int argc, char** argv) {
    std::string names;
    for (const Study& s : studies()) names += (names.empty() ? "" : ", ") + s.name;
    const std::string usage = "usage: normcore experiment <name> [--smoke | --quick | --full] [--out DIR] [flags]\n"
                              "experiments: " + names + " (normcore experiment <name> --help lists its flags)\n";
    if (argc < 3 || argv[2][0] == '-') {
        std::fputs(usage.c_str(), argc < 3 ? stderr : stdout);
        return argc < 3 ? 2 : 0;
    }
    std::string name = argv[2];
    auto found = std::find_if(studies().begin(), studies().end(), [&](const Study& s) { return s.name == name; });
    if (found == studies().end())
        throw Error("experiment: unknown experiment '" + name + "' (available: " + names + ")");
    const Study& study = *found;
    std::vector<FlagSpec> specs = {
        {"smoke", "false", "a seconds-long run (the test suite's)", true},
        {"quick", "false", "the default scale: minutes on 2 CPU cores", true},
        {"full", "false", "the larger scale, meant for a GPU", true},
        {"out", "", "results directory (default runs/experiment-<name>)"},
    };
    if (study.trains) {
        specs.push_back({"device", "cpu", "cpu | cuda: where the training runs go"});
        specs.push_back({"jobs", "0", "training runs at once (0: one per core on the CPU, 1 on a GPU)"});
        specs.push_back({"steps", "0", "override the scale's optimizer steps per run"});
        specs.push_back({"seeds", "0", "override the scale's number of seeds"});
        specs.push_back({"reuse", "false", "keep the runs of OUT/runs that finished under the same command (go on after an interruption)", true});
    }
    specs.insert(specs.end(), study.flags.begin(), study.flags.end());
    Flags flags("experiment " + name, specs);
    flags.parse(argc, argv, 3);
    if (flags.help_requested()) {
        std::fputs(flags.usage().c_str(), stdout);
        return 0;
    }
    int chosen = flags.on("smoke") + flags.on("quick") + flags.on("full");
    if (chosen > 1) throw Error("experiment: choose one of --smoke, --quick, --full");
    StudyOptions options;
    options.scale = flags.on("smoke") ? "smoke" : flags.on("full") ? "full" : "quick";
    std::string suffix = study.out_suffix ? study.out_suffix(flags) : "";
    options.out_dir = flags.str("out").empty() ? "runs/experiment-" + name + suffix : flags.str("out");
    options.flags = &flags;
    if (study.trains) {
        std::string device = flags.str("device");
        parse_device(device);  // a clear error now rather than one per training run
        int64_t jobs = flags.integer("jobs");
        if (jobs < 0) throw Error("flag --jobs: must be 0 (automatic) or more");
        options.reuse = flags.on("reuse");
        options.jobs = jobs > 0 ? (int)jobs : device == "cpu" ? (int)std::max(1u, std::thread::hardware_concurrency()) : 1;
        // The cells run in this process, and on a GPU they would share its
        // one stream and its record of a bad index: one at a time there.
        if (device != "cpu" && options.jobs > 1)
            throw Error("flag --jobs: the training runs share one process, so on " + device +
                        " they run one at a time (--jobs 1, the default there)");
        if (flags.integer("steps") < 0) throw Error("flag --steps: must be positive");
        if (flags.integer("seeds") < 0) throw Error("flag --seeds: must be positive");
        fs::create_directories(options.out_dir);
        fs::remove(options.out_dir + "/commands.txt");  // run_cells appends each phase's commands
    }
    return study.run(options);
}

}  // namespace app
}  // namespace nc
