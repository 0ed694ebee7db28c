#include "apps/flags.h"

#include <cstdlib>

#include "tensor/error.h"

namespace nc {
namespace app {

Flags::Flags(std::string command, std::vector<FlagSpec> specs) : command_(std::move(command)), specs_(std::move(specs)) {}

const FlagSpec& Flags::spec(const std::string& name) const {
    for (const FlagSpec& s : specs_)
        if (s.name == name) return s;
    throw Error("normcore " + command_ + ": unknown flag --" + name + " (see normcore " + command_ + " --help)");
}

void Flags::parse(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            help_ = true;
            continue;
        }
        if (arg.rfind("--", 0) != 0)
            throw Error("normcore " + command_ + ": unexpected argument '" + arg + "' (flags look like --name value)");
        std::string name = arg.substr(2), value;
        size_t eq = name.find('=');
        if (eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        const FlagSpec& s = spec(name);
        if (s.is_switch) {
            if (eq != std::string::npos) throw Error("normcore " + command_ + ": --" + name + " takes no value");
            value = "true";
        } else if (eq == std::string::npos) {
            if (i + 1 >= argc) throw Error("normcore " + command_ + ": flag --" + name + " needs a value");
            value = argv[++i];
        }
        values_[name] = value;
    }
}

std::string Flags::usage() const {
    std::string text = "usage: normcore " + command_ + " [flags]\n\nflags:\n";
    for (const FlagSpec& s : specs_) {
        std::string left = "  --" + s.name + (s.is_switch ? "" : " VALUE");
        text += left + std::string(left.size() < 26 ? 26 - left.size() : 1, ' ') + s.help;
        if (!s.is_switch && !s.default_value.empty()) text += " (default " + s.default_value + ")";
        text += "\n";
    }
    return text;
}

std::string Flags::str(const std::string& name) const {
    auto it = values_.find(name);
    return it != values_.end() ? it->second : spec(name).default_value;
}

bool Flags::given(const std::string& name) const {
    spec(name);
    return values_.count(name) > 0;
}

bool Flags::accepts(const std::string& name) const {
    for (const FlagSpec& s : specs_)
        if (s.name == name) return true;
    return false;
}

int64_t Flags::integer(const std::string& name) const {
    std::string v = str(name);
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0') throw Error("flag --" + name + ": '" + v + "' is not an integer");
    return x;
}

double Flags::number(const std::string& name) const {
    std::string v = str(name);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') throw Error("flag --" + name + ": '" + v + "' is not a number");
    return x;
}

bool Flags::on(const std::string& name) const { return str(name) == "true"; }

}  // namespace app
}  // namespace nc
