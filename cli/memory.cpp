// memory.cpp — `normcore memory`: how much tensor memory `normcore train`
// with the same flags will need, predicted without allocating it
// (train/memory_plan.h), and whether it fits a --budget.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "train/memory_plan.h"
#include "train/train.h"

namespace nc {
namespace app {

static std::vector<FlagSpec> memory_flags() {
    std::vector<FlagSpec> specs = train_flags();
    specs.push_back({"budget", "", "the memory the run may use, e.g. 6GB, 6GiB, 512MiB: says whether it fits (exit status 2 "
                                   "when it does not) and which settings would"});
    return specs;
}

// When the run does not fit: the same prediction with the settings that cut
// memory, each added to the flags given (those already set are skipped).
static void suggest(const Flags& flags, double budget_bytes) {
    struct Option {
        std::vector<std::string> args;
        bool applies;
    };
    bool recompute = flags.on("recompute"), fp32 = flags.str("precision") == "fp32";
    int64_t B = flags.integer("batch"), accum = flags.integer("accum");
    std::string half = std::to_string(B / 2), twice = std::to_string(accum * 2);
    std::vector<Option> options = {
        {{"--recompute"}, !recompute},
        {{"--precision", "bf16"}, fp32},
        {{"--recompute", "--precision", "bf16"}, !recompute && fp32},
        {{"--batch", half, "--accum", twice}, B >= 2 && B % 2 == 0},  // the same examples per step
    };
    std::printf("what would change it (each a prediction like the one above):\n");
    for (const Option& o : options) {
        if (!o.applies) continue;
        Flags changed = flags;
        changed.parse(o.args);
        MemoryPrediction p = predict_memory(changed);
        std::string args;
        for (const std::string& a : o.args) args += (args.empty() ? "" : " ") + a;
        std::printf("  %-36s peak %9.1f MiB: %s\n", args.c_str(), p.peak_mib,
                    p.worst_mib() * 1048576.0 <= budget_bytes ? "fits" : "does not fit");
    }
}

int memory_command(int argc, char** argv) {
    Flags flags("memory", memory_flags());
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Predicts the tensor memory `normcore train` with the same flags needs at its peak — parameters,\n"
                     "gradients, optimizer state, activations and workspace — by running two training steps on the\n"
                     "meta device, where tensors have shapes but no memory. Allocates nothing; needs no GPU.\n\n"
                  << flags.usage();
        return 0;
    }
    double budget = flags.given("budget") ? parse_memory_size(flags.str("budget"), "budget") : 0;
    MemoryPrediction p = predict_memory(flags);
    print_memory_prediction(p, budget, flags.str("budget"), stdout);
    if (budget <= 0 || p.worst_mib() * 1048576.0 <= budget) return 0;
    suggest(flags, budget);
    return 2;
}

}  // namespace app
}  // namespace nc
