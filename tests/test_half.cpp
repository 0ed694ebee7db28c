// test_half.cpp — bfloat16 and float16 tensors (tensor/half.h): rounding
// against an independent reference (tests/data/half/make_half_reference.py:
// Python's IEEE half packing and exact distances for bfloat16), exact
// widening of all 65,536 patterns of each against a formula, casts, copies,
// printing, safetensors, loading a bfloat16 checkpoint into a float32
// model, and one clear error from every op that computes.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "data/safetensors.h"
#include "helpers.h"
#include "nn/hf.h"
#include "tensor/half.h"
#include "tensor/ops/attention.h"
#include "tensor/ops/cross_entropy.h"
#include "tensor/ops/norms.h"

using namespace nc;
using nc_test::check_error;
using nc_test::temp_dir;

namespace {

float float_of_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

struct Conversion {
    uint32_t f32;
    std::string bf16, f16;  // hex bits, or "nan"
};

std::vector<Conversion> reference_conversions() {
    std::ifstream in("tests/data/half/conversions.txt");  // the suite runs from the repository root
    REQUIRE(in);
    std::vector<Conversion> out;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        Conversion c;
        std::string f32;
        fields >> f32 >> c.bf16 >> c.f16;
        c.f32 = (uint32_t)std::stoul(f32, nullptr, 16);
        out.push_back(c);
    }
    return out;
}

// The 16-bit result's pattern as the reference writes it.
std::string hex16(uint16_t bits, float widened) {
    if (std::isnan(widened)) return "nan";
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04x", bits);
    return buf;
}

// float16's value by its definition, with ldexp: not half.h's bit moves.
double float16_by_formula(uint16_t h) {
    int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? std::ldexp((double)m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024.0 + m, e - 25);
    return sign ? -v : v;
}

// bfloat16's: 1 sign, 8 exponent bits (bias 127), 7 mantissa bits.
double bfloat16_by_formula(uint16_t h) {
    int sign = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
    double v = e == 0 ? std::ldexp((double)m, -133) : e == 255 ? (m ? NAN : INFINITY) : std::ldexp(128.0 + m, e - 134);
    return sign ? -v : v;
}

}  // namespace

TEST_CASE("16-bit: float32 rounds to bfloat16 and float16 as the independent reference does", "[half]") {
    std::vector<Conversion> ref = reference_conversions();
    REQUIRE(ref.size() > 3000);
    std::vector<float> inputs;
    for (const Conversion& c : ref) inputs.push_back(float_of_bits(c.f32));
    Tensor x = raw::from_vector(inputs, {(int64_t)inputs.size()});
    Tensor b = raw::to_dtype(x, kBFloat16), h = raw::to_dtype(x, kFloat16);
    REQUIRE(b.dtype() == kBFloat16);
    REQUIRE(h.dtype() == kFloat16);
    const uint16_t* bb = static_cast<const uint16_t*>(b.raw_data());
    const uint16_t* hb = static_cast<const uint16_t*>(h.raw_data());
    int64_t wrong = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        std::string got_b = hex16(bb[i], to_float(BFloat16{bb[i]})), got_h = hex16(hb[i], to_float(Float16{hb[i]}));
        if (got_b != ref[i].bf16 || got_h != ref[i].f16) {
            if (++wrong <= 10)
                FAIL_CHECK("float32 " << std::hex << ref[i].f32 << ": bfloat16 " << got_b << " (expected " << ref[i].bf16
                                      << "), float16 " << got_h << " (expected " << ref[i].f16 << ")");
        }
    }
    CHECK(wrong == 0);
}

