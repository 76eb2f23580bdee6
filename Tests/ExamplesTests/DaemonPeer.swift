import Foundation

/// A client of the daemon that none of the daemon's code wrote: a python3 script run as a child
/// process (python3 is on every machine this project builds on), reporting on standard output.
final class DaemonPeer: Sendable {
    let process: Process
    let output: CapturedLines

    /// Runs `script` with `arguments` (`sys.argv[1:]`).
    init(_ script: String, _ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        process.standardInput = FileHandle.nullDevice
        try process.run()
        output = CapturedLines(pipe.fileHandleForReading)
    }

    /// The first line the script printed that contains `text`, waiting at most `timeout` seconds.
    func waitForLine(containing text: String, timeout: Double = 15) -> String? {
        output.waitForLine(containing: text, timeout: timeout)?.text
    }

    /// Ends the script if it still runs.
    func cleanUp() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Connects, sends `argv[2]` copies of the line "X" (each answered by a ~60-byte ERR reply)
    /// and never reads. Prints "backed up" once replies wait in its receive queue (the daemon
    /// processed the first read's batch, whose replies already outgrow the kernel's buffer), then
    /// "cut" when the daemon closes the connection or "not cut" after `argv[3]` seconds.
    static let neverReads = """
    import fcntl, select, socket, struct, sys, termios, time
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b"X\\n" * int(sys.argv[2]))
    deadline = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < deadline:
        waiting = struct.unpack("i", fcntl.ioctl(s, termios.FIONREAD, b"\\0\\0\\0\\0"))[0]
        if waiting > 0:
            break
        time.sleep(0.01)
    print("backed up", flush=True)
    poller = select.poll()
    poller.register(s, select.POLLHUP)
    remaining = deadline - time.monotonic()
    events = poller.poll(max(0, remaining) * 1000)
    print("cut" if events else "not cut", flush=True)
    """

    /// Connects and does nothing; prints "closed after <seconds>" when the daemon closes the
    /// connection, or "open" after `argv[2]` seconds.
    static let idle = """
    import select, socket, sys, time
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    print("connected", flush=True)
    start = time.monotonic()
    poller = select.poll()
    poller.register(s, select.POLLHUP)
    events = poller.poll(float(sys.argv[2]) * 1000)
    print("closed after %.1f" % (time.monotonic() - start) if events else "open", flush=True)
    """

    /// Sends `argv[2]` (a Python bytes literal) and prints each reply line's repr, up to
    /// `argv[3]` lines.
    static let exchange = """
    import ast, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sys.argv[1])
    s.sendall(ast.literal_eval(sys.argv[2]))
    reader = s.makefile("rb")
    for _ in range(int(sys.argv[3])):
        print("reply " + repr(reader.readline().decode()), flush=True)
    """
}
