// test_protocol.cpp — the studies' protocol (studies/protocol.h): the grid and
// its selection, the edge rule, Student t intervals, paired differences and
// verdicts. The t quantiles are checked against the t distribution itself,
// integrated numerically, not against the table they come from.
#include <cmath>

#include "studies/protocol.h"
#include "studies/screening.h"
#include "helpers.h"

using namespace nc;
using namespace nc::app;
using nc_test::check_error;

TEST_CASE("protocol: the grid, and the choice of a setting on tuning losses", "[protocol]") {
    TuningGrid grid{{3e-4, 1e-3, 3e-3}, {50, 200}};
    std::vector<Setting> s = grid_settings(grid);
    REQUIRE(s.size() == 6);
    CHECK(s[1].lr == 3e-4);
    CHECK(s[1].warmup == 200);
    CHECK(s[2].lr == 1e-3);
    CHECK(setting_name(s[5]) == "lr0.003-wu200");
    CHECK(setting_name({2.7e-3, 75}) != setting_name({3e-3, 75}));

    // A variant's own option, tried at every grid point (the DyT study's alpha0).
    std::vector<Setting> with = grid_settings(grid, {{"--dyt-alpha", "0.5"}, {"--dyt-alpha", "2"}});
    REQUIRE(with.size() == 12);
    CHECK(with[1].lr == 3e-4);
    CHECK(with[1].warmup == 50);
    CHECK(with[1].option == std::vector<std::string>{"--dyt-alpha", "2"});
    CHECK(setting_name(with[1]) == "lr0.0003-wu50-dyt-alpha2");
    CHECK(option_text(with[1]) == "--dyt-alpha 2");
    CHECK(option_text(s[0]).empty());
    CHECK(same_setting(with[1], Setting(3e-4, 50, {"--dyt-alpha", "2"})));
    CHECK_FALSE(same_setting(with[0], with[1]));
    // The best option wins like the best learning rate; edges are the learning rate's and warm-up's.
    TuningChoice best = choose_setting(with, {3, 2, 3, 3, 3, 3, 3, 1.5, 3, 3, 3, 3});
    CHECK(best.best.option == std::vector<std::string>{"--dyt-alpha", "2"});
    CHECK(best.best.lr == 1e-3);
    CHECK(best.best.warmup == 200);

    // An interior minimum: no edge, no extension.
    TuningChoice c = choose_setting(s, {3.0, 2.9, 2.5, 2.6, 2.7, NAN});
    CHECK(c.trained);
    CHECK(c.best.lr == 1e-3);
    CHECK(c.best.warmup == 50);
    CHECK(c.loss == 2.5);
    CHECK_FALSE(c.at_low_edge);
    CHECK_FALSE(c.at_high_edge);
    CHECK(extension_lr(c) == 0);
    // A diverged run (NaN, Inf) never wins, however the others score.
    c = choose_setting(s, {3.0, 2.9, 2.8, 2.7, INFINITY, NAN});
    CHECK(c.best.lr == 1e-3);
    CHECK(c.best.warmup == 200);
    // Ties go to the first tried.
    c = choose_setting(s, {2.0, 2.0, 3.0, 3.0, 3.0, 3.0});
    CHECK(c.best.warmup == 50);
    // The best at the smallest learning rate: flagged, extend below (/2).
    CHECK(c.at_low_edge);
    CHECK(extension_lr(c) == Approx(1.5e-4));
    // ... at the largest: extend above (x2).
    c = choose_setting(s, {3.0, 3.0, 2.9, 2.9, 2.8, 2.1});
    CHECK(c.at_high_edge);
    CHECK(extension_lr(c) == Approx(6e-3));
    // After an extension that did worse, the old edge is inside the range.
    std::vector<Setting> extended = s;
    extended.push_back({6e-3, 200});
    c = choose_setting(extended, {3.0, 3.0, 2.9, 2.9, 2.8, 2.1, 2.4});
    CHECK(c.best.lr == 3e-3);
    CHECK_FALSE(c.at_high_edge);
    CHECK(extension_lr(c) == 0);
    // Nothing trained: no choice, nothing to extend.
    c = choose_setting(s, {NAN, NAN, NAN, NAN, NAN, NAN});
    CHECK_FALSE(c.trained);
    CHECK(extension_lr(c) == 0);
    // One learning rate only sits at both edges: not an edge to extend past.
    c = choose_setting({{1e-3, 10}, {1e-3, 20}}, {2.0, 1.0});
    CHECK(extension_lr(c) == 0);
    check_error([&] { choose_setting(s, {1.0}); }, {"1 losses for 6 settings"});
}