TEST_CASE("16-bit: every pattern widens exactly, and rounds back to itself", "[half]") {
    int64_t wrong = 0;
    for (uint32_t p = 0; p < 65536; ++p) {
        uint16_t bits = (uint16_t)p;
        float hf = to_float(Float16{bits}), bf = to_float(BFloat16{bits});
        double hv = float16_by_formula(bits), bv = bfloat16_by_formula(bits);
        bool ok = (std::isnan(hv) ? std::isnan(hf) : (double)hf == hv && std::signbit(hf) == std::signbit(hv)) &&
                  (std::isnan(bv) ? std::isnan(bf) : (double)bf == bv && std::signbit(bf) == std::signbit(bv));
        // Back again: the same pattern; a NaN: a quiet NaN (the top mantissa
        // bit set: float16's 0x7e00, bfloat16's 0x7fc0) of the same sign.
        if (!std::isnan(hf)) ok = ok && to_float16(hf).bits == bits;
        else ok = ok && (to_float16(hf).bits & 0xfe00) == ((bits & 0x8000) | 0x7e00);
        if (!std::isnan(bf)) ok = ok && to_bfloat16(bf).bits == bits;
        else ok = ok && (to_bfloat16(bf).bits & 0xffc0) == ((bits & 0x8000) | 0x7fc0);
        if (!ok && ++wrong <= 5) FAIL_CHECK("pattern " << p << ": float16 " << hf << " vs " << hv << ", bfloat16 " << bf << " vs " << bv);
    }
    CHECK(wrong == 0);
}

TEST_CASE("16-bit tensors: fill, casts, copies of views, values and printing", "[half]") {
    Tensor x = raw::from_vector(std::vector<float>{1.0f, -2.5f, 3.14159265f, 65504.0f, 1e-8f, 70000.0f}, {2, 3});
    Tensor h = raw::to_dtype(x, kFloat16), b = raw::to_dtype(x, kBFloat16);
    CHECK(dtype_size(kFloat16) == 2);
    CHECK(h.storage()->nbytes == 12);
    // float16: pi to 3.140625, 1e-8 below half the smallest subnormal to 0, 70000 beyond the range to inf.
    std::vector<double> hv = h.to_vector();
    CHECK(hv[2] == 3.140625);
    CHECK(hv[3] == 65504.0);
    CHECK(hv[4] == 0.0);
    CHECK(std::isinf(hv[5]));
    // bfloat16 keeps the range, not the digits: pi to 3.140625, 70000 to 70144.
    std::vector<double> bv = b.to_vector();
    CHECK(bv[2] == 3.140625);
    CHECK(bv[5] == 70144.0);
    CHECK(std::fabs(bv[4] - 1e-8) < 1e-10);
    // A transposed view copies element by element; a cast between the two goes through float32.
    Tensor t = raw::contiguous(raw::transpose(b, 0, 1));
    CHECK(t.dtype() == kBFloat16);
    CHECK(t.to_vector() == std::vector<double>{bv[0], bv[3], bv[1], bv[4], bv[2], bv[5]});
    CHECK(raw::to_dtype(b, kFloat16).to_vector()[2] == 3.140625);
    CHECK(raw::to_dtype(h, kFloat64).to_vector() == hv);
    CHECK(raw::full({2}, 0.1, kBFloat16).to_vector()[0] == (double)to_float(to_bfloat16(0.1f)));
    CHECK(raw::to_dtype(h, kInt64).to_vector()[1] == -2);
    CHECK(raw::all_finite(b));
    CHECK_FALSE(raw::all_finite(h));
    CHECK(raw::to_dtype(x, kBFloat16).to_string() ==
          "tensor([[ 1.0000e+00, -2.5000e+00,  3.1406e+00],\n        [ 6.5536e+04,  1.0012e-08,  7.0144e+04]], dtype=bfloat16)");
    CHECK(raw::full({2}, 1.5, kFloat16).to_string() == "tensor([1.5000, 1.5000], dtype=float16)");
}

