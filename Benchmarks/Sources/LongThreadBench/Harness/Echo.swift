import CBenchSupport
import Glibc
import LongThreads
import NIOCore
import NIOPosix

/// An echo over loopback TCP at many connections: one LongThread watching every accepted socket
/// (`watch()`, the one-network-thread pattern) against SwiftNIO's one event loop. The client is
/// this thread with an epoll of its own: it keeps one 64-byte message in flight per connection
/// for a fixed time, and records each message's round trip.
enum Echo {
    static let messageSize = 64

    struct Result {
        var throughput: Double  // messages per second
        var p50: Double         // µs
        var p99: Double         // µs
    }

    static func section(_ settings: Settings) -> Scaling.Section {
        let connections = settings.echoConnections
        Runner.progress("scaling: echo over loopback, \(connections) connections, LongThread and NIO")
        let longThread = runLongThread(connections: connections, seconds: settings.echoSeconds)
        let nio = runNIO(connections: connections, seconds: settings.echoSeconds)
        return Scaling.Section(
            title: "Echo over loopback, \(connections.formatted) connections, \(settings.echoSeconds) s", counts: [],
            columns: ["LongThread (watch per socket)", "NIO (1 event loop)"], lines: [
                Scaling.Line(title: "throughput", unit: "k msg/s", values: [longThread.throughput / 1e3, nio.throughput / 1e3]),
                Scaling.Line(title: "round trip p50", unit: "µs", values: [longThread.p50, nio.p50]),
                Scaling.Line(title: "round trip p99", unit: "µs", values: [longThread.p99, nio.p99]),
            ])
    }

    // MARK: Servers

    static func runLongThread(connections: Int, seconds: Double) -> Result {
        let listener = listen()
        let thread = must("create") { try LongThread(name: "bench-echo") }
        let clients = connect(count: connections, port: port(of: listener))
        var accepted: [Int32] = []
        while accepted.count < connections {
            let fd = accept(listener, nil, nil)
            precondition(fd >= 0, "accept failed: \(errno)")
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            accepted.append(fd)
        }
        let buffer = Buffer()
        for fd in accepted {
            _ = must("watch") {
                try thread.watch(fd, for: .readable) { _ in
                    let count = read(fd, buffer.bytes, 4096)
                    if count > 0 { _ = write(fd, buffer.bytes, count) }  // loopback, small: the whole write fits
                }
            }
        }
        let result = drive(clients, seconds: seconds)
        thread.stop()
        (clients + accepted + [listener]).forEach { close($0) }
        return result
    }

    /// The server thread's read buffer (touched by that thread only).
    final class Buffer: @unchecked Sendable {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)
        deinit { bytes.deallocate() }
    }

    final class EchoHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.write(data, promise: nil) }
        func channelReadComplete(context: ChannelHandlerContext) { context.flush() }
    }

    static func runNIO(connections: Int, seconds: Double) -> Result {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = must("bind") {
            try ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.backlog, value: 4096)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(EchoHandler()) }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
        }
        let clients = connect(count: connections, port: UInt16(server.localAddress!.port!))
        let result = drive(clients, seconds: seconds)
        clients.forEach { close($0) }
        must("close") { try server.close().wait() }
        must("shutdown") { try group.syncShutdownGracefully() }
        return result
    }

    // MARK: Client

    static func listen() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(fd >= 0 && bound == 0 && Glibc.listen(fd, 4096) == 0, "cannot listen: \(errno)")
        return fd
    }

    static func port(of fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    /// `count` blocking connects to 127.0.0.1:`port`, then made non-blocking, TCP_NODELAY.
    static func connect(count: Int, port: UInt16) -> [Int32] {
        (0..<count).map { _ in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = loopback(port: port)
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            precondition(fd >= 0 && rc == 0, "cannot connect: \(errno)")
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            return fd
        }
    }

    /// One message in flight per connection for `seconds`; each completed echo is timed and sent
    /// again. Messages still in flight at the end are not counted.
    static func drive(_ clients: [Int32], seconds: Double) -> Result {
        let poll = bench_epoll_create()
        var index: [Int32: Int] = [:]
        for (position, fd) in clients.enumerated() {
            index[fd] = position
            precondition(bench_epoll_add_readable(poll, fd) == 0, "epoll_ctl failed: \(errno)")
        }
        let message = [UInt8](repeating: 42, count: messageSize)
        var sentAt = [UInt64](repeating: 0, count: clients.count)
        var received = [Int](repeating: 0, count: clients.count)
        var samples: [Double] = []
        func send(_ position: Int) {
            sentAt[position] = nowNanoseconds()
            received[position] = 0
            _ = write(clients[position], message, message.count)
        }
        clients.indices.forEach(send)
        let start = nowNanoseconds()
        let end = start + UInt64(seconds * 1e9)
        var ready = [Int32](repeating: 0, count: 256)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while nowNanoseconds() < end {
            let count = Int(max(bench_epoll_wait(poll, &ready, Int32(ready.count), 100), 0))
            for fd in ready.prefix(count) {
                guard let position = index[fd] else { continue }
                let count = read(clients[position], &buffer, buffer.count)
                guard count > 0 else { continue }
                received[position] += count
                if received[position] >= messageSize {
                    samples.append(Double(nowNanoseconds() - sentAt[position]) / 1e3)
                    send(position)
                }
            }
        }
        let elapsed = Double(nowNanoseconds() - start) / 1e9
        close(poll)
        return Result(throughput: Double(samples.count) / elapsed,
                      p50: Statistics.percentile(samples, 0.5), p99: Statistics.percentile(samples, 0.99))
    }
}
