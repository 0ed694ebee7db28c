// commands.h — the subcommands of the `normcore` program.
#pragma once

namespace nc {
namespace app {

int train_command(int argc, char** argv);     // apps/train.cpp
int generate_command(int argc, char** argv);  // apps/generate.cpp
int eval_command(int argc, char** argv);      // apps/generate.cpp

}  // namespace app
}  // namespace nc
