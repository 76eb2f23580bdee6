import DaemonExample
import Foundation
import Testing

/// `longthread-daemon` as a child process: requests over its socket, its pidfile, its shutdown.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DaemonTests {
    // MARK: - Serving

    @Test("good and bad requests get one reply each, in order, and the daemon keeps serving")
    func requestsAndErrors() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))

        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("PING") == "OK PONG")
        #expect(try client.request("APPEND first record") == "OK 1")
        #expect(try client.request("FROB") == #"ERR unknown command "FROB" (expected APPEND <text>, COUNT or PING)"#)
        #expect(try client.request("") == "ERR empty request (expected APPEND <text>, COUNT or PING)")
        #expect(try client.request("APPEND") == "ERR APPEND needs text: APPEND <text>")
        #expect(try client.request("APPEND a\tb") == "ERR control characters (tabs included) are not allowed in a record")
        #expect(try client.request(String(repeating: "x", count: 5000)) == "ERR request longer than 4096 bytes")
        try client.send("APPEND \u{FF}\n".replacingOccurrences(of: "\u{FF}", with: "é"))
        #expect(try client.readLine() == "OK 2")
        #expect(try client.request("COUNT") == "OK 2")

        // Pipelined requests from a second client: replies come back in request order.
        let second = try DaemonClient(path: daemon.socketPath)
        try second.send("APPEND x\nCOUNT\nNOPE\nAPPEND y\nCOUNT\n")
        let replies = try (0..<5).map { _ in try second.readLine() }
        #expect(replies == ["OK 3", "OK 3", #"ERR unknown command "NOPE" (expected APPEND <text>, COUNT or PING)"#, "OK 4", "OK 4"])
        #expect(try client.request("PING") == "OK PONG", "the first client is still served")

        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
        let journal = try String(contentsOfFile: daemon.journalPath, encoding: .utf8)
        #expect(journal == "1\tfirst record\n2\té\n3\tx\n4\ty\n")
    }

    // MARK: - Pidfile

    @Test("a second instance with the same pidfile refuses to start, naming the running pid")
    func secondInstanceRefuses() throws {
        let directory = try DaemonProcess.makeDirectory()
        let first = try DaemonProcess(directory: directory)
        defer { first.cleanUp() }
        #expect(first.waitForLine(containing: "ready"))
        let pid = try String(contentsOfFile: first.pidfilePath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(pid == String(first.process.processIdentifier))

        let second = try DaemonProcess(directory: directory, arguments: [
            "--socket", directory.appendingPathComponent("other.sock").path,
            "--pidfile", first.pidfilePath, "--journal", first.journalPath,
        ])
        #expect(second.waitForExit() == 1)
        #expect(second.stderr.contains { $0.contains("already running as pid \(pid)") }, "\(second.stderr)")

        let client = try DaemonClient(path: first.socketPath)
        #expect(try client.request("PING") == "OK PONG", "the first instance is undisturbed")
        first.signal(SIGINT)
        #expect(first.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: first.pidfilePath), "the pidfile is removed at exit")
        #expect(!FileManager.default.fileExists(atPath: first.socketPath), "the socket is removed at exit")
    }

    @Test("the process title shows the daemon's state, and nothing else, when started by absolute path")
    func processTitle() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))
        let client = try DaemonClient(path: daemon.socketPath)
        #expect(try client.request("APPEND one") == "OK 1")
        #expect(try client.request("PING") == "OK PONG") // the title is set before this reply's batch
        let cmdline = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(daemon.process.processIdentifier)/cmdline"))
        // What `ps` shows: every non-empty string of the argument area. Started by absolute path
        // (a long argv[0]), libbsd leaves a '.' there unless the daemon puts the terminator back:
        // "title         .".
        let shown = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        #expect(shown == ["longthread-daemon: serving, 1 records"], "\(shown)")
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
    }

    // MARK: - Shutdown

    @Test("SIGTERM mid-stream: every request answered OK is in the journal, nothing else is, exit 0")
    func sigtermDrains() throws {
        let daemon = try DaemonProcess(directory: DaemonProcess.makeDirectory())
        defer { daemon.cleanUp() }
        #expect(daemon.waitForLine(containing: "ready"))

        let clients = 3, perClient = 300
        let connections = try (0..<clients).map { _ in try DaemonClient(path: daemon.socketPath) }
        for (index, connection) in connections.enumerated() {
            try connection.send((0..<perClient).map { "APPEND c\(index) r\($0)\n" }.joined())
        }
        // Once one reply arrived the daemon is busy with the stream: stop it now.
        let firstReply = try connections[0].readLine()
        #expect(firstReply?.hasPrefix("OK ") == true)
        daemon.signal(SIGTERM)

        // Read every reply until the daemon closes each connection.
        var answered: [Int: String] = [:] // sequence number -> text
        for index in 0..<clients {
            var replies: [String] = index == 0 ? [firstReply!] : []
            while let line = try connections[index].readLine() { replies.append(line) }
            #expect(replies.count <= perClient)
            for (request, reply) in replies.enumerated() {
                #expect(reply.hasPrefix("OK "), "\(reply)")
                if let sequence = Int(reply.dropFirst(3)) { answered[sequence] = "c\(index) r\(request)" }
            }
        }
        #expect(daemon.waitForExit() == 0)

        let lines = try String(contentsOfFile: daemon.journalPath, encoding: .utf8).split(separator: "\n")
        var journal: [Int: String] = [:]
        for line in lines {
            let fields = line.split(separator: "\t", maxSplits: 1)
            journal[Int(fields[0])!] = String(fields[1])
        }
        #expect(journal == answered, "every answered request is in the journal, and only those")
        #expect(daemon.stderr.contains { $0.contains("stopped: every accepted request answered; \(answered.count) records") })
    }
}
