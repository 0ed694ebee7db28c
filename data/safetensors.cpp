#include "data/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tensor/raw_ops.h"

namespace nc {
namespace data {

using json = nlohmann::json;

static const char* dtype_code(DType dtype) {
    switch (dtype) {
        case DType::Float32: return "F32";
        case DType::Float64: return "F64";
        case DType::Int64: return "I64";
    }
    return "?";
}

// IEEE half and bfloat16 to float (for reading Hugging Face files).
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff, bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else {  // subnormal: normalize
            exponent = 127 - 15 + 1;
            while (!(mantissa & 0x400)) {
                mantissa <<= 1;
                --exponent;
            }
            bits = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
        }
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

static float bfloat16_to_float(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

SafetensorsFile read_safetensors(const std::string& path) {
    auto bad = [&](const std::string& what) { return Error("safetensors '" + path + "': " + what); };
    std::ifstream in(path, std::ios::binary);
    if (!in) throw bad("cannot open the file");
    in.seekg(0, std::ios::end);
    uint64_t file_size = (uint64_t)in.tellg();
    in.seekg(0);
    if (file_size < 8) throw bad("too short to hold the 8-byte header length");
    unsigned char len_bytes[8];
    in.read(reinterpret_cast<char*>(len_bytes), 8);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];  // little-endian
    if (header_len > file_size - 8 || header_len > (100u << 20))
        throw bad("header length " + std::to_string(header_len) + " does not fit in a file of " + std::to_string(file_size) + " bytes");
    std::string header(header_len, '\0');
    in.read(&header[0], (std::streamsize)header_len);
    json j;
    try {
        j = json::parse(header);
    } catch (const json::exception& e) {
        throw bad(std::string("the JSON header does not parse: ") + e.what());
    }
    if (!j.is_object()) throw bad("the JSON header is not an object");
    uint64_t data_start = 8 + header_len, data_len = file_size - data_start;

    SafetensorsFile file;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& name = it.key();
        if (name == "__metadata__") {
            if (!it->is_object()) throw bad("__metadata__ is not an object");
            for (auto m = it->begin(); m != it->end(); ++m)
                file.metadata[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
            continue;
        }
        const json& e = *it;
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets") ||
            !e["dtype"].is_string() || !e["shape"].is_array() || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
            throw bad("entry '" + name + "' needs dtype, shape and data_offsets [begin, end]");
        std::string code = e["dtype"];
        Shape shape;
        for (const json& d : e["shape"]) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0) throw bad("entry '" + name + "' has a bad shape " + e["shape"].dump());
            shape.push_back(d.get<int64_t>());
        }
        if (!e["data_offsets"][0].is_number_unsigned() || !e["data_offsets"][1].is_number_unsigned())
            throw bad("entry '" + name + "' has bad data_offsets " + e["data_offsets"].dump());
        uint64_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
        size_t element = code == "F32" ? 4 : code == "F64" || code == "I64" ? 8 : code == "F16" || code == "BF16" ? 2 : 0;
        if (element == 0) throw bad("entry '" + name + "' has dtype " + code + ", which normcore cannot read (F32, F64, I64, F16, BF16)");
        check_ndim(shape, "safetensors");
        // The element count and byte size of a crafted shape can exceed 64
        // bits ([2^31, 2^31] F32 "needs" 2^64 bytes, which wraps to 0): check
        // both before comparing them with the offsets.
        int64_t numel = 0;
        try {
            numel = shape_numel(shape);
        } catch (const Error&) {
            throw bad("entry '" + name + "' has shape " + shape_str(shape) + ", more elements than 2^63");
        }
        uint64_t nbytes = 0;
        if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)element, &nbytes))
            throw bad("entry '" + name + "': shape " + shape_str(shape) + " " + code + " needs more than 2^64 bytes");
        if (nbytes > data_len)
            throw bad("entry '" + name + "': shape " + shape_str(shape) + " " + code + " needs " + std::to_string(nbytes) +
                      " bytes, but the data has only " + std::to_string(data_len) + " (truncated file?)");
        if (end < begin || end - begin != nbytes)
            throw bad("entry '" + name + "': shape " + shape_str(shape) + " " + code + " needs " + std::to_string(nbytes) +
                      " bytes, the offsets give " + std::to_string(end - begin));
        if (end > data_len)
            throw bad("entry '" + name + "' ends at byte " + std::to_string(end) + " but the data has only " +
                      std::to_string(data_len) + " bytes (truncated file?)");
        std::vector<char> bytes(nbytes);
        in.seekg((std::streamoff)(data_start + begin));
        in.read(bytes.data(), (std::streamsize)nbytes);
        if (!in) throw bad("could not read the data of '" + name + "'");
        Tensor t;
        if (code == "F16" || code == "BF16") {
            t = empty(shape, kFloat32);
            float* out = t.data<float>();
            for (int64_t i = 0; i < t.numel(); ++i) {
                uint16_t v;
                std::memcpy(&v, bytes.data() + 2 * i, 2);
                out[i] = code == "F16" ? half_to_float(v) : bfloat16_to_float(v);
            }
        } else {
            t = empty(shape, code == "F32" ? kFloat32 : code == "F64" ? kFloat64 : kInt64);
            if (nbytes > 0) std::memcpy(t.raw_data(), bytes.data(), nbytes);  // (an empty vector's data() may be null)
        }
        file.tensors[name] = t;
    }
    return file;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::vector<Tensor> host;
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        Tensor c = raw::contiguous(raw::to_device(t, kCPU));
        uint64_t nbytes = (uint64_t)c.numel() * dtype_size(c.dtype());
        header[name] = {{"dtype", dtype_code(c.dtype())}, {"shape", c.shape()}, {"data_offsets", {offset, offset + nbytes}}};
        offset += nbytes;
        host.push_back(c);
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error("safetensors: cannot write '" + tmp + "'");
        unsigned char len_bytes[8];
        uint64_t n = text.size();
        for (int i = 0; i < 8; ++i) len_bytes[i] = (unsigned char)(n >> (8 * i));
        out.write(reinterpret_cast<const char*>(len_bytes), 8);
        out.write(text.data(), (std::streamsize)text.size());
        for (const Tensor& c : host) out.write(static_cast<const char*>(c.raw_data()), (std::streamsize)(c.numel() * dtype_size(c.dtype())));
        out.close();
        if (!out) {
            std::remove(tmp.c_str());  // a partial temporary helps nobody
            throw Error("safetensors: writing '" + tmp + "' failed (disk full?); '" + path + "' was left as it was");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw Error("safetensors: cannot move '" + tmp + "' to '" + path + "': " + ec.message());
    }
}

}  // namespace data
}  // namespace nc
