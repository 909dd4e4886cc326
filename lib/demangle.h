/* Demangles C++ (Itanium) and Rust (legacy and v0) symbol names. */
#ifndef PROFD_DEMANGLE_H
#define PROFD_DEMANGLE_H

#include <stddef.h>

/*
 * Writes the demangled form of sym into out (always NUL-terminated,
 * truncated to outlen). Returns 0, or -EINVAL when sym is not a mangled
 * name we understand (out may then hold a partial result), -ENOMEM.
 *
 * C++ goes through libstdc++'s __cxa_demangle, looked up with dlopen at
 * first use (its ABI is C; this keeps the daemon a plain C link). Without
 * libstdc++ installed, C++ names stay mangled. Rust v0 is demangled here.
 */
int demangle(const char *sym, char *out, size_t outlen);

#endif
