// commands.h — the subcommands of the `normcore` program.
#pragma once

namespace nc {
namespace app {

int train_command(int argc, char** argv);     // cli/train.cpp
int generate_command(int argc, char** argv);  // cli/generate.cpp
int eval_command(int argc, char** argv);      // cli/generate.cpp
int bench_command(int argc, char** argv);     // cli/bench.cpp
int tokenize_command(int argc, char** argv);  // cli/tokenize.cpp
int experiment_command(int argc, char** argv);  // cli/experiment.cpp
int corpus_command(int argc, char** argv);      // cli/corpus.cpp
int memory_command(int argc, char** argv);      // cli/memory.cpp

}  // namespace app
}  // namespace nc
