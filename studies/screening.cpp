#include "studies/screening.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace nc {
namespace app {

bool predict(const ThresholdRule& rule, double saturation) { return (saturation >= rule.threshold) == rule.helps_above; }

double ScreeningScore::accuracy() const { return total > 0 ? (double)correct / (double)total : NAN; }

ScreeningScore score(const std::vector<ScreeningCase>& cases, const ThresholdRule& rule) {
    ScreeningScore s;
    for (const ScreeningCase& c : cases) {
        s.correct += predict(rule, c.saturation) == c.helped;
        ++s.total;
    }
    return s;
}

ThresholdRule fit_threshold(const std::vector<ScreeningCase>& cases) {
    std::vector<double> sat;
    for (const ScreeningCase& c : cases) sat.push_back(c.saturation);
    std::sort(sat.begin(), sat.end());
    sat.erase(std::unique(sat.begin(), sat.end()), sat.end());
    std::vector<double> thresholds;
    if (sat.empty()) return ThresholdRule{};
    thresholds.push_back(sat.front() - 1);  // every case above: one outcome for all
    for (size_t i = 0; i + 1 < sat.size(); ++i) thresholds.push_back((sat[i] + sat[i + 1]) / 2);
    thresholds.push_back(sat.back() + 1);
    ThresholdRule best;
    int best_correct = -1;
    for (double t : thresholds)
        for (bool above : {true, false}) {
            ThresholdRule r{t, above};
            int correct = score(cases, r).correct;
            if (correct > best_correct) {
                best_correct = correct;
                best = r;
            }
        }
    return best;
}

// Holds out each group in turn (in increasing order) and scores the predictions for its cases.
using HeldOutPredictor = std::function<bool(const std::vector<ScreeningCase>& rest, const ScreeningCase& held_out)>;

static ScreeningScore hold_out_each_group(const std::vector<ScreeningCase>& cases, const HeldOutPredictor& predict_held_out) {
    std::set<int> groups;
    for (const ScreeningCase& c : cases) groups.insert(c.group);
    ScreeningScore s;
    for (int g : groups) {
        std::vector<ScreeningCase> held, rest;
        for (const ScreeningCase& c : cases) (c.group == g ? held : rest).push_back(c);
        for (const ScreeningCase& c : held) {
            s.correct += predict_held_out(rest, c) == c.helped;
            ++s.total;
        }
    }
    return s;
}

ScreeningScore leave_one_group_out(const std::vector<ScreeningCase>& cases) {
    return hold_out_each_group(cases, [](const std::vector<ScreeningCase>& rest, const ScreeningCase& c) {
        return predict(fit_threshold(rest), c.saturation);
    });
}

ScreeningScore majority_leave_one_group_out(const std::vector<ScreeningCase>& cases) {
    return hold_out_each_group(cases, [](const std::vector<ScreeningCase>& rest, const ScreeningCase&) {
        int helped = 0;
        for (const ScreeningCase& r : rest) helped += r.helped;
        return 2 * helped > (int)rest.size();
    });
}

}  // namespace app
}  // namespace nc
