"""A pure-Python Zstandard frame decoder (RFC 8878), the fallback when no C decoder is installed.

Slow (pure Python) but bounded: every size is checked against the input and the declared content size, so
corrupt input raises `ZstdError` instead of looping or allocating without limit. Dictionaries are not
supported (NVIDIA fatbins and clang offload bundles do not use them); the optional checksum is skipped.
"""

from __future__ import annotations

MAGIC = 0xFD2FB528
MAX_BLOCK = 128 * 1024  # RFC 8878 3.1.1.2.3: Block_Maximum_Size


class ZstdError(ValueError):
    """Input is not a valid (or supported) Zstandard frame."""


# RFC 8878 3.1.1.3.2.2 default distributions
LL_DEFAULT = [4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
              -1, -1, -1, -1]  # fmt: skip
ML_DEFAULT = [1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
              1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1]  # fmt: skip
OF_DEFAULT = [1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1,
              -1]  # fmt: skip
# RFC 8878 3.1.1.3.2.1.1 code tables: (baseline, extra bits)
LL_CODES = [(i, 0) for i in range(16)] + [
    (16, 1), (18, 1), (20, 1), (22, 1), (24, 2), (28, 2), (32, 3), (40, 3), (48, 4), (64, 6), (128, 7),
    (256, 8), (512, 9), (1024, 10), (2048, 11), (4096, 12), (8192, 13), (16384, 14), (32768, 15), (65536, 16),
]  # fmt: skip
ML_CODES = [(i + 3, 0) for i in range(32)] + [
    (35, 1), (37, 1), (39, 1), (41, 1), (43, 2), (47, 2), (51, 3), (59, 3), (67, 4), (83, 4), (99, 5),
    (131, 7), (259, 8), (515, 9), (1027, 10), (2051, 11), (4099, 12), (8195, 13), (16387, 14), (32771, 15),
    (65539, 16),
]  # fmt: skip

FseTable = tuple[int, list[tuple[int, int, int]]]  # (accuracy log, [(symbol, nbBits, baseline)])


