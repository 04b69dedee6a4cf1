// What a user reads of an error (the command line, unless --verbose): the words alone. The library's errors carry
// where they were raised for logs and developers (fk/status.h: "<message> [src/file.cpp:42]",
// a failed check "check failed: <condition>: <message> [...]"); `fk --verbose` prints that.
#pragma once
#include <string>

namespace fk {

// `what` without its source place and, for a failed check that has a message, without
// the condition; anything else unchanged.
std::string error_words(const std::string& what);

}  // namespace fk
