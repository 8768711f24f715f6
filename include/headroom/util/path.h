// Path helpers: lexical canonicalisation (ninja's rules) and POSIX shell quoting of paths.
#pragma once

#include <string>
#include <string_view>

namespace headroom {

// Lexically normalises `path` in place: drops "./", folds "x/..", collapses "//", keeps leading "../".
// Returns false and sets *err on an empty path ("empty path").
bool CanonicalizePath(std::string* path, std::string* err);

// Appends `path` to *out, single-quoted when it holds any byte outside [A-Za-z0-9_+-./]
// (an embedded ' becomes '\'').
void AppendShellEscaped(std::string_view path, std::string* out);

// Directory part of a path ("a/b/c" -> "a/b", "c" -> "").
std::string_view DirName(std::string_view path);

}  // namespace headroom
