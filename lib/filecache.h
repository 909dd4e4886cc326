/*
 * Files profd reads from other processes, one entry per file as the
 * kernel names it (device, inode): what each reader makes of a file (its
 * symbols, its unwind table) hangs off that entry in a slot of its own, so
 * a file mapped by many processes is looked up once per reader by its key
 * and its readers' results sit side by side. Each reader keeps its own
 * budget and eviction order; an entry goes when no slot holds anything.
 */
#ifndef PROFD_FILECACHE_H
#define PROFD_FILECACHE_H

#include <stddef.h>
#include <stdint.h>

struct filecache;

#define FILECACHE_SLOTS 4

/* Called at filecache__free for what a reader left in its slot. */
typedef void (*filecache_drop_fn)(void *data, void *arg);

int filecache__new(struct filecache **out);
void filecache__free(struct filecache *c);

/* A slot for one reader: its number, or -ENOSPC beyond FILECACHE_SLOTS. */
int filecache__slot(struct filecache *c, filecache_drop_fn drop, void *arg);
/* What the reader of slot keeps for (dev, ino); NULL: nothing. */
void *filecache__get(const struct filecache *c, uint64_t dev, uint64_t ino, int slot);
/*
 * Sets (data) or clears (NULL) slot's entry for (dev, ino), without a
 * drop for what was there. 0 or -ENOMEM (nothing changed).
 */
int filecache__set(struct filecache *c, uint64_t dev, uint64_t ino, int slot, void *data);
/* Files with something in any slot. */
size_t filecache__count(const struct filecache *c);

#endif
