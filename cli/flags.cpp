#include "cli/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "tensor/error.h"

namespace nc {
namespace app {

// The values each numeric flag may take when given, for every command that
// has it: one table, so `--steps` means the same everywhere. A value outside
// is an error naming the flag, the value and the range. Defaults are not
// checked (an experiment's --steps 0 means "the scale's own"). Flags not
// listed need only parse; their commands check what else they need.
namespace {
struct Range {
    double lo, hi;
    bool lo_open = false, hi_open = false;  // (lo, ...] or [..., hi)
};
const double kHuge = 1e15;
const std::map<std::string, Range> kRanges = {
    {"steps", {1, kHuge}},          {"batch", {1, 1 << 20}},         {"seq", {1, 1 << 20}},
    {"layers", {1, 1024}},          {"width", {1, 1 << 16}},         {"heads", {1, 4096}},
    {"kv-heads", {0, 4096}},        {"accum", {1, 1 << 20}},         {"lr", {0, 1e3, true}},
    {"momentum", {0, 1, false, true}}, {"weight-decay", {0, 1e3}},   {"beta1", {0, 1, false, true}},
    {"beta2", {0, 1, false, true}}, {"eps", {0, 1, true}},           {"grad-clip", {0, kHuge}},
    {"warmup", {0, kHuge}},         {"min-lr-ratio", {0, 1}},        {"dropout", {0, 1, false, true}},
    {"eval-every", {0, kHuge}},     {"eval-batches", {1, 1 << 20}},  {"eval-tokens", {0, kHuge}},  {"batches", {1, 1 << 20}},
    {"checkpoint-every", {0, kHuge}}, {"stop-after", {0, kHuge}},    {"sample-tokens", {0, 1 << 24}},
    {"sample-every", {0, kHuge}},   {"sample-every-tokens", {1, 1 << 24}}, {"max-tokens", {0, 1 << 30}},
    {"temperature", {0, 1e6}},      {"top-k", {0, 1 << 30}},         {"seed", {0, 9.2e18}},
    {"train-tokens", {0, kHuge}},   {"train-images", {0, kHuge}},    {"limit", {0, kHuge}},
    {"image-size", {1, 4096}},      {"patch", {1, 4096}},            {"channels", {1, 3}},
    {"vocab-size", {256, 1 << 24}}, {"spike-window", {1, 1 << 20}},  {"spike-factor", {1, 1e6, true}},
    {"saturation-threshold", {0, 1e6, true}}, {"geo-max-angle", {0, 10}}, {"geo-radius", {0, 1e6}}, {"jobs", {0, 256}},
    {"threads", {0, 4096}},         {"repeats", {1, 1 << 20}},       {"seeds", {0, 1000}},
};

// The flags of kRanges that take whole numbers (the others take any finite number).
bool is_integer_flag(const std::string& name) {
    static const char* const kReal[] = {"lr", "momentum", "weight-decay", "beta1", "beta2", "eps", "grad-clip",
                                        "min-lr-ratio", "dropout", "temperature", "spike-factor",
                                        "saturation-threshold", "geo-max-angle", "geo-radius"};
    for (const char* r : kReal)
        if (name == r) return false;
    return true;
}

void check_range(const std::string& name, const std::string& text, double x) {
    auto it = kRanges.find(name);
    if (it == kRanges.end()) return;
    const Range& r = it->second;
    bool ok = (r.lo_open ? x > r.lo : x >= r.lo) && (r.hi_open ? x < r.hi : x <= r.hi);
    if (ok) return;
    auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.15g", v);
        return std::string(buf);
    };
    throw Error("flag --" + name + ": " + text + " is out of range (it must be " + (r.lo_open ? "> " : ">= ") +
                num(r.lo) + " and " + (r.hi_open ? "< " : "<= ") + num(r.hi) + ")");
}
}  // namespace

Flags::Flags(std::string command, std::vector<FlagSpec> specs) : command_(std::move(command)), specs_(std::move(specs)) {}

const FlagSpec& Flags::spec(const std::string& name) const {
    for (const FlagSpec& s : specs_)
        if (s.name == name) return s;
    throw Error("normcore " + command_ + ": unknown flag --" + name + " (see normcore " + command_ + " --help)");
}

void Flags::parse(const std::vector<std::string>& args) {
    std::vector<std::string> copies = args;
    std::vector<char*> argv;
    for (std::string& a : copies) argv.push_back(&a[0]);
    parse((int)argv.size(), argv.data(), 0);
}

std::string flag_number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
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
    // Every numeric flag given is checked now, before anything runs: a value
    // that does not parse or is out of range must not surface only after
    // the data is loaded and the model built.
    for (const auto& [name, value] : values_) {
        if (!kRanges.count(name)) continue;
        if (is_integer_flag(name)) integer(name);
        else number(name);
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
    errno = 0;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0') throw Error("flag --" + name + ": '" + v + "' is not an integer");
    if (errno == ERANGE) throw Error("flag --" + name + ": " + v + " is too large for a 64-bit integer");
    if (values_.count(name)) check_range(name, v, (double)x);  // (defaults may mean "automatic", e.g. 0)
    return x;
}

double Flags::number(const std::string& name) const {
    std::string v = str(name);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') throw Error("flag --" + name + ": '" + v + "' is not a number");
    if (!std::isfinite(x)) throw Error("flag --" + name + ": '" + v + "' is not a finite number");
    if (values_.count(name)) check_range(name, v, x);
    return x;
}

bool Flags::on(const std::string& name) const { return str(name) == "true"; }

}  // namespace app
}  // namespace nc
