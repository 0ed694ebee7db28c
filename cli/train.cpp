// train.cpp — `normcore train`: the training runtime (train/train.h) on the
// command line. Under mpirun every rank runs this; rank 0 alone prints and
// writes files.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "train/train.h"

namespace nc {
namespace app {

int train_command(int argc, char** argv) {
    Distributed dist = start_distributed(argc, argv);
    if (!dist.root() && !std::freopen("/dev/null", "w", stdout)) throw Error("rank " + std::to_string(dist.rank) + ": cannot silence stdout");
    Flags flags("train", train_flags());
    flags.parse(argc, argv, 2);
    if (flags.help_requested()) {
        std::cout << "Trains a model. With no flags: the default small GPT-2 on the fortunes corpus.\n\n" << flags.usage();
        return 0;
    }
    TrainResult result = train_run(flags, dist, TrainOutput{stdout, 1});
    // A NaN or Inf stopped the run: an error for the command line (one line
    // on stderr, exit status 1), a result the studies count as a diverged run.
    if (result.stop == StopReason::NonFinite) throw Error(result.message);
    finish_distributed(dist);
    return 0;
}

}  // namespace app
}  // namespace nc
