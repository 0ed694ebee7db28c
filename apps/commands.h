// commands.h — the subcommands of the `normcore` program.
#pragma once

namespace nc {
namespace app {

int train_command(int argc, char** argv);     // apps/train.cpp
int generate_command(int argc, char** argv);  // apps/generate.cpp
int eval_command(int argc, char** argv);      // apps/generate.cpp
int bench_command(int argc, char** argv);     // apps/bench.cpp
int tokenize_command(int argc, char** argv);  // apps/tokenize.cpp
int experiment_command(int argc, char** argv);  // apps/experiment.cpp
int corpus_command(int argc, char** argv);      // apps/corpus.cpp

}  // namespace app
}  // namespace nc
