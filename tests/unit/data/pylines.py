# Prints, for every code object of a small module, its line table and the
# line of each instruction as the interpreter itself reports it (co_lines):
#   C <3.10 format: 1|0> <co_firstlineno> <co_linetable in hex>
#   L <instruction index> <line, or -1 when it has none>
import sys

SRC = '''
import os

def plain(a, b):
    x = a + b
    for i in range(3):
        x += i
    return x

class K:
    def method(self, items):
        total = 0
        for it in items:
            if it % 2:
                total += (it *
                          3)
            else:
                total -= it
        return total

def gen(n):
    yield from range(n)
    lam = lambda q: q + 1
    return [lam(k) for k in range(n) if k > 1]

async def coro(x):
    try:
        return await x
    except Exception:
        pass
    finally:
        os.getpid()
''' + '\n' * 300 + '''
def far_away(v):
    ''' + ''.join('v = v + %d\n    ' % i for i in range(200)) + '''return v
'''


def walk(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, 'co_code'):
            yield from walk(c)


for co in walk(compile(SRC, 'm.py', 'exec')):
    print('C', int(sys.version_info < (3, 11)), co.co_firstlineno, co.co_linetable.hex())
    for start, end, line in co.co_lines():
        for off in range(start, end, 2):
            print('L', off // 2, -1 if line is None else line)
