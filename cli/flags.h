// flags.h — long GNU-style flags: `--name value`, and `--name` for switches.
//
// A command declares every flag it accepts (with a default and a help line);
// anything else is an error naming the flag. Values are checked when read
// (`--steps abc` is "flag --steps: 'abc' is not an integer").
#pragma once

#include <map>
#include <string>
#include <vector>

namespace nc {
namespace app {

struct FlagSpec {
    std::string name;           // without the leading "--"
    std::string default_value;  // "" for none; switches use "false"
    std::string help;
    bool is_switch = false;
};

class Flags {
public:
    Flags(std::string command, std::vector<FlagSpec> specs);
    // Parses argv[first..]; throws nc::Error for unknown flags or missing values.
    void parse(int argc, char** argv, int first);
    // The same for flags held as strings (a study's cell, a test): args are
    // what follows the command, e.g. {"--steps", "5"}.
    void parse(const std::vector<std::string>& args);
    bool help_requested() const { return help_; }
    std::string usage() const;

    std::string str(const std::string& name) const;
    int64_t integer(const std::string& name) const;
    double number(const std::string& name) const;
    bool on(const std::string& name) const;
    bool given(const std::string& name) const;  // set on the command line
    bool accepts(const std::string& name) const;  // a flag of this command
    const FlagSpec& spec(const std::string& name) const;  // its declaration (default, help, switch)

private:
    std::string command_;
    std::vector<FlagSpec> specs_;
    std::map<std::string, std::string> values_;
    bool help_ = false;
};

// A number as a flag's value or default is written ("%g": 2 for 2.0, 0.001).
std::string flag_number(double x);

}  // namespace app
}  // namespace nc
