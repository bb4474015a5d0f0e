"""elfinfo.py: what the kit needs to know about a build's ELF file.

Where single_trace and its SDT marker sit (as file offsets, which is what
uprobes take), the marker's semaphore (as a file offset, for the kernel's
reference counter), and the instruction bytes at each site.  Standard
library only; x86-64/aarch64 ELF64 little-endian, as the builds are.

    python3 scripts/elfinfo.py build/benchmark-sdt     # prints a JSON summary
"""
import json
import struct
import sys
from dataclasses import dataclass


@dataclass
class Section:
    name: str
    addr: int
    offset: int
    size: int


@dataclass
class SdtNote:
    provider: str
    name: str
    pc: int  # address of the probe site (relocated like .stapsdt.base)
    semaphore: int  # address of the semaphore, 0 if none
    args: str


class Elf:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.data = f.read()
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:
            raise ValueError(f"{path}: not a little-endian ELF64 file")
        shoff, = struct.unpack_from("<Q", d, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
        raw = []  # (name's offset in .shstrtab, address, file offset, size)
        for i in range(shnum):
            name, _type, _flags, addr, off, size = struct.unpack_from(
                "<IIQQQQ", d, shoff + i * shentsize)
            raw.append((name, addr, off, size))
        names = raw[shstrndx][2]
        self.sections = {}
        for name, addr, off, size in raw:
            n = self._cstr(names + name)
            self.sections[n] = Section(n, addr, off, size)

    def _cstr(self, off):
        end = self.data.index(b"\0", off)
        return self.data[off:end].decode()

    def file_offset(self, addr):
        """File offset of a virtual address inside some section."""
        for s in self.sections.values():
            if s.addr and s.addr <= addr < s.addr + s.size:
                return addr - s.addr + s.offset
        raise ValueError(f"{self.path}: address {addr:#x} is in no section")

    def symbol(self, wanted):
        """Address of the function symbol `wanted` (from .symtab or .dynsym)."""
        for tab, strs in ((".symtab", ".strtab"), (".dynsym", ".dynstr")):
            if tab not in self.sections:
                continue
            t, s = self.sections[tab], self.sections[strs]
            for off in range(t.offset, t.offset + t.size, 24):
                name, _info, _other, _shndx, value, _size = struct.unpack_from(
                    "<IBBHQQ", self.data, off)
                if value and self._cstr(s.offset + name) == wanted:
                    return value
        raise KeyError(f"{self.path}: no symbol {wanted}")

    def sdt_notes(self):
        """The stapsdt notes, with the probe address relocated the way
        readelf and the tracers do (by .stapsdt.base's actual address)."""
        sec = self.sections.get(".note.stapsdt")
        if not sec:
            return []
        base = self.sections.get(".stapsdt.base")
        notes, off, end = [], sec.offset, sec.offset + sec.size
        while off < end:
            namesz, descsz, typ = struct.unpack_from("<III", self.data, off)
            off += 12
            owner = self.data[off:off + namesz].rstrip(b"\0").decode()
            off += (namesz + 3) & ~3
            desc = self.data[off:off + descsz]
            off += (descsz + 3) & ~3
            if owner != "stapsdt" or typ != 3:
                continue
            pc, note_base, sem = struct.unpack_from("<QQQ", desc, 0)
            provider, name, args = desc[24:].split(b"\0")[:3]
            if base and note_base:
                pc += base.addr - note_base
            notes.append(SdtNote(provider.decode(), name.decode(), pc, sem, args.decode()))
        return notes

    def bytes_at(self, addr, n):
        off = self.file_offset(addr)
        return self.data[off:off + n]


def summary(path):
    """Probe sites of a build: offsets for uprobes and the bytes there."""
    elf = Elf(path)
    fn = elf.symbol("single_trace")
    out = {"path": path, "function": {
        "address": hex(fn), "file_offset": hex(elf.file_offset(fn)),
        "bytes": elf.bytes_at(fn, 8).hex(" ")}, "markers": []}
    for n in elf.sdt_notes():
        out["markers"].append({
            "provider": n.provider, "name": n.name, "args": n.args,
            "address": hex(n.pc), "file_offset": hex(elf.file_offset(n.pc)),
            "bytes": elf.bytes_at(n.pc, 5).hex(" "),
            "semaphore": hex(n.semaphore),
            "semaphore_file_offset": hex(elf.file_offset(n.semaphore)) if n.semaphore else None})
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: elfinfo.py BUILD")
    json.dump(summary(sys.argv[1]), sys.stdout, indent=2)
    print()
