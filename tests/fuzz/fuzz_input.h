// fuzz_input.h — what the libFuzzer targets share: the parsers read files, so
// each input is written to a file of this process first.
//
// A target returns normally when the parser accepts the input or refuses it
// with nc::Error (the one way normcore reports bad input); anything else —
// a crash, a sanitizer report, another exception, an allocation past
// libFuzzer's limit — is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tensor/error.h"

namespace nc_fuzz {

// Writes the bytes to /tmp/normcore-fuzz-<name>-<pid><suffix> and returns the path.
inline std::string write_input(const char* name, const uint8_t* data, size_t size, const char* suffix = "") {
    std::string path = "/tmp/normcore-fuzz-" + std::string(name) + "-" + std::to_string(getpid()) + suffix;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return path;
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
    return path;
}

}  // namespace nc_fuzz
