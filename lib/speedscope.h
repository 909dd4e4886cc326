/* speedscope export (https://www.speedscope.app/file-format-schema.json). */
#ifndef PROFD_SPEEDSCOPE_H
#define PROFD_SPEEDSCOPE_H

#include <stdio.h>

struct profile;
struct query;

/*
 * Writes a collapsed profile (fold__collapse) as one "sampled" speedscope
 * profile: one sample per folded line, frames root first with the process
 * (and thread) name as the root frames, weights in the folded units
 * (samples, or microseconds). name titles the profile.
 */
int speedscope__write(const struct query *q, const struct profile *collapsed, const char *name, FILE *f);

#endif
