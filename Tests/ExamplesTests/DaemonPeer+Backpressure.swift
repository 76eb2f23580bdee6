import Foundation

/// Clients that press on the daemon's memory and time bounds (python3 scripts; see ``DaemonPeer``).
extension DaemonPeer {
    /// Opens `argv[2]` connections, each sending the line `argv[3]` over and over and reading
    /// nothing, through non-blocking sockets. Prints "stalled open <n>" once no socket took a
    /// byte for half a second (the daemon stopped reading them all; n of them still open), then
    /// goes on pressing until killed.
    static let hogs = """
    import socket, sys, time
    path, count, line = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode() + b"\\n"
    chunk = line * (65536 // len(line))
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.setblocking(False)
        socks.append(s)
    told, quiet_since = False, time.monotonic()
    while True:
        progressed = False
        for s in list(socks):
            try:
                if s.send(chunk) > 0:
                    progressed = True
            except BlockingIOError:
                pass
            except OSError:
                socks.remove(s)
                s.close()
                progressed = True
        now = time.monotonic()
        if progressed:
            quiet_since = now
        if not told and now - quiet_since > 0.5:
            told = True
            print("stalled open %d" % len(socks), flush=True)
        time.sleep(0.01)
    """

    /// Opens `argv[2]` connections and sends each one byte of a request line every 0.2 s, never
    /// ending it, for `argv[3]` seconds. Prints "connected", then "open <n>" at the end.
    static let slowloris = """
    import socket, sys, time
    socks = []
    for _ in range(int(sys.argv[2])):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        socks.append(s)
    print("connected", flush=True)
    end = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < end:
        for s in list(socks):
            try:
                s.send(b"P")
            except OSError:
                socks.remove(s)
        time.sleep(0.2)
    print("open %d" % len(socks), flush=True)
    """

    /// Sends one line without end, as fast as the daemon takes it, for at most `argv[2]`
    /// seconds. Prints "closed after <bytes>" when the daemon closes the connection, or
    /// "open after <bytes>", and then the replies it got.
    static let endlessLine = """
    import socket, sys, time
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.settimeout(0.2)
    blob, sent, closed = b"a" * 65536, 0, False
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        try:
            sent += s.send(blob)
        except socket.timeout:
            pass
        except OSError:
            closed = True
            break
    print(("closed after %d" if closed else "open after %d") % sent, flush=True)
    s.settimeout(2)
    try:
        print("replies %r" % s.recv(4096), flush=True)
    except OSError as e:
        print("replies error %d" % e.errno, flush=True)
    """

    /// Python lines that send PINGs on socket `s` from a second thread until the socket fails.
    static let floodsPings = """
    def flood():
        try:
            while True:
                s.sendall(b"PING\\n" * 4096)
        except OSError:
            pass
    threading.Thread(target=flood, daemon=True).start()
    """

    /// Sends 10,000 `X` lines (about 600 kB of `ERR` replies, more than the sockets hold, so
    /// replies wait in the daemon), then `STALL 1500`, then PINGs from a second thread without
    /// end, while reading 4 KiB every 10 ms: the daemon's source keeps firing writable while the
    /// journal is stalled. Prints "done" after 2 s.
    static let stalledJournal = """
    import socket, sys, threading, time
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"X\\n" * 10000 + b"STALL 1500\\n")
    \(floodsPings)
    s.settimeout(1)
    end = time.monotonic() + 2
    while time.monotonic() < end:
        try:
            s.recv(4096)
        except socket.timeout:
            pass
        time.sleep(0.01)
    print("done", flush=True)
    """

    /// Sends `STALL <argv[2]>` and `argv[3]` APPENDs in one go, closes the socket whole (the
    /// daemon's side hangs up while its batches wait on the stalled journal), prints "closed".
    static let hangUpWhileHeld = """
    import socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"STALL " + sys.argv[2].encode() + b"\\n" + b"APPEND h\\n" * int(sys.argv[3]))
    s.close()
    print("closed", flush=True)
    """
}
