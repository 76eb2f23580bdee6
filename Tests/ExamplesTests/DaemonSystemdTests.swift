import DaemonExample
import ExampleSupport
import Foundation
import Testing

/// `longthread-daemon` as a systemd `Type=notify` service with a watchdog, against a real
/// `NOTIFY_SOCKET`: the test plays systemd's part, receiving the daemon's datagrams.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DaemonSystemdTests {
    @Test("READY=1, WATCHDOG=1 each half period, none while the journal thread is stalled (logged first), STOPPING=1, exit 0")
    func notifyAndWatchdog() throws {
        let directory = try DaemonProcess.makeDirectory()
        let systemd = try NotifySocket(path: directory.appendingPathComponent("notify").path)
        defer { systemd.close() }
        // WatchdogSec=1: a ping every 0.5 s; stalls reported after 0.3 s.
        let daemon = try DaemonProcess(
            directory: directory,
            options: ["--debug-stall-requests", "--stall-threshold", "0.3"],
            environment: ["NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "1000000"]
        )
        defer { daemon.cleanUp() }

        let ready = systemd.waitForMessage { $0.contains("READY=1") }
        #expect(ready?.text.contains("STATUS=serving socket") == true, "\(String(describing: ready))")
        #expect(systemd.waitForMessage { _ in systemd.pings().count >= 3 } != nil, "pings while serving")

        // Block the journal thread for 3 s, as a hung fsync would.
        let client = try DaemonClient(path: daemon.socketPath)
        try client.send("STALL 3000\n")
        let report = daemon.log.waitForLine(containing: "LongThread stalled", timeout: 5)
        #expect(report?.text.contains("daemon.journal") == true, "\(daemon.stderr)")
        // Where the journal thread is stuck: asleep in the kernel (as in a hung fsync), so not
        // interrupted for its stack; the report names the system call instead.
        #expect(report?.text.contains("longthread.kernel.wait") == true && report?.text.contains("nanosleep") == true, "\(report?.text ?? "no report")")
        #expect(daemon.waitForLine(containing: "withholding WATCHDOG=1"))
        #expect(try client.readLine() == "OK STALLED 3000 ms")
        let recovered = ContinuousClock.now

        // The stall report is logged before the watchdog gives up on the thread.
        let lines = daemon.stderr
        let reportIndex = lines.firstIndex { $0.contains("LongThread stalled") }
        let withheldIndex = lines.firstIndex { $0.contains("withholding WATCHDOG=1") }
        #expect(reportIndex != nil && withheldIndex != nil && reportIndex! < withheldIndex!, "\(lines)")
        // The stall began at least 0.3 s before its report. A tick up to one period (0.5 s) after
        // it began may still ping for the heartbeat that ran before; after that, no ping until the
        // stall ends, 3 s after it began. The window leaves room for late ticks and a late report
        // on a loaded machine; a healthy daemon would ping two or three times in it.
        if let reported = report?.at {
            let silent = systemd.pings().filter { $0 > reported + .milliseconds(1000) && $0 < reported + .milliseconds(2200) }
            #expect(silent.isEmpty, "pings during the stall at \(silent.map { $0 - reported })")
        }
        #expect(systemd.messages().contains { $0.text.contains("STATUS=stalled: daemon.journal") })
        #expect(systemd.waitForMessage { _ in systemd.pings().contains { $0 > recovered } } != nil, "pings resume")

        daemon.signal(SIGTERM)
        #expect(systemd.waitForMessage { $0.contains("STOPPING=1") } != nil)
        #expect(daemon.waitForExit() == 0, "\(daemon.stderr.suffix(40))")
    }

    @Test("without NOTIFY_SOCKET and WATCHDOG_USEC the daemon runs as before and sends nothing")
    func outsideSystemd() throws {
        let directory = try DaemonProcess.makeDirectory()
        let daemon = try DaemonProcess(directory: directory, environment: ["NOTIFY_SOCKET": "", "WATCHDOG_USEC": ""])
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        #expect(!daemon.stderr.contains { $0.contains("watchdog.period") })
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0, "\(daemon.stderr.suffix(60))")
    }
}

/// The service manager's end of the sd_notify(3) protocol: a Unix datagram socket bound at
/// `path`, whose messages a thread collects with the moment each arrived.
final class NotifySocket: Sendable {
    let path: String
    private let fd: Int32
    private let received = Protected<[(at: ContinuousClock.Instant, text: String)]>([])
    private let arrived = DispatchSemaphore(value: 0)
    private let closing = Protected(false)
    private let done = DispatchSemaphore(value: 0)

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DaemonTestError("socket: errno \(errno)") }
        let rc = withUnixAddress(path) { bind(fd, $0, $1) }
        guard rc == 0 else {
            Glibc.close(fd)
            throw DaemonTestError("bind \(path): errno \(errno)")
        }
        Thread.detachNewThread { [self] in receive() }
    }

    private func receive() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !closing.withLock({ $0 }) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue } // wakes to see `closing`
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { continue }
            let text = String(decoding: buffer[..<n], as: UTF8.self)
            received.withLock { $0.append((.now, text)) }
            arrived.signal()
        }
        done.signal()
    }

    func messages() -> [(at: ContinuousClock.Instant, text: String)] { received.withLock { $0 } }

    /// When each `WATCHDOG=1` arrived.
    func pings() -> [ContinuousClock.Instant] {
        messages().filter { $0.text.split(separator: "\n").contains("WATCHDOG=1") }.map(\.at)
    }

    /// Waits until a message satisfies `condition` (it may look at all messages), at most
    /// `timeout` seconds; returns that message.
    func waitForMessage(timeout: Double = 10, _ condition: (String) -> Bool) -> (at: ContinuousClock.Instant, text: String)? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let message = messages().first(where: { condition($0.text) }) { return message }
            if arrived.wait(timeout: deadline) == .timedOut { return messages().first { condition($0.text) } }
        }
    }

    func close() {
        closing.withLock { $0 = true }
        done.wait()
        Glibc.close(fd)
        unlink(path)
    }
}
