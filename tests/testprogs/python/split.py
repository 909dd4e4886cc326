# A pure-Python 50/30/20 split: fifty, thirty and twenty run the same loop
# 50000, 30000 and 20000 times per round, under Worker.run (a method). The
# loop's cost per turn does not depend on n (x stays small), and the order
# changes every round, so a sampling period that divides the round's
# cannot favour one of them.
import random
import sys
import time
from itertools import repeat


def burn(n):
    x = 0
    for _ in repeat(None, n):
        x = (x + 7) & 1023
    return x


def fifty():
    burn(50000)


def thirty():
    burn(30000)


def twenty():
    burn(20000)


class Worker:
    def run(self, secs):
        end = time.monotonic() + secs
        order = [fifty, thirty, twenty]
        while time.monotonic() < end:
            random.shuffle(order)
            for f in order:
                f()


def main():
    Worker().run(float(sys.argv[1]))


main()
