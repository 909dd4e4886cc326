/* The commands that read stored profiles: dump, top, diff. */
#ifndef PROFCTL_VIEWS_H
#define PROFCTL_VIEWS_H

struct global;

int cmd_dump(const struct global *g, int argc, char **argv);
int cmd_top(const struct global *g, int argc, char **argv);
int cmd_diff(const struct global *g, int argc, char **argv);

#endif
