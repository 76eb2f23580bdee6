import Glibc

/// A blocking client for the daemon's socket: what a script (or a test) uses to talk to it.
/// Use it from one thread at a time (it is not `Sendable`); it closes its socket when released.
public final class DaemonClient {
    private let fd: Int32
    private var buffered: [UInt8] = []

    /// Connects to the daemon listening on `path`.
    public init(path: String) throws(DaemonError) {
        fd = try Self.connect(path)
    }

    deinit { close(fd) }

    static func connect(_ path: String) throws(DaemonError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { throw .usage("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw .system("socket", errno: errno) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 {
            let saved = errno
            close(fd)
            throw .system("cannot connect to \(path)", errno: saved)
        }
        return fd
    }

    /// Sends raw bytes (a request needs its trailing newline).
    public func send(_ text: String) throws(DaemonError) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system("send", errno: errno)
            }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Reads one reply line, waiting at most `timeoutSeconds`; nil when the daemon closed the
    /// connection (after a stop, requests it had not read yet get no reply: they were never
    /// accepted).
    public func readLine(timeoutSeconds: Int = 10) throws(DaemonError) -> String? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeFirst(newline + 1)
                return line
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(timeoutSeconds * 1000))
            if ready == 0 { throw .system("no reply within \(timeoutSeconds) s", errno: ETIMEDOUT) }
            if ready < 0 { if errno == EINTR { continue }; throw .system("poll", errno: errno) }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n < 0 {
                if errno == EINTR { continue }
                // A daemon that stops closes connections whose requests it had not read (it
                // answers only what it accepted); the kernel reports that as a reset after the
                // data it did send. For a reader that is the end of the stream.
                if errno == ECONNRESET { return nil }
                throw .system("read", errno: errno)
            }
            if n == 0 { return nil }
            buffered.append(contentsOf: chunk[0..<n])
        }
    }

    /// Sends `request` and a newline, and returns the reply line.
    public func request(_ request: String) throws(DaemonError) -> String? {
        try send(request + "\n")
        return try readLine()
    }
}
