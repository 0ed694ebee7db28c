// error.h — the one exception type normcore throws for user mistakes.
//
// Every message names the op and the shapes involved, e.g.
//   "add: shapes [2, 3] and [4] cannot be broadcast together".
// Nothing in normcore asserts or aborts on user input; it throws nc::Error.
#pragma once

#include <stdexcept>
#include <string>

namespace nc {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error("<op>: <message>").
[[noreturn]] void fail(const std::string& op, const std::string& message);

}  // namespace nc
