/* CRC-32C (Castagnoli), the checksum of segment records (docs/FORMAT.md). */
#ifndef PROFD_CRC32C_H
#define PROFD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c(0, buf, len) starts a checksum; pass the result back to continue it. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
