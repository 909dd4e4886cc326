/* profctl export: push stored windows to Pyroscope. */
#ifndef PROFCTL_EXPORT_H
#define PROFCTL_EXPORT_H

struct global;

int cmd_export(const struct global *g, int argc, char **argv);

#endif