class _Back:
    """Backward bit reader (RFC 8878 4.1: read from the end, after the highest set bit of the last byte)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        if not data or data[-1] == 0:
            raise ZstdError("bitstream is empty or lacks its end marker")
        self.data = data
        self.pos = (len(data) - 1) * 8 + data[-1].bit_length() - 1

    def peek(self, n: int) -> int:
        if n == 0:
            return 0
        lo = self.pos - n
        if lo >= 0:
            start = lo >> 3
            end = (self.pos + 7) >> 3
            return (int.from_bytes(self.data[start:end], "little") >> (lo - (start << 3))) & ((1 << n) - 1)
        have = self.pos
        if have <= 0:
            return 0
        v = int.from_bytes(self.data[0 : (have + 7) >> 3], "little") & ((1 << have) - 1)
        return v << (-lo)

    def read(self, n: int) -> int:
        v = self.peek(n)
        self.pos -= n
        return v


def _highbit(x: int) -> int:
    return x.bit_length() - 1


def _read_fse_distribution(data: bytes, pos: int, max_log: int, max_sym: int) -> tuple[list[int], int, int]:
    """FSE table description (RFC 8878 4.1.1) -> (probabilities, accuracy log, bytes consumed)."""
    bit = 0

    def bits(n: int) -> int:
        start = pos + (bit >> 3)
        chunk = int.from_bytes(data[start : start + 4], "little")
        return (chunk >> (bit & 7)) & ((1 << n) - 1)

    if pos >= len(data):
        raise ZstdError("FSE table description truncated")
    al = bits(4) + 5
    bit += 4
    if al > max_log:
        raise ZstdError(f"FSE accuracy log {al} exceeds {max_log}")
    remaining = (1 << al) + 1
    threshold = 1 << al
    nbits = al + 1
    probs: list[int] = []
    prev0 = False
    while remaining > 1 and len(probs) <= max_sym:
        if prev0:
            while True:
                rep = bits(2)
                bit += 2
                probs.extend([0] * rep)
                if rep != 3:
                    break
            if len(probs) > max_sym:
                raise ZstdError("FSE distribution has too many symbols")
        mx = (2 * threshold - 1) - remaining
        low = bits(nbits - 1)
        if low < mx:
            count = low
            bit += nbits - 1
        else:
            count = bits(nbits)
            if count >= threshold:
                count -= mx
            bit += nbits
        count -= 1
        remaining -= -count if count < 0 else count
        probs.append(count)
        prev0 = count == 0
        while remaining < threshold:
            nbits -= 1
            threshold >>= 1
        if pos + (bit >> 3) > len(data):
            raise ZstdError("FSE table description truncated")
    if remaining != 1 or len(probs) > max_sym + 1:
        raise ZstdError("corrupt FSE distribution")
    return probs, al, (bit + 7) >> 3


def _build_fse(probs: list[int], al: int) -> FseTable:
    size = 1 << al
    syms = [0] * size
    high = size - 1
    nxt = [0] * len(probs)
    for s, p in enumerate(probs):
        if p == -1:
            syms[high] = s
            high -= 1
            nxt[s] = 1
    step = (size >> 1) + (size >> 3) + 3
    mask = size - 1
    pos = 0
    for s, p in enumerate(probs):
        if p <= 0:
            continue
        nxt[s] = p
        for _ in range(p):
            syms[pos] = s
            pos = (pos + step) & mask
            while pos > high:
                pos = (pos + step) & mask
    if pos != 0:
        raise ZstdError("FSE distribution does not fill its table")
    table: list[tuple[int, int, int]] = []
    for u in range(size):
        s = syms[u]
        ns = nxt[s]
        nxt[s] += 1
        nb = al - _highbit(ns)
        table.append((s, nb, (ns << nb) - size))
    return al, table


def _rle_table(sym: int) -> FseTable:
    return 0, [(sym, 0, 0)]


_DEF_LL = _build_fse(LL_DEFAULT, 6)
_DEF_ML = _build_fse(ML_DEFAULT, 6)
_DEF_OF = _build_fse(OF_DEFAULT, 5)


def _huffman_table(weights: list[int]) -> tuple[int, list[tuple[int, int]]]:
    total = sum((1 << (w - 1)) for w in weights if w > 0)
    if total == 0:
        raise ZstdError("Huffman weights are all zero")
    max_bits = _highbit(total) + 1
    rest = (1 << max_bits) - total
    if rest & (rest - 1):
        raise ZstdError("Huffman weights do not complete a tree")
    weights = [*weights, _highbit(rest) + 1]
    if max_bits > 11:
        raise ZstdError(f"Huffman max code length {max_bits} exceeds 11")
    counts = [0] * (max_bits + 2)
    for w in weights:
        if w:
            counts[w] += 1
    start = [0] * (max_bits + 2)
    acc = 0
    for w in range(1, max_bits + 1):
        start[w] = acc
        acc += counts[w] << (w - 1)
    table: list[tuple[int, int]] = [(0, 0)] * (1 << max_bits)
    for sym, w in enumerate(weights):
        if w == 0:
            continue
        length = 1 << (w - 1)
        nb = max_bits + 1 - w
        s = start[w]
        for u in range(s, s + length):
            table[u] = (sym, nb)
        start[w] = s + length
    return max_bits, table


def _read_huffman_tree(data: bytes, pos: int) -> tuple[tuple[int, list[tuple[int, int]]], int]:
    if pos >= len(data):
        raise ZstdError("Huffman tree description truncated")
    hb = data[pos]
    pos += 1
    weights: list[int] = []
    if hb >= 128:
        n = hb - 127
        nbytes = (n + 1) // 2
        if pos + nbytes > len(data):
            raise ZstdError("Huffman weights truncated")
        for i in range(n):
            b = data[pos + i // 2]
            weights.append(b >> 4 if i % 2 == 0 else b & 15)
        pos += nbytes
    else:
        if pos + hb > len(data):
            raise ZstdError("Huffman FSE weights truncated")
        chunk = data[pos : pos + hb]
        probs, al, used = _read_fse_distribution(chunk, 0, 6, 255)
        _, table = _build_fse(probs, al)
        br = _Back(chunk[used:])
        s1 = br.read(al)
        s2 = br.read(al)
        while True:
            if len(weights) > 255:
                raise ZstdError("too many Huffman weights")
            sym, nb, base = table[s1]
            weights.append(sym)
            s1 = base + br.read(nb)
            if br.pos < 0:
                weights.append(table[s2][0])
                break
            sym, nb, base = table[s2]
            weights.append(sym)
            s2 = base + br.read(nb)
            if br.pos < 0:
                weights.append(table[s1][0])
                break
        pos += hb
    return _huffman_table(weights), pos


def _huff_stream(data: bytes, huf: tuple[int, list[tuple[int, int]]], n: int) -> bytes:
    max_bits, table = huf
    br = _Back(data)
    out = bytearray()
    for _ in range(n):
        sym, nb = table[br.peek(max_bits)]
        out.append(sym)
        br.pos -= nb
    if br.pos != 0:
        raise ZstdError("Huffman stream not fully consumed")
    return bytes(out)


class _State:
    def __init__(self) -> None:
        self.huf: tuple[int, list[tuple[int, int]]] | None = None
        self.tables: list[FseTable | None] = [None, None, None]
        self.rep = [1, 4, 8]


def _literals(data: bytes, pos: int, st: _State) -> tuple[bytes, int]:
    b0 = data[pos]
    ltype = b0 & 3
    sf = (b0 >> 2) & 3
    if ltype in (0, 1):
        if sf in (0, 2):
            size, hsz = b0 >> 3, 1
        elif sf == 1:
            size, hsz = (b0 >> 4) + (data[pos + 1] << 4), 2
        else:
            size, hsz = (b0 >> 4) + (data[pos + 1] << 4) + (data[pos + 2] << 12), 3
        pos += hsz
        if size > MAX_BLOCK:
            raise ZstdError("literals larger than a block")
        if ltype == 0:
            if pos + size > len(data):
                raise ZstdError("raw literals truncated")
            return data[pos : pos + size], pos + size
        return bytes([data[pos]]) * size, pos + 1
    nhdr = {0: 3, 1: 3, 2: 4, 3: 5}[sf]
    h = int.from_bytes(data[pos : pos + nhdr], "little")
    bitsz = {3: 10, 4: 14, 5: 18}[nhdr]
    regen = (h >> 4) & ((1 << bitsz) - 1)
    comp = (h >> (4 + bitsz)) & ((1 << bitsz) - 1)
    pos += nhdr
    end = pos + comp
    if end > len(data) or regen > MAX_BLOCK:
        raise ZstdError("compressed literals overrun the block")
    if ltype == 2:
        st.huf, pos = _read_huffman_tree(data[:end], pos)
    elif st.huf is None:
        raise ZstdError("treeless literals without a previous Huffman tree")
    huf = st.huf
    assert huf is not None
    if sf == 0:
        return _huff_stream(data[pos:end], huf, regen), end
    if pos + 6 > end:
        raise ZstdError("Huffman jump table truncated")
    s1 = int.from_bytes(data[pos : pos + 2], "little")
    s2 = int.from_bytes(data[pos + 2 : pos + 4], "little")
    s3 = int.from_bytes(data[pos + 4 : pos + 6], "little")
    pos += 6
    seg = (regen + 3) // 4
    out = bytearray()
    starts = [pos, pos + s1, pos + s1 + s2, pos + s1 + s2 + s3, end]
    if starts[3] > end:
        raise ZstdError("Huffman stream sizes overrun the literals")
    for i in range(4):
        n = seg if i < 3 else regen - 3 * seg
        out += _huff_stream(data[starts[i] : starts[i + 1]], huf, n)
    return bytes(out), end


def _sequences(data: bytes, pos: int, end: int, st: _State, lits: bytes, out: bytearray, limit: int) -> None:
    if pos >= end:
        raise ZstdError("sequences section missing")
    b0 = data[pos]
    if b0 == 0:
        nseq, pos = 0, pos + 1
    elif b0 < 128:
        nseq, pos = b0, pos + 1
    elif b0 < 255:
        nseq, pos = ((b0 - 128) << 8) + data[pos + 1], pos + 2
    else:
        nseq, pos = data[pos + 1] + (data[pos + 2] << 8) + 0x7F00, pos + 3
    if nseq == 0:
        out += lits
        return
    modes = data[pos]
    pos += 1
    spec = (
        ((modes >> 6) & 3, _DEF_LL, 9, 35),
        ((modes >> 4) & 3, _DEF_OF, 8, 31),
        ((modes >> 2) & 3, _DEF_ML, 9, 52),
    )
    tabs: list[FseTable] = []
    for i, (mode, default, max_log, max_sym) in enumerate(spec):
        if mode == 0:
            t = default
        elif mode == 1:
            if pos >= end:
                raise ZstdError("RLE sequence symbol missing")
            t = _rle_table(data[pos])
            pos += 1
        elif mode == 2:
            probs, al, used = _read_fse_distribution(data[:end], pos, max_log, max_sym)
            t = _build_fse(probs, al)
            pos += used
        else:
            prev = st.tables[i]
            if prev is None:
                raise ZstdError("repeat sequence table without a previous table")
            t = prev
        st.tables[i] = t
        tabs.append(t)
    (ll_al, ll_t), (of_al, of_t), (ml_al, ml_t) = tabs
    br = _Back(data[pos:end])
    ll_s = br.read(ll_al)
    of_s = br.read(of_al)
    ml_s = br.read(ml_al)
    rep = st.rep
    lit_pos = 0
    for i in range(nseq):
        of_code = of_t[of_s][0]
        ll_code = ll_t[ll_s][0]
        ml_code = ml_t[ml_s][0]
        if ll_code > 35 or ml_code > 52 or of_code > 31:
            raise ZstdError("sequence code out of range")
        ofv = (1 << of_code) + br.read(of_code)
        mlb, mln = ML_CODES[ml_code]
        ml = mlb + br.read(mln)
        llb, lln = LL_CODES[ll_code]
        ll = llb + br.read(lln)
        if ofv > 3:
            off = ofv - 3
            rep = [off, rep[0], rep[1]]
        else:
            if ll == 0:
                ofv += 1
            if ofv == 1:
                off = rep[0]
            elif ofv == 2:
                off = rep[1]
                rep = [rep[1], rep[0], rep[2]]
            elif ofv == 3:
                off = rep[2]
                rep = [rep[2], rep[0], rep[1]]
            else:
                off = rep[0] - 1
                rep = [off, rep[0], rep[1]]
        if i != nseq - 1:
            _, nb, base = ll_t[ll_s]
            ll_s = base + br.read(nb)
            _, nb, base = ml_t[ml_s]
            ml_s = base + br.read(nb)
            _, nb, base = of_t[of_s]
            of_s = base + br.read(nb)
        if lit_pos + ll > len(lits):
            raise ZstdError("sequence consumes more literals than decoded")
        out += lits[lit_pos : lit_pos + ll]
        lit_pos += ll
        if off <= 0 or off > len(out):
            raise ZstdError(f"match offset {off} beyond the decoded output")
        if len(out) + ml > limit:
            raise ZstdError("output exceeds the declared content size")
        start = len(out) - off
        if off >= ml:
            out += out[start : start + ml]
        else:
            for k in range(ml):
                out.append(out[start + k])
    if br.pos != 0:
        raise ZstdError("sequence bitstream not fully consumed")
    st.rep = rep
    out += lits[lit_pos:]


def decompress(src: bytes, max_output: int = 1 << 31) -> bytes:
    """Decode all frames in `src` (skippable frames skipped); output capped at `max_output` bytes."""
    data = bytes(src)
    out = bytearray()
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise ZstdError("truncated frame magic")
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            size = int.from_bytes(data[pos + 4 : pos + 8], "little")
            pos += 8 + size
            continue
        if magic != MAGIC:
            raise ZstdError(f"bad frame magic {magic:#x}")
        pos += 4
        fhd = data[pos]
        pos += 1
        fcs_flag = fhd >> 6
        single = (fhd >> 5) & 1
        checksum = (fhd >> 2) & 1
        did_flag = fhd & 3
        if fhd & 8:
            raise ZstdError("reserved frame header bit set")
        if not single:
            pos += 1  # window descriptor
        did_size = [0, 1, 2, 4][did_flag]
        if did_size and int.from_bytes(data[pos : pos + did_size], "little"):
            raise ZstdError("frames with a dictionary are not supported")
        pos += did_size
        fcs_size = [1 if single else 0, 2, 4, 8][fcs_flag]
        fcs = int.from_bytes(data[pos : pos + fcs_size], "little") if fcs_size else -1
        if fcs_size == 2:
            fcs += 256
        pos += fcs_size
        limit = min(max_output, len(out) + fcs) if fcs >= 0 else max_output
        st = _State()
        frame = bytearray()
        while True:
            if pos + 3 > len(data):
                raise ZstdError("truncated block header")
            bh = int.from_bytes(data[pos : pos + 3], "little")
            pos += 3
            last, btype, bsize = bh & 1, (bh >> 1) & 3, bh >> 3
            if btype == 0:
                if pos + bsize > len(data):
                    raise ZstdError("raw block truncated")
                frame += data[pos : pos + bsize]
                pos += bsize
            elif btype == 1:
                if pos >= len(data):
                    raise ZstdError("RLE block truncated")
                frame += bytes([data[pos]]) * bsize
                pos += 1
            elif btype == 2:
                if bsize > MAX_BLOCK or pos + bsize > len(data):
                    raise ZstdError("compressed block truncated or too large")
                end = pos + bsize
                lits, p = _literals(data[:end], pos, st)
                _sequences(data, p, end, st, lits, frame, limit - len(out))
                pos = end
            else:
                raise ZstdError("reserved block type")
            if len(out) + len(frame) > limit:
                raise ZstdError("output exceeds the declared content size")
            if last:
                break
        if fcs >= 0 and len(frame) != fcs:
            raise ZstdError(f"frame decoded to {len(frame)} bytes, header says {fcs}")
        out += frame
        if checksum:
            pos += 4
    return bytes(out)
