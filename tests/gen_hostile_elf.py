#!/usr/bin/env python3
"""Writes crafted x86-64 static executables that spin, for profd's hostile-input tests.

    gen_hostile_elf.py names OUT       60,000 FUNC symbols sharing one 4,000-byte name (1.4 MB)
    gen_hostile_elf.py bigsection OUT  a .strtab that claims 400 MiB, in a sparse file
    gen_hostile_elf.py xzbomb OUT      no .symtab; .gnu_debugdata inflating to 100 MiB

Each executable is one PT_LOAD mapped at 0x400000 whose entry is `jmp .`,
so it runs (as any user) until killed. Nothing here is committed as a binary:
the files are made at test time.
"""
import lzma
import os
import struct
import sys

BASE = 0x400000
TEXT_OFF = 0x1000
TEXT_SIZE = 0x10000  # 64 KiB: every crafted symbol lands inside it


def shdr(name, typ, flags, addr, off, size, link=0, info=0, align=1, entsize=0):
    return struct.pack('<IIQQQQIIQQ', name, typ, flags, addr, off, size, link, info, align, entsize)


def build(path, etype, symbols, strtab, strtab_claim=None, debugdata=None, sparse_to=0):
    """symbols: list of (name offset, value, size); strtab: bytes (its claimed size may be larger)."""
    text = b'\xeb\xfe' + b'\xcc' * (TEXT_SIZE - 2)  # jmp . then int3
    names = [b'', b'.text', b'.symtab', b'.strtab', b'.shstrtab', b'.gnu_debugdata']
    shstr = b''
    shname = []
    for n in names:
        shname.append(len(shstr))
        shstr += n + b'\0'
    # GLOBAL FUNC in section 1, after the null symbol
    symtab = b'\0' * 24 + b''.join(struct.pack('<IBBHQQ', name, 0x12, 0, 1, value, size)
                                   for name, value, size in symbols)
    off = TEXT_OFF + TEXT_SIZE
    sections = [b'']
    layout = {}
    blobs = [('symtab', symtab), ('strtab', strtab), ('shstrtab', shstr)]
    if debugdata is not None:
        blobs.append(('debugdata', debugdata))
    for key, blob in blobs:
        off = (off + 7) & ~7
        layout[key] = off
        off += len(blob)
    shoff = (off + 7) & ~7
    hdrs = [shdr(0, 0, 0, 0, 0, 0),
            shdr(shname[1], 1, 6, BASE + TEXT_OFF, TEXT_OFF, TEXT_SIZE, align=16)]
    if symbols:
        hdrs.append(shdr(shname[2], 2, 0, 0, layout['symtab'], len(symtab), link=3, info=1, align=8, entsize=24))
    else:
        hdrs.append(shdr(shname[2], 8, 0, 0, layout['symtab'], 0))  # NOBITS placeholder: no .symtab
    hdrs.append(shdr(shname[3], 3, 0, 0, layout['strtab'], strtab_claim or len(strtab)))
    hdrs.append(shdr(shname[4], 3, 0, 0, layout['shstrtab'], len(shstr)))
    if debugdata is not None:
        hdrs.append(shdr(shname[5], 1, 0, 0, layout['debugdata'], len(debugdata)))
    ehdr = struct.pack('<4sBBBBB7sHHIQQQIHHHHHH', b'\x7fELF', 2, 1, 1, 0, 0, b'\0' * 7,
                       etype, 62, 1, BASE + TEXT_OFF, 64, shoff, 0, 64, 56, 1, 64, len(hdrs), 4)
    phdr = struct.pack('<IIQQQQQQ', 1, 5, 0, BASE, BASE, TEXT_OFF + TEXT_SIZE, TEXT_OFF + TEXT_SIZE, 0x1000)
    with open(path, 'wb') as f:
        f.write(ehdr + phdr)
        f.seek(TEXT_OFF)
        f.write(text)
        for key, blob in blobs:
            f.seek(layout[key])
            f.write(blob)
        f.seek(shoff)
        f.write(b''.join(hdrs))
        if sparse_to > f.tell():
            f.truncate(sparse_to)  # a hole: the claimed bytes cost the writer nothing
    os.chmod(path, 0o755)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, out = sys.argv[1], sys.argv[2]
    if mode == 'names':
        name = b'N' * 4000
        build(out, 2, [(1, BASE + TEXT_OFF + i, 1) for i in range(60000)], b'\0' + name + b'\0')
    elif mode == 'bigsection':
        claim = 400 << 20
        strtab = b'\0spin\0'
        # The .strtab header says 400 MiB; the file is extended with a hole so that it holds them.
        build(out, 2, [(1, BASE + TEXT_OFF, TEXT_SIZE)], strtab, strtab_claim=claim,
              sparse_to=TEXT_OFF + TEXT_SIZE + (1 << 20) + claim)
    elif mode == 'xzbomb':
        comp = lzma.LZMACompressor(format=lzma.FORMAT_XZ, preset=1)
        chunk = b'\0' * (1 << 20)
        inner = comp.compress(b'\x7fELF\x02\x01\x01' + b'\0' * 9)
        for _ in range(100):
            inner += comp.compress(chunk)
        inner += comp.flush()
        build(out, 2, [], b'\0', debugdata=inner)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
