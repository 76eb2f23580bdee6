import CBenchSupport
import Foundation
import Synchronization
import Testing

@testable import LongThreadBench

/// The lifecycle figure times create + task + stop: a contender whose `stop` returns while its
/// thread still runs its exit work looks faster than it is, and hands that work to whichever
/// contender runs next (on a busy host, the CPU it needs).
@Suite("A contender's stop")
struct ThreadEndTests {
    /// Contenders that own a thread (a serial `DispatchQueue` borrows pool threads).
    static let owningAThread: [any Contender.Type] = [
        LongThreadContender.self, FoundationThreadPeer.self, CFSource0Peer.self, NIOPeer.self,
        CondvarPeer.self, FutexFloor.self,
    ]

    @Test("returns after the contender's thread has ended", arguments: 0..<owningAThread.count)
    func stopReturnsAfterTheThreadEnded(index: Int) throws {
        let type = Self.owningAThread[index]
        var stillRunning: [String] = []
        for _ in 0..<20 {
            let tid = Mutex<pid_t>(0)
            do {
                let worker = try type.init()
                try worker.runOnWorker { tid.withLock { $0 = bench_gettid() } }
                try worker.stop(.drain)
            }
            let id = tid.withLock { $0 }
            if let state = Self.state(ofThread: id), state != "Z", state != "X" {
                stillRunning.append("\(id): \(state)")
            }
        }
        #expect(stillRunning.isEmpty, "\(type.name): threads still running after stop: \(stillRunning)")
    }

    /// The scheduler state letter of a thread of this process (R, S, D, Z, X...), nil once it is gone.
    static func state(ofThread tid: pid_t) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return nil }
        // "tid (comm) S ...": the state follows the name, which may hold spaces and parentheses.
        return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
    }
}
