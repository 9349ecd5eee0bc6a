#!/usr/bin/env python3
"""conn_mass.py — ask a running ship for |mass from outside, through Vere's
control plane (pkg/vere/io/conn.c: PIER/.urb/conn.sock, newt framing, jammed
nouns). The request is [rid %peel /mass]: the king asks the serf for its
memory report (u3_lord_quiz %quac), which runs the same walk as `urbit grab`
and |mass — under vheap with the hook patch, an ownership snapshot in the
serf's capture. Waits for the reply (the walk is done then) and prints its
size.

    conn_mass.py PIER [TIMEOUT_SECONDS]"""
import socket
import struct
import sys


def cord(s):
    return int.from_bytes(s.encode(), "little")


def jam(noun):
    """The jam of a noun (atoms: int, cells: tuple of two) without backrefs."""
    out, pos = 0, 0

    def bits(value, width):
        nonlocal out, pos
        out |= (value & ((1 << width) - 1)) << pos
        pos += width

    def mat(a):
        if a == 0:
            bits(1, 1)
            return
        b = a.bit_length()
        c = b.bit_length()
        bits(1 << c, c + 1)        # c zeros, then a one
        bits(b, c - 1)             # b without its top bit
        bits(a, b)

    def go(n):
        if isinstance(n, tuple):
            bits(0b01, 2)          # 1 then 0: a cell
            go(n[0])
            go(n[1])
        else:
            bits(0, 1)
            mat(n)

    go(noun)
    return out.to_bytes((pos + 7) // 8, "little")


def main():
    pier = sys.argv[1]
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 300
    msg = jam((32, (cord("peel"), (cord("mass"), 0))))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(pier + "/.urb/conn.sock")
    s.sendall(b"\x00" + struct.pack("<I", len(msg)) + msg)
    head = b""
    while len(head) < 5:
        chunk = s.recv(5 - len(head))
        if not chunk:
            sys.exit("conn.sock closed before the reply")
        head += chunk
    size = struct.unpack("<I", head[1:])[0]
    got = 0
    while got < size:
        chunk = s.recv(min(65536, size - got))
        if not chunk:
            sys.exit("conn.sock closed in the reply")
        got += len(chunk)
    print(f"mass: reply of {size} bytes")


if __name__ == "__main__":
    main()
