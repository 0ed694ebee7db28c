#include "data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "tensor/error.h"

namespace nc {
namespace data {

static const char kMagic[8] = {'N', 'C', 'T', 'O', 'K', 'E', 'N', 'S'};
static const size_t kHeaderBytes = 32;
static const uint32_t kVersion = 1;

static void put_u32(unsigned char* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

bool is_token_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[8];
    return in && in.read(magic, 8) && std::memcmp(magic, kMagic, 8) == 0;
}

// A read-only mapping, unmapped when the last TokenIds using it goes.
struct Mapping {
    void* address = MAP_FAILED;
    size_t length = 0;
    ~Mapping() {
        if (address != MAP_FAILED) munmap(address, length);
    }
};

TokenIds map_token_file(const std::string& path, TokenFileInfo* info_out) {
    auto bad = [&](const std::string& why) { return Error("token file '" + path + "': " + why); };
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) throw bad("cannot open it");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        throw bad("not a regular file");
    }
    size_t size = (size_t)st.st_size;
    if (size < kHeaderBytes) {
        close(fd);
        throw bad("only " + std::to_string(size) + " bytes, shorter than the 32-byte header");
    }
    auto mapping = std::make_shared<Mapping>();
    mapping->address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    mapping->length = size;
    close(fd);
    if (mapping->address == MAP_FAILED) throw bad("cannot map it into memory");
    const unsigned char* p = static_cast<const unsigned char*>(mapping->address);
    if (std::memcmp(p, kMagic, 8) != 0) throw bad("no NCTOKENS magic: not a file written by normcore tokenize");
    uint32_t version = get_u32(p + 8), width = get_u32(p + 12);
    uint64_t vocab = get_u64(p + 16), count = get_u64(p + 24);
    if (version != kVersion) throw bad("version " + std::to_string(version) + ", this build reads version 1");
    if (width != 2 && width != 4) throw bad("field id_bytes is " + std::to_string(width) + ", must be 2 or 4");
    if (vocab == 0 || vocab > (width == 2 ? 65536ull : 4294967296ull))
        throw bad("field vocab_size " + std::to_string(vocab) + " does not fit " + std::to_string(width) + "-byte ids");
    // count * width without overflow: compare against what the file holds.
    uint64_t data_bytes = size - kHeaderBytes;
    if (data_bytes % width != 0 || count != data_bytes / width)
        throw bad("the header says " + std::to_string(count) + " ids of " + std::to_string(width) + " bytes, but " +
                  std::to_string(data_bytes) + " bytes of ids follow it");
    TokenIds ids(mapping, p + kHeaderBytes, (int)width, (int64_t)count);
    for (int64_t i = 0; i < ids.size(); ++i)
        if ((uint64_t)ids[i] >= vocab)
            throw bad("id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                      " is outside the vocabulary of " + std::to_string(vocab));
    if (info_out) *info_out = {(int64_t)vocab, (int64_t)count, (int)width};
    return ids;
}

TokenFileWriter::TokenFileWriter(const std::string& path, int64_t vocab_size) : path_(path) {
    if (vocab_size <= 0 || vocab_size > 4294967296ll)
        throw Error("token file: a vocabulary of " + std::to_string(vocab_size) + " tokens cannot be written");
    info_.vocab_size = vocab_size;
    info_.id_bytes = vocab_size <= 65536 ? 2 : 4;
    file_ = std::fopen((path + ".tmp").c_str(), "wb");
    if (!file_) throw Error("token file: cannot write '" + path + ".tmp'");
    unsigned char header[kHeaderBytes] = {};
    if (std::fwrite(header, 1, kHeaderBytes, file_) != kHeaderBytes) throw Error("token file: writing '" + path + ".tmp' failed");
}

TokenFileWriter::~TokenFileWriter() {
    if (file_) {  // not finished: an error happened, drop the partial file
        std::fclose(file_);
        std::remove((path_ + ".tmp").c_str());
    }
}

void TokenFileWriter::append(const std::vector<int64_t>& ids) {
    std::vector<unsigned char> bytes(ids.size() * (size_t)info_.id_bytes);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= info_.vocab_size)
            throw Error("token file: id " + std::to_string(ids[i]) + " is outside the vocabulary of " +
                        std::to_string(info_.vocab_size));
        for (int b = 0; b < info_.id_bytes; ++b) bytes[i * info_.id_bytes + b] = (unsigned char)(ids[i] >> (8 * b));
    }
    if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
        throw Error("token file: writing '" + path_ + ".tmp' failed (disk full?)");
    info_.count += (int64_t)ids.size();
}

TokenFileInfo TokenFileWriter::finish() {
    unsigned char header[kHeaderBytes];
    std::memcpy(header, kMagic, 8);
    put_u32(header + 8, kVersion);
    put_u32(header + 12, (uint32_t)info_.id_bytes);
    put_u64(header + 16, (uint64_t)info_.vocab_size);
    put_u64(header + 24, (uint64_t)info_.count);
    bool ok = std::fseek(file_, 0, SEEK_SET) == 0 && std::fwrite(header, 1, kHeaderBytes, file_) == kHeaderBytes;
    ok = std::fflush(file_) == 0 && ok;
    ok = std::fclose(file_) == 0 && ok;
    file_ = nullptr;
    if (!ok || std::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0) {
        std::remove((path_ + ".tmp").c_str());
        throw Error("token file: could not complete '" + path_ + "' (disk full, or the directory is not writable)");
    }
    return info_;
}

}  // namespace data
}  // namespace nc