TEST_CASE("protocol: a warm-up at the grid's edge is extended too, within its limit", "[protocol]") {
    TuningGrid grid{{3e-4, 1e-3, 3e-3}, {50, 200}, 300};
    std::vector<Setting> s = grid_settings(grid);
    // Best at lr 1e-3 (interior) with the longer warm-up: try 400 > 300, the limit: none.
    TuningChoice c = choose_setting(s, {3.0, 2.9, 2.6, 2.5, 2.7, 2.8});
    CHECK(c.at_long_warmup_edge);
    CHECK_FALSE(c.at_short_warmup_edge);
    CHECK(extension_lr(c) == 0);
    CHECK(extension_warmup(c, grid) == 0);
    CHECK(edge_text(c) == "warm-up at the grid's edge");
    grid.max_warmup = 0;  // no limit: 2 x 200
    CHECK(extension_warmup(c, grid) == 400);
    // The shorter warm-up: halve it.
    c = choose_setting(s, {3.0, 2.9, 2.5, 2.6, 2.7, 2.8});
    CHECK(c.at_short_warmup_edge);
    CHECK(extension_warmup(c, grid) == 25);
    // Both edges: "lr and warm-up".
    c = choose_setting(s, {2.0, 2.9, 2.5, 2.6, 2.7, 2.8});
    CHECK(edge_text(c) == "lr and warm-up at the grid's edge");
    // A warm-up of 1 step cannot get shorter.
    c = choose_setting({{1e-3, 1}, {1e-3, 4}}, {1.0, 2.0});
    CHECK(extension_warmup(c, grid) == 0);
    // Inside both ranges: nothing to extend, no flag.
    c = choose_setting({{1e-4, 10}, {1e-3, 20}, {1e-2, 30}, {1e-3, 10}, {1e-3, 30}}, {3, 1, 3, 2, 2});
    CHECK(edge_text(c).empty());
    CHECK_FALSE(at_an_edge(c));
    // One warm-up for every run (fixed by design): not an edge; the lr still can be.
    c = choose_setting({{1e-4, 80}, {1e-3, 80}, {1e-2, 80}}, {3, 1, 2});
    CHECK(c.at_short_warmup_edge);
    CHECK(c.at_long_warmup_edge);
    CHECK_FALSE(at_an_edge(c));
    c = choose_setting({{1e-4, 80}, {1e-3, 80}, {1e-2, 80}}, {3, 2, 1});
    CHECK(at_an_edge(c));
    CHECK(edge_text(c) == "lr at the grid's edge");
}

// P(0 < T < q) for Student's t with df degrees of freedom, by Simpson's rule
// on the density Gamma((v+1)/2) / (sqrt(v pi) Gamma(v/2)) (1 + t^2/v)^(-(v+1)/2).
static double t_mass_0_to(double q, double df) {
    double log_c = std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * M_PI);
    auto density = [&](double t) { return std::exp(log_c - (df + 1) / 2 * std::log1p(t * t / df)); };
    const int n = 20000;
    double h = q / n, total = density(0) + density(q);
    for (int i = 1; i < n; ++i) total += density(i * h) * (i % 2 ? 4 : 2);
    return total * h / 3;
}

TEST_CASE("protocol: t quantiles are those of the t distribution", "[protocol]") {
    for (int64_t df : {1, 2, 3, 4, 5, 7, 10, 15, 20, 29, 30, 31, 40, 60, 120, 1000}) {
        INFO("df = " << df);
        CHECK(std::fabs(0.5 + t_mass_0_to(t_quantile_975(df), (double)df) - 0.975) < 2e-5);
    }
    check_error([] { t_quantile_975(0); }, {"at least 1 degree of freedom"});
}

TEST_CASE("protocol: intervals, paired differences and verdicts", "[protocol]") {
    // 1, 2, 3, 4: mean 2.5, s = sqrt(5/3), se = s/2, half-width t(3) se.
    Interval i = mean_interval({1, 2, 3, 4});
    CHECK(i.n == 4);
    CHECK(i.mean == Approx(2.5));
    CHECK(i.se == Approx(std::sqrt(5.0 / 3.0) / 2));
    CHECK(i.high - i.mean == Approx(3.1824 * std::sqrt(5.0 / 3.0) / 2).epsilon(1e-4));
    CHECK(i.mean - i.low == Approx(i.high - i.mean));
    // NaN (a diverged run) is dropped; a single value has no interval.
    CHECK(mean_interval({1, NAN, 3}).n == 2);
    Interval one = mean_interval({1.5});
    CHECK(one.mean == 1.5);
    CHECK(std::isinf(one.high));
    CHECK(interval_text(one, "%.2f") == "1.50 (one run)");
    CHECK(interval_text(mean_interval({1, 2, 3, 4}), "%.2f") == "2.50 [0.45, 4.55]");

    // Paired: the seed-to-seed spread cancels. Variant = baseline - 0.1 +- 0.01.
    std::vector<double> baseline = {3.0, 3.5, 2.7}, variant = {2.91, 3.39, 2.60};
    Interval unpaired_gap = mean_interval(variant);
    Interval d = paired_difference(variant, baseline);
    CHECK(d.n == 3);
    CHECK(d.mean == Approx(-0.1));
    CHECK(d.high < 0);                               // the pairs show it ...
    CHECK(unpaired_gap.high > mean_interval(baseline).low);  // ... the two intervals alone overlap
    CHECK(verdict(d, Direction::Lower) == "reproduced");
    CHECK(verdict(d, Direction::Higher) == "contradicted");
    // A pair with a NaN is dropped.
    CHECK(paired_difference({2.91, NAN, 2.60}, baseline).n == 2);
    // An interval around zero is inconclusive either way, and so is one pair.
    Interval around = paired_difference({3.1, 3.4, 2.7}, baseline);
    CHECK(around.low < 0);
    CHECK(around.high > 0);
    CHECK(verdict(around, Direction::Lower) == "inconclusive");
    CHECK(verdict(around, Direction::Higher) == "inconclusive");
    CHECK(verdict(paired_difference({1.0}, {2.0}), Direction::Lower) == "inconclusive");
}