TEST_CASE("16-bit tensors: every op that computes (but the matrix product) refuses them, naming the op and the cast", "[half][errors]") {
    Tensor b = raw::to_dtype(raw::ones({2, 2}), kBFloat16), h = raw::to_dtype(raw::ones({2, 2}), kFloat16);
    Generator gen(1);
    auto refused = [](const std::string& op, const std::string& dtype) {
        return std::vector<std::string>{op + ": got a " + dtype + " tensor", "cast with to_dtype(t, kFloat32) first"};
    };
    check_error([&] { raw::add(b, b); }, refused("add", "bfloat16"));
    check_error([&] { raw::mul(h, h); }, refused("mul", "float16"));
    check_error([&] { raw::exp(b); }, refused("exp", "bfloat16"));
    // matmul and linear multiply two 16-bit operands (tests/test_gemm_16bit.cpp), but not a mixed pair.
    check_error([&] { raw::matmul(b, raw::ones({2, 2})); }, {"matmul: operands must share a floating dtype, got bfloat16 and float32"});
    check_error([&] { raw::matmul(b, h); }, {"matmul", "bfloat16 and float16"});
    check_error([&] { raw::sum(h); }, refused("sum", "float16"));
    check_error([&] { raw::softmax(b, -1); }, refused("softmax", "bfloat16"));
    check_error([&] { raw::where(b, b, b); }, refused("where", "bfloat16"));
    check_error([&] { raw::index_select(h, 0, raw::from_indices({0}, {1})); }, refused("index_select", "float16"));
    check_error([&] { raw::randn({2}, gen, kBFloat16); }, refused("randn", "bfloat16"));
    check_error([&] { raw::layer_norm(b, Tensor(), Tensor(), 1e-5); }, refused("layer_norm", "bfloat16"));
    check_error([&] { Tensor(b).set_requires_grad(true); }, {"bfloat16"});
    // The fused backwards take a gradient of the inputs' dtype, not another one read as float.
    Tensor q = raw::randn({1, 4, 8}, gen);
    raw::AttentionForward att = raw::attention(q, q, q, true, 0.35);
    check_error([&] { raw::attention_backward(raw::to_dtype(att.out, kBFloat16), q, q, q, att, true, 0.35); },
                {"attention_backward: the gradient is bfloat16 on cpu, the inputs float32 on cpu"});
    check_error([&] { raw::attention_backward(raw::to_dtype(att.out, kFloat64), q, q, q, att, true, 0.35); },
                {"attention_backward: the gradient is float64"});
    Tensor logits = raw::randn({3, 5}, gen), targets = raw::from_indices({0, 4, 2}, {3});
    raw::CrossEntropyForward ce = raw::cross_entropy(logits, targets, -1);
    check_error([&] { raw::cross_entropy_backward(raw::ones({3}, kFloat16), logits, targets, ce, -1); },
                {"cross_entropy_backward: the row gradients are float16"});
}

TEST_CASE("16-bit tensors in safetensors: written as BF16 and F16, read back bit for bit", "[half][checkpoint]") {
    std::filesystem::path dir = temp_dir("normcore_half_safetensors");
    Tensor x = raw::from_vector(std::vector<float>{1.0f, -2.5f, 3.14159265f, 1e-3f}, {2, 2});
    std::string path = (dir / "h.safetensors").string();
    data::write_safetensors(path, {{"b", raw::to_dtype(x, kBFloat16)}, {"h", raw::to_dtype(x, kFloat16)}});
    // The header names the dtypes as Hugging Face's safetensors does.
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(bytes.find("\"dtype\":\"BF16\"") != std::string::npos);
    CHECK(bytes.find("\"dtype\":\"F16\"") != std::string::npos);
    data::SafetensorsFile f = data::read_safetensors(path);
    REQUIRE(f.tensors["b"].dtype() == kBFloat16);
    REQUIRE(f.tensors["h"].dtype() == kFloat16);
    CHECK(std::memcmp(f.tensors["b"].raw_data(), raw::to_dtype(x, kBFloat16).raw_data(), 8) == 0);
    CHECK(std::memcmp(f.tensors["h"].raw_data(), raw::to_dtype(x, kFloat16).raw_data(), 8) == 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a bfloat16 checkpoint loads into a float32 model, each weight widened exactly", "[half][checkpoint]") {
    nn::TransformerConfig c = nc_test::tiny_config(nn::gpt2_config());
    Generator gen(3);
    auto saved = nn::make_model(c, gen);
    auto loaded = nn::make_model(c, gen);  // other weights
    // As a Hugging Face file holds it (GPT-2's Conv1D matrices transposed), in bfloat16.
    std::map<std::string, Tensor> state;
    for (const auto& [name, t] : nn::to_hf_layout(*saved)) state[name] = raw::to_dtype(t, kBFloat16);
    nn::load_hf_layout(*loaded, state);
    std::map<std::string, Tensor> got = loaded->state_dict();
    for (const auto& [name, t] : saved->state_dict()) {
        INFO(name);
        REQUIRE(got[name].dtype() == kFloat32);
        CHECK(got[name].to_vector() == raw::to_dtype(raw::to_dtype(t, kBFloat16), kFloat32).to_vector());
    }
}
