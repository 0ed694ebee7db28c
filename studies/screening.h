// screening.h — the DyT study's screening rule, and how well it predicts.
//
// The DyT regime study (Verma 2026) proposes a cheap test before a long run:
// train briefly, measure the DyT layers' saturation (the fraction of
// |alpha x| > 2), and predict "DyT helps" iff the saturation is at least
// 0.43. A rule fitted and scored on the same cells flatters itself, so the
// study also scores it the honest way: leave one training-set size out, fit
// the threshold (and its direction) on the other sizes, predict the held-out
// one, and compare with the rule that ignores saturation and predicts the
// other sizes' majority outcome.
#pragma once

#include <vector>

namespace nc {
namespace app {

// The screening rule's threshold: the DyT study's fitted midpoint 0.4295,
// rounded (DyT helps iff the held-out saturation is at least this).
constexpr double kScreeningThreshold = 0.43;

struct ScreeningCase {
    double saturation = 0;  // at the calibration step (or the end)
    bool helped = false;    // DyT's validation loss below the vanilla model's
    int group = 0;          // the cell's training-set size (what leave-one-out holds out)
};

// Predicts "helped" iff (saturation >= threshold) == helps_above.
struct ThresholdRule {
    double threshold = kScreeningThreshold;
    bool helps_above = true;  // the paper's direction
};
bool predict(const ThresholdRule& rule, double saturation);

struct ScreeningScore {
    int correct = 0, total = 0;
    double accuracy() const;  // NaN with no cases
};

// The rule's score on `cases`.
ScreeningScore score(const std::vector<ScreeningCase>& cases, const ThresholdRule& rule);
// The rule with the most right on `cases`: thresholds between consecutive
// distinct saturations (and one below all, one above all), both directions.
// Ties go to the lowest threshold, then to helps_above = true.
ThresholdRule fit_threshold(const std::vector<ScreeningCase>& cases);
// Each group in turn is held out: the rule fitted on the others predicts it.
ScreeningScore leave_one_group_out(const std::vector<ScreeningCase>& cases);
// The same, predicting the other groups' majority outcome (a tie: not helped).
ScreeningScore majority_leave_one_group_out(const std::vector<ScreeningCase>& cases);

}  // namespace app
}  // namespace nc
