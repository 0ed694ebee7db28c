// main.cpp — the `normcore` program: `normcore train | memory | generate | eval | tokenize | corpus | bench | experiment`.
//
// Every error a user can cause ends here as one clear line on stderr and a
// non-zero exit status; nothing crashes.
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/commands.h"
#include "train/distributed.h"
#include "tensor/error.h"

static const char* kUsage =
    "usage: normcore <command> [flags]\n"
    "\n"
    "commands:\n"
    "  train     train a model (no flags: the default small GPT-2 on the fortunes corpus)\n"
    "  memory    the tensor memory a training run needs (flags as train), predicted without allocating it\n"
    "  generate  sample text from trained weights\n"
    "  eval      loss and perplexity of trained weights on a data set\n"
    "  tokenize  encode a corpus once into a token file that train and eval map into memory\n"
    "  corpus build  the studies' corpus: train / tuning / validation splits of English text\n"
    "  bench     the machine's FMA peak, GEMM GFLOP/s, and training-step times by kind of op\n"
    "  experiment <name>  a study with logs, a table and plots:\n"
    "            norms     the residual placements (post, pre, sandwich, DeepNorm, GeoNorm)\n"
    "            dyt       LayerNorm/RMSNorm against Dynamic Tanh and differential attention\n"
    "            isometry  MLPs at initialization: the isometry gap against depth\n"
    "\n"
    "`normcore <command> --help` lists a command's flags.\n";

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    try {
        if (!std::strcmp(argv[1], "train")) return nc::app::train_command(argc, argv);
        if (!std::strcmp(argv[1], "memory")) return nc::app::memory_command(argc, argv);
        if (!std::strcmp(argv[1], "generate")) return nc::app::generate_command(argc, argv);
        if (!std::strcmp(argv[1], "eval")) return nc::app::eval_command(argc, argv);
        if (!std::strcmp(argv[1], "bench")) return nc::app::bench_command(argc, argv);
        if (!std::strcmp(argv[1], "tokenize")) return nc::app::tokenize_command(argc, argv);
        if (!std::strcmp(argv[1], "experiment")) return nc::app::experiment_command(argc, argv);
        if (!std::strcmp(argv[1], "corpus")) return nc::app::corpus_command(argc, argv);
        std::fprintf(stderr, "normcore: unknown command '%s'\n\n%s", argv[1], kUsage);
        return 2;
    } catch (const nc::Error& e) {
        // Under mpirun the other ranks would wait for this one forever.
        if (nc::app::running_distributed()) nc::app::abort_all_ranks(std::string("error: ") + e.what());
        std::fprintf(stderr, "normcore: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        if (nc::app::running_distributed()) nc::app::abort_all_ranks(std::string("unexpected error: ") + e.what());
        std::fprintf(stderr, "normcore: unexpected error: %s\n", e.what());
        return 1;
    }
}
