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
        case DType::BFloat16: return "BF16";
        case DType::Float16: return "F16";
    }
    return "?";
}

// The file's dtype code of each dtype, and back ("" and kFloat32 for none).
static DType dtype_of_code(const std::string& code, bool& known) {
    known = true;
    if (code == "F32") return kFloat32;
    if (code == "F64") return kFloat64;
    if (code == "I64") return kInt64;
    if (code == "BF16") return kBFloat16;
    if (code == "F16") return kFloat16;
    known = false;
    return kFloat32;
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
        bool known = false;
        DType dtype = dtype_of_code(code, known);
        if (!known) throw bad("entry '" + name + "' has dtype " + code + ", which normcore cannot read (F32, F64, I64, F16, BF16)");
        size_t element = dtype_size(dtype);
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
        // The bytes as they are: little-endian, as every machine normcore
        // runs on stores them. A 16-bit tensor stays 16-bit (to_dtype widens it).
        Tensor t = empty(shape, dtype);
        if (nbytes > 0) std::memcpy(t.raw_data(), bytes.data(), nbytes);  // (an empty vector's data() may be null)
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