TEST_CASE("rank correlation: Spearman's is Pearson's on the ranks, ties sharing their mean rank", "[protocol]") {
    // Any increasing map keeps the ranks: rho = 1, though Pearson's is not 1.
    std::vector<double> x = {1, 2, 3, 4, 5}, y = {1, 4, 9, 100, 1e6};
    CHECK(app::spearman(x, y) == Approx(1.0));
    CHECK(app::pearson(x, y) < 0.8);
    std::vector<double> reversed = {5, 4, 3, 2, 1};
    CHECK(app::spearman(x, reversed) == Approx(-1.0));
    // Ties: ranks of (10, 20, 20, 30) are (0, 1.5, 1.5, 3); against (1, 2, 3, 4),
    // Pearson of (0, 1.5, 1.5, 3) and (0, 1, 2, 3) = 4.5 / sqrt(4.5 * 5).
    CHECK(app::spearman({10, 20, 20, 30}, {1, 2, 3, 4}) == Approx(4.5 / std::sqrt(4.5 * 5.0)));
}

TEST_CASE("correlation: Pearson's r with Fisher's interval", "[protocol]") {
    // r = 0.8 on five points: z = atanh(0.8) = 1.0986, se = 1/sqrt(2),
    // z +- 1.96 se = [-0.2873, 2.4845], tanh: [-0.2796, 0.9862].
    Interval r = correlation_interval({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5});
    CHECK(r.n == 5);
    CHECK(r.mean == Approx(0.8));
    CHECK(r.low == Approx(-0.2796).margin(1e-4));
    CHECK(r.high == Approx(0.9862).margin(1e-4));
    // NaN pairs are dropped; three points give no interval; a line gives a point.
    Interval three = correlation_interval({1, 2, 3, NAN}, {1, 3, 2, 4});
    CHECK(three.n == 3);
    CHECK(three.low == -1);
    CHECK(three.high == 1);
    Interval line = correlation_interval({1, 2, 3, 4}, {-2, -4, -6, -8});
    CHECK(line.mean == Approx(-1));
    CHECK(line.low == line.high);
}

TEST_CASE("screening: the threshold rule, fitted and scored leaving one size out", "[protocol][screening]") {
    // Saturation separates the outcomes perfectly except at size 3.
    std::vector<ScreeningCase> cases = {{0.10, false, 1}, {0.20, false, 1}, {0.50, true, 2},
                                        {0.60, true, 2},  {0.55, false, 3}, {0.05, false, 3}};
    // The paper's rule (>= 0.43): wrong only on 0.55.
    ScreeningScore paper = score(cases, ThresholdRule{0.43, true});
    CHECK(paper.correct == 5);
    CHECK(paper.total == 6);
    CHECK(paper.accuracy() == Approx(5.0 / 6));
    // Fitted on all: 5 of 6 at best; the lowest such threshold is the midpoint 0.35 of 0.20 and 0.50.
    ThresholdRule fitted = fit_threshold(cases);
    CHECK(fitted.helps_above);
    CHECK(fitted.threshold == Approx(0.35));
    // Leaving size 1 out: fitted on sizes 2, 3 ({0.05 F, 0.50 T, 0.55 F, 0.60 T}), the best
    // is 3 of 4 at the lowest threshold 0.275 (above: helped), which gets both size-1 cases right.
    // Size 2 out: on {0.05, 0.10, 0.20, 0.55} all not helped: "helped iff below 0.05 - 1"
    // predicts "not helped" for 0.50 and 0.60: both wrong. Size 3 out: on sizes 1, 2 the
    // threshold 0.35 separates them; 0.55 is called helped (wrong), 0.05 not (right).
    ScreeningScore loo = leave_one_group_out(cases);
    CHECK(loo.total == 6);
    CHECK(loo.correct == 3);
    // Majority of the others: size 1 out -> others 2 T, 2 F: a tie, "not helped": both right.
    // Size 2 out -> others all F: both wrong. Size 3 out -> others 2 T, 2 F: tie, F: both right.
    ScreeningScore majority = majority_leave_one_group_out(cases);
    CHECK(majority.correct == 4);
    CHECK(majority.total == 6);
    CHECK(std::isnan(ScreeningScore{}.accuracy()));
}
