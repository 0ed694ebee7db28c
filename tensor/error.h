// error.h — the one exception type normcore throws for user mistakes.
//
// Every message names the op and the shapes involved, e.g.
//   "add: shapes [2, 3] and [4] cannot be broadcast together".
// Nothing in normcore asserts or aborts on user input; it throws nc::Error.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace nc {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error("<op>: <message>"). The op's name is a string_view, as in the
// checks that call this, so that a check that passes builds no std::string
// (a small op runs several; each used to cost a strlen and a copy).
[[noreturn]] void fail(std::string_view op, const std::string& message);

}  // namespace nc
