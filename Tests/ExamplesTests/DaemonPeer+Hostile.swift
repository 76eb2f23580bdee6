import Foundation

/// Hostile and heavy clients of the daemon (python3 scripts; see ``DaemonPeer``).
extension DaemonPeer {
    /// Sends `argv[2]` copies of the line `argv[3]` and reads the replies, printing
    /// "replies <n> ok <m>" at the end of the stream (or once every reply to a PING came).
    /// `argv[4]`: "after" sends everything first, printing "sent", then waits until the journal
    /// `argv[5]` holds `argv[2]` records (every request answered by the journal: the replies
    /// wait in the daemon) and only then reads; "slow" reads at about 400 kB/s while a second
    /// thread sends, printing "reading" after the first 50,000 replies and, given the journal,
    /// "answered" once it holds `argv[2]` records (the rest of the replies wait in the daemon).
    /// Either way the daemon's
    /// socket buffer to the client fills while the client still sends, or still has replies owed.
    static let pipeline = """
    import socket, sys, threading, time
    path, count, word, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    journal = sys.argv[5] if len(sys.argv) > 5 else None
    def journaled():
        with open(journal, "rb") as f:
            return f.read().count(b"\\n") >= count
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    payload = (word + "\\n").encode() * count
    def send():
        try:
            s.sendall(payload)
            print("sent", flush=True)
        except OSError as e:
            print("send stopped: errno %d" % e.errno, flush=True)
    if mode == "after":
        send()
        deadline = time.monotonic() + 60
        while journal and time.monotonic() < deadline and not journaled():
            time.sleep(0.05)
        time.sleep(0.3) # the journal's last replies reach daemon.io
    else:
        threading.Thread(target=send, daemon=True).start()
    s.settimeout(10)
    replies, ok, pending, told, answered, turns = 0, 0, b"", False, False, 0
    try:
        while not (word == "PING" and replies == count):
            chunk = s.recv(2048 if mode == "slow" else 65536)
            if not chunk:
                break
            lines = (pending + chunk).split(b"\\n")
            pending = lines.pop()
            replies += len(lines)
            ok += sum(1 for line in lines if line.startswith(b"OK"))
            if replies >= 50000 and not told:
                told = True
                print("reading", flush=True)
            if mode == "slow":
                time.sleep(0.005)
                turns += 1
                if journal and not answered and turns % 20 == 0 and journaled():
                    answered = True
                    print("answered", flush=True)
    except ConnectionResetError:
        pass
    except socket.timeout:
        print("timed out", flush=True)
    print("replies %d ok %d" % (replies, ok), flush=True)
    """

    /// Sends PINGs from a second thread until the daemon stops taking them, reading nothing.
    /// Prints "cut" when the daemon closes the connection, or "not cut" after `argv[2]` seconds.
    static let floodNeverReads = """
    import select, socket, sys, threading
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    \(floodsPings)
    print("flooding", flush=True)
    poller = select.poll()
    poller.register(s, select.POLLHUP)
    print("cut" if poller.poll(float(sys.argv[2]) * 1000) else "not cut", flush=True)
    """

    /// Opens `argv[2]` connections, each sending a PING, and keeps them open (reading nothing)
    /// until killed; prints "connected <n>".
    static let crowd = """
    import socket, sys, time
    held = []
    for _ in range(int(sys.argv[2])):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        s.sendall(b"PING\\n")
        held.append(s)
    print("connected %d" % len(held), flush=True)
    time.sleep(600)
    """
}
