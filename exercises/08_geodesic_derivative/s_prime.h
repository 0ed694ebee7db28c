// Exercise 8b (chapter 8): the derivative the geodesic update's backward
// needs, accurate at every angle.
//
// Chapter 8 writes the update as y = C(q) x + S(q) w with q = theta^2 and
//
//     S(q) = sin(sqrt q) / sqrt q,
//
// and its backward needs S'(q) = dS/dq for every q >= 0, including q = 0
// (no tangent part: the update is the identity, and its gradient must
// still be finite and right).
//
// Derive S'(q) in closed form (the chain rule through sqrt q, then the
// quotient rule) and say why that form is useless for small q: which two
// nearly equal numbers does it subtract? Then derive S's power series from
// sin's, differentiate it term by term, and use it below a switch point
// you choose. Pick the switch and the number of terms so that S' is right
// to 1e-13 relative (or 1e-15 absolute, near its zeros) at every q: the
// series' first omitted term and the closed form's cancellation error
// trade against each other at the switch.
//
// The check compares your S' with a long-double reference at q = 0, 1e-300,
// 1e-12, ..., 100, on both sides of 0.1 and of your switch wherever it is,
// and at 2,000 points spread over [0, 30].
#pragma once

namespace exercise {

double s_prime(double q);

}  // namespace exercise
