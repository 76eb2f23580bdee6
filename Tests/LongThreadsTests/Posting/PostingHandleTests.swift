import Foundation
import LongThreads
import Testing

/// The handles of scheduled work answer alike, a repeating timer takes a first delay, and a work
/// group says what it holds: what porting NIO's, Chromium's and Android's tests asked for.
@Suite("Posting handles: one answer to cancel, a first delay, a group's members", .timeLimit(.minutes(1)))
struct PostingHandleTests {
    @Test("perform(after:) and perform(at:) answer cancel() alike: true once, when the work will not run; false once it ran (NIO's Scheduled.cancel)")
    func cancelAnswersAlike() throws {
        let thread = try LongThread(name: "lt-cancel-answers")
        defer { thread.stop() }
        let timer = try thread.perform(after: .seconds(3600)) {}
        let item = try thread.perform(at: .now + .seconds(3600)) {}
        #expect(timer.cancel(), "the delayed work will not run")
        #expect(!timer.cancel(), "already cancelled")
        #expect(item.cancel(), "the deadline work will not run")
        #expect(!item.cancel(), "already cancelled")

        let ran = Latch(count: 2)
        let fired = try thread.perform(after: .zero) { ran.countDown() }
        let due = try thread.perform(at: .now) { ran.countDown() }
        #expect(ran.wait())
        try thread.sync {}
        #expect(!fired.cancel(), "it ran: nothing to take back")
        #expect(!due.cancel(), "it ran: nothing to take back")

        let repeating = try thread.schedule(every: .seconds(3600)) { _ in }
        #expect(repeating.cancel(), "its callback starts no more")
        #expect(!repeating.cancel())
        #expect(thread.statistics.pendingTimers == 0)
    }

    @Test("schedule(every:initialDelay:) fires first after the initial delay, not after one interval (NIO's scheduleRepeatedTask(initialDelay:delay:))")
    func initialDelay() throws {
        let thread = try LongThread(name: "lt-initial-delay")
        defer { thread.stop() }
        let fired = Latch()
        let timer = try thread.schedule(every: .seconds(3600), initialDelay: .zero) { _ in fired.countDown() }
        defer { timer.cancel() }
        #expect(fired.wait(), "an hourly timer with no initial delay fires at once")
        #expect(!timer.isCancelled, "and repeats")
    }

    @Test("schedule(every:) with an interval of zero or below throws invalidInterval, nothing scheduled")
    func invalidIntervalNamed() throws {
        let thread = try LongThread(name: "lt-invalid-interval")
        defer { thread.stop() }
        #expect(throws: LongThreadError.invalidInterval(.zero)) { try thread.schedule(every: .zero) { _ in } }
        #expect(throws: LongThreadError.invalidInterval(.seconds(-1))) {
            try thread.schedule(every: .seconds(-1), initialDelay: .zero) { _ in }
        }
        #expect(thread.statistics.pendingTimers == 0)
    }

    @Test("a work group says whether it holds an item (Android's hasCallbacks, hasMessages): waiting yes; ran, cancelled or ungrouped no")
    func groupMembership() throws {
        let thread = try LongThread(name: "lt-group-holds")
        defer { thread.stop() }
        let group = LongThread.WorkGroup()
        #expect(group.isEmpty)
        let submitted = try thread.submit(group: group) {}
        let delayed = try thread.perform(after: .seconds(3600), group: group) {}
        let deadline = try thread.perform(at: .now + .seconds(3600), group: group) {}
        let ungrouped = try thread.perform(after: .seconds(3600)) {}
        defer { ungrouped.cancel() }
        #expect(group.contains(delayed))
        #expect(group.contains(deadline))
        #expect(!group.contains(ungrouped), "posted without the group")
        #expect(!group.isEmpty)

        try thread.sync {} // the submitted item ran before this
        #expect(!group.contains(submitted), "ran: it left the group")
        #expect(delayed.cancel())
        #expect(!group.contains(delayed), "cancelled: it left the group")
        #expect(group.contains(deadline))
        #expect(group.cancelAll() == 1)
        #expect(!group.contains(deadline))
        #expect(group.isEmpty)
        #expect(group.count == 0)
    }
}
