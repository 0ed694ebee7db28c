// ops_elementwise.cpp — elementwise ops, each forward next to its backward.
//
// Notation: for out = f(a, b) and incoming gradient g = dL/dout, the chain
// rule gives dL/da = g * df/da. When a was broadcast in the forward pass,
// dL/da must be summed over the broadcast dims: raw::sum_to does that.
#include <cmath>

#include "autograd/ops.h"

namespace nc {

using Grads = std::vector<Tensor>;

Tensor add(const Tensor& a, const Tensor& b) {
    return record("Add", raw::add(a, b), {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
        return Grads{raw::sum_to(g, sa), raw::sum_to(g, sb)};
    });
}

Tensor sub(const Tensor& a, const Tensor& b) {
    return record("Sub", raw::sub(a, b), {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
        return Grads{raw::sum_to(g, sa), raw::sum_to(raw::neg(g), sb)};
    });
}

Tensor mul(const Tensor& a, const Tensor& b) {
    // d(ab)/da = b, d(ab)/db = a
    return record("Mul", raw::mul(a, b), {a, b}, [a, b](const Tensor& g) {
        return Grads{a.requires_grad() ? raw::sum_to(raw::mul(g, b), a.shape()) : Tensor(),
                     b.requires_grad() ? raw::sum_to(raw::mul(g, a), b.shape()) : Tensor()};
    });
}

Tensor div(const Tensor& a, const Tensor& b) {
    // d(a/b)/da = 1/b, d(a/b)/db = -a/b^2
    return record("Div", raw::div(a, b), {a, b}, [a, b](const Tensor& g) {
        Tensor g_over_b = raw::div(g, b);
        return Grads{raw::sum_to(g_over_b, a.shape()),
                     b.requires_grad() ? raw::sum_to(raw::neg(raw::mul(g_over_b, raw::div(a, b))), b.shape())
                                       : Tensor()};
    });
}

Tensor pow(const Tensor& a, const Tensor& b) {
    // d(a^b)/da = b a^(b-1), d(a^b)/db = a^b ln(a)
    Tensor out = raw::pow(a, b);
    return record("Pow", out, {a, b}, [a, b, out = out.detach()](const Tensor& g) {
        Tensor da = raw::mul(g, raw::mul(b, raw::pow(a, raw::add(b, -1.0))));
        Tensor db = b.requires_grad() ? raw::mul(g, raw::mul(out, raw::log(a))) : Tensor();
        return Grads{raw::sum_to(da, a.shape()), db.defined() ? raw::sum_to(db, b.shape()) : Tensor()};
    });
}

Tensor pow(const Tensor& a, double exponent) {
    // d(a^p)/da = p a^(p-1)
    return record("PowScalar", raw::pow(a, exponent), {a}, [a, exponent](const Tensor& g) {
        return Grads{raw::mul(g, raw::mul(raw::pow(a, exponent - 1), exponent))};
    });
}

// The gradient goes to whichever input was picked; on a tie it is split in
// half (the subgradient PyTorch uses).
static Tensor pick(const char* op, BinaryOp which, const Tensor& a, const Tensor& b) {
    return record(op, raw::binary(which, a, b), {a, b}, [a, b, which](const Tensor& g) {
        Tensor a_wins = which == BinaryOp::Maximum ? raw::gt(a, b) : raw::lt(a, b);
        Tensor share_a = raw::add(a_wins, raw::mul(raw::eq(a, b), 0.5));  // 1, 0 or 1/2
        Tensor share_b = raw::sub(raw::ones_like(share_a), share_a);
        return Grads{raw::sum_to(raw::mul(g, share_a), a.shape()), raw::sum_to(raw::mul(g, share_b), b.shape())};
    });
}

Tensor maximum(const Tensor& a, const Tensor& b) { return pick("Maximum", BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return pick("Minimum", BinaryOp::Minimum, a, b); }

Tensor neg(const Tensor& x) {
    return record("Neg", raw::neg(x), {x}, [](const Tensor& g) { return Grads{raw::neg(g)}; });
}

Tensor exp(const Tensor& x) {
    // d e^x / dx = e^x: reuse the output instead of recomputing it.
    Tensor out = raw::exp(x);
    return record("Exp", out, {x}, [out = out.detach()](const Tensor& g) { return Grads{raw::mul(g, out)}; });
}

Tensor log(const Tensor& x) {
    return record("Log", raw::log(x), {x}, [x](const Tensor& g) { return Grads{raw::div(g, x)}; });
}

Tensor sqrt(const Tensor& x) {
    // d sqrt(x) / dx = 1 / (2 sqrt(x))
    Tensor out = raw::sqrt(x);
    return record("Sqrt", out, {x}, [out = out.detach()](const Tensor& g) {
        return Grads{raw::div(raw::mul(g, 0.5), out)};
    });
}

Tensor rsqrt(const Tensor& x) {
    // d x^(-1/2) / dx = -1/2 x^(-3/2) = -1/2 out^3
    Tensor out = raw::rsqrt(x);
    return record("Rsqrt", out, {x}, [out = out.detach()](const Tensor& g) {
        return Grads{raw::mul(raw::mul(g, raw::pow(out, 3.0)), -0.5)};
    });
}

Tensor tanh(const Tensor& x) {
    // d tanh(x) / dx = 1 - tanh(x)^2
    Tensor out = raw::tanh(x);
    return record("Tanh", out, {x}, [out = out.detach()](const Tensor& g) {
        return Grads{raw::mul(g, raw::add(raw::neg(raw::mul(out, out)), 1.0))};
    });
}

Tensor sin(const Tensor& x) {
    return record("Sin", raw::sin(x), {x}, [x](const Tensor& g) { return Grads{raw::mul(g, raw::cos(x))}; });
}

Tensor cos(const Tensor& x) {
    return record("Cos", raw::cos(x), {x}, [x](const Tensor& g) { return Grads{raw::neg(raw::mul(g, raw::sin(x)))}; });
}

Tensor abs(const Tensor& x) {
    // d|x|/dx = sign(x), taking 0 at x = 0 (as PyTorch does)
    return record("Abs", raw::abs(x), {x}, [x](const Tensor& g) { return Grads{raw::mul(g, raw::sign(x))}; });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    // Each output element came from a or from b: its gradient goes back there.
    return record("Where", raw::where(cond, a, b), {a, b}, [cond, a, b](const Tensor& g) {
        Tensor zero = raw::zeros_like(g);
        return Grads{raw::sum_to(raw::where(cond, g, zero), a.shape()),
                     raw::sum_to(raw::where(cond, zero, g), b.shape())};
    });
}

Tensor eq(const Tensor& a, const Tensor& b) { return raw::eq(a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return raw::ne(a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return raw::lt(a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return raw::le(a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return raw::gt(a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return raw::ge(a, b); }

static Tensor scalar_like(double v, const Tensor& t) { return raw::scalar(v, t.dtype(), t.device()); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(b, a)); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(a, b), b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(b, a)); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(a, b), b); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(b, a)); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(a, b), b); }

}  // namespace nc
