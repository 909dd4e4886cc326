# asyncio and generators: crunch is a coroutine that awaits a generator-fed
# helper, so the running coroutine's frames and a generator's frame are on
# the stack while it computes. A first short run and a pause come before:
# the DWARF walker learns of the _asyncio module (dlopen'ed by the import)
# from a sample in it and profd loads its tables, as a long-running
# service's would be.
import asyncio
import sys
import time


def numbers(n):
    for i in range(n):
        yield (i * 7) & 1023


async def crunch(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        x = 0
        for v in numbers(20000):
            x ^= v
        await asyncio.sleep(0)


asyncio.run(crunch(0.05))
time.sleep(2)
asyncio.run(crunch(float(sys.argv[1])))
