import Glibc

/// The few socket calls the example needs, on IPv4 only.
enum AFSocket {
    /// A non-blocking, close-on-exec TCP socket.
    static func makeTCP() -> Int32 {
        socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian // 127.0.0.1
        return address
    }

    /// Starts a non-blocking connect; returns 0, or errno (EINPROGRESS means "wait for writable").
    static func connect(_ fd: Int32, to endpoint: AFRequestTarget.Endpoint) -> Int32 {
        var address = loopback(port: endpoint.port)
        address.sin_addr.s_addr = endpoint.address
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return rc == 0 ? 0 : errno
    }

    /// A listening socket on 127.0.0.1 with an ephemeral port; returns the descriptor and port.
    static func listenOnLoopback() -> (fd: Int32, port: UInt16)? {
        let fd = makeTCP()
        if fd < 0 { return nil }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0, let port = localPort(fd) else {
            close(fd)
            return nil
        }
        return (fd, port)
    }

    static func localPort(_ fd: Int32) -> UInt16? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? UInt16(bigEndian: address.sin_port) : nil
    }

    /// A loopback port nobody listens on: bound, then closed, so a connect is refused.
    static func closedPort() -> UInt16? {
        guard let (fd, port) = listenOnLoopback() else { return nil }
        close(fd)
        return port
    }

    /// The pending error of a socket whose non-blocking connect finished.
    static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error
    }

    /// Sends as much of `bytes` as the socket takes now; returns the count, or -errno.
    static func send(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        return n < 0 ? -Int(errno) : n
    }
}
